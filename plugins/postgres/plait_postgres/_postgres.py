"""PostgreSQL checkpointer and store (psycopg 3).

A step is one transaction whose first statement is the compare-and-set on the thread's
step number (``UPDATE ... WHERE id = %s AND step = %s``, or an ``INSERT ... ON CONFLICT DO
NOTHING`` for a new thread). The row lock it takes makes a second writer wait for the
first to commit, then find the step moved and fail with ``ThreadBusyError``: two runs on
one thread never interleave, whichever machines they run on.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeAlias, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

from plait.checkpoint import (
    Checkpoint,
    RunLease,
    StepDelta,
    checkpoint_from_rows,
    dump_event,
    dump_message,
    dump_value,
    event_conflict,
    load_message,
    load_value,
)
from plait.errors import MalformedURLError, SchemaVersionError, StoreError, ThreadBusyError
from plait.history import (
    KEEP_STEPS,
    HistoryError,
    StepInfo,
    check_keep_steps,
    keep_steps_option,
    undo_record,
)
from plait.messages import AnyMessage
from plait.options import integer
from plait.persistence.steps import Query, StepSQL, history_ddl
from plait.store import StoreItem

__all__ = ["SCHEMA_VERSION", "PostgresCheckpointer", "PostgresStore", "redact_url"]

SCHEMA_VERSION = 1
"""The schema this plugin writes; a database with another number is refused."""

_Connection: TypeAlias = "psycopg.Connection[tuple[Any, ...]]"
_T = TypeVar("_T")
_SCHEMES = ("postgresql", "postgres")
_SCHEMA_LOCK = 0x706C616974  # "plait": serializes table creation across processes

_CHECKPOINTER_DDL = (
    """CREATE TABLE plait_threads (
        id text PRIMARY KEY,
        step bigint NOT NULL,
        next_seq bigint NOT NULL,
        created timestamptz NOT NULL DEFAULT now(),
        ord bigint GENERATED ALWAYS AS IDENTITY
    )""",
    "CREATE INDEX plait_threads_by_ord ON plait_threads (ord)",
    """CREATE TABLE plait_messages (
        thread text NOT NULL,
        id text NOT NULL,
        seq bigint NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (thread, id)
    )""",
    "CREATE INDEX plait_messages_by_seq ON plait_messages (thread, seq)",
    """CREATE TABLE plait_values (
        thread text NOT NULL,
        key text NOT NULL,
        data text NOT NULL,
        ord bigint GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (thread, key)
    )""",
)

# The run log: its own component (and schema version), so a database made before it
# existed gains the table on first use.
_EVENTS_DDL = (
    """CREATE TABLE plait_events (
        thread text NOT NULL,
        seq bigint NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (thread, seq)
    )""",
)
# Run leases (plait.checkpoint.RunLeases): its own component, like the run log.
_LEASES_DDL = (
    """CREATE TABLE plait_run_leases (
        thread text PRIMARY KEY,
        run_id text NOT NULL,
        expires double precision NOT NULL
    )""",
)
_EVENTS_LOCK = 0x706C6576  # "plev": with the thread's hash, serializes appends to one log

_STEPS = StepSQL(postgres=True, value_order="ord")
_MESSAGES = "SELECT data FROM plait_messages WHERE thread = %s ORDER BY seq"
_VALUES = "SELECT key, data FROM plait_values WHERE thread = %s ORDER BY ord"

_STORE_DDL = (
    """CREATE TABLE plait_store (
        ns bytea NOT NULL,
        key text COLLATE "C" NOT NULL,
        value text NOT NULL,
        PRIMARY KEY (ns, key)
    )""",
)


def redact_url(url: str) -> str:
    """``url`` with its password (in the user info or a ``password=`` parameter) as ``***``;
    a libpq ``key=value`` connection string has its ``password=`` redacted too."""
    if "://" not in url:
        return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url, flags=re.I)
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            if ":" in userinfo:
                netloc = f"{userinfo.split(':', 1)[0]}:***@{hostport}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode(
                [(k, "***" if k.lower() == "password" else v) for k, v in pairs],
                safe="*",
                quote_via=quote,
            )
        return _unsplit(parts.scheme, netloc, parts.path, query, parts.fragment)
    except ValueError:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def _unsplit(scheme: str, netloc: str, path: str, query: str, fragment: str = "") -> str:
    """``urlunsplit`` keeping the ``//`` of a URL with no host (``postgresql:///db``, libpq's
    local socket form), which ``urlunsplit`` drops for schemes it does not know."""
    url = urlunsplit((scheme, netloc, path, query, fragment))
    return url if netloc else url.replace(f"{scheme}:", f"{scheme}://", 1)


_FORMS = " (expected postgresql://user:password@host:port/db, optionally ?schema=NAME)"


def parse_postgres_url(url: str) -> tuple[str, str]:
    """``(conninfo, schema)`` for a ``postgresql://`` URL. The URL may carry
    ``?schema=name`` (plait's own parameter: the PostgreSQL schema holding the tables,
    default ``public``); every other parameter is libpq's."""
    shown = redact_url(url)
    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() not in _SCHEMES:
        raise MalformedURLError(
            f"malformed PostgreSQL URL {shown!r}: expected postgresql://user:password@host:port/db"
        )
    try:
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if "," not in parts.netloc:  # libpq's multi-host form has several ports
            _ = parts.port  # a non-numeric port raises ValueError
    except ValueError as exc:
        raise MalformedURLError(f"malformed PostgreSQL URL {shown!r}: {exc}{_FORMS}") from None
    schemas = [v for k, v in pairs if k == "schema"]
    rest = [(k, v) for k, v in pairs if k != "schema"]
    schema = schemas[-1] if schemas else "public"
    if not schema:
        raise MalformedURLError(f"malformed PostgreSQL URL {shown!r}: schema= is empty{_FORMS}")
    conninfo = _unsplit(parts.scheme, parts.netloc, parts.path, urlencode(rest, quote_via=quote))
    try:
        conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        raise MalformedURLError(f"malformed PostgreSQL URL {shown!r}: {exc}{_FORMS}") from None
    return conninfo, schema


class _Database:
    """A small pool of autocommit connections to one database, each with its
    ``search_path`` set to the plait schema; a connection serves one thread at a time."""

    def __init__(
        self, conninfo: str, *, schema: str, connect_timeout: float, max_idle: int = 8
    ) -> None:
        try:
            params = conninfo_to_dict(conninfo)
        except psycopg.Error as exc:
            raise StoreError(
                f"malformed PostgreSQL connection string {redact_url(conninfo)!r}: {exc}"
            ) from None
        self.url = redact_url(conninfo)
        self.schema = schema
        self._conninfo = conninfo
        self._password = str(params.get("password") or "")
        self._kwargs: dict[str, Any] = {}
        if "connect_timeout" not in params:
            self._kwargs["connect_timeout"] = max(1, round(connect_timeout))
        if "application_name" not in params:
            self._kwargs["application_name"] = "plait"
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._max_idle = max_idle
        self._closed = False
        self._pid = os.getpid()
        self._inherited: list[_Connection] = []
        self.own: weakref.WeakSet[_Connection] = weakref.WeakSet()
        """The connections made here (their ``search_path`` is the plait schema)."""

    def same_database(self, url: str) -> bool:
        """Whether ``url`` names this database as this user (host, port, database and
        user as written, defaults filled in; a SQLAlchemy ``+driver`` is ignored)."""
        scheme, sep, rest = url.partition("://")
        try:
            theirs = conninfo_to_dict(f"{scheme.partition('+')[0]}{sep}{rest}")
            ours = conninfo_to_dict(self._conninfo)
        except psycopg.Error:
            return False
        return _server_key(theirs) == _server_key(ours)

    def _scrub(self, exc: BaseException) -> str:
        text = str(exc).strip()
        return text.replace(self._password, "***") if self._password else text

    def _connect(self) -> _Connection:
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True, **self._kwargs)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL at {self.url}: {self._scrub(exc)}"
            ) from None
        try:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"PostgreSQL at {self.url}: {self._scrub(exc)}") from None
        self.own.add(conn)
        return conn

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Turn driver errors into ``StoreError``s naming the (redacted) URL."""
        try:
            yield
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL at {self.url}: {self._scrub(exc)}") from exc

    @contextlib.contextmanager
    def callers(self, conn: _Connection) -> Iterator[None]:
        """For statements on ``conn``, a connection in a transaction its caller holds
        (``load_in``, ``save_in``): driver errors as ``StoreError``s, the statements
        pipelined (in the caller's pipeline if it is in one, else in one of their own),
        and this schema set for the transaction on a connection that is not one of ours
        (ours have it set for good)."""
        pipelined = conn.pgconn.pipeline_status != pq.PipelineStatus.OFF
        with self.errors(), contextlib.nullcontext() if pipelined else conn.pipeline():
            if conn not in self.own:
                conn.execute(
                    sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(self.schema))
                )
            yield

    def _acquire(self, *, fresh: bool) -> tuple[_Connection, bool]:
        """A connection and whether it came from the pool (it may have died while idle)."""
        if self._closed:
            raise StoreError(f"PostgreSQL connection to {self.url} is closed")
        if self._pid != os.getpid():
            # Forked: the pooled sockets belong to the parent. Using or even closing them
            # here would break the parent's sessions, so keep them referenced, unused.
            with self._lock:
                self._inherited += self._idle
                self._idle = []
                self._pid = os.getpid()
        if not fresh:
            with self._lock:
                while self._idle:
                    conn = self._idle.pop()
                    if not conn.closed:
                        return conn, True
        return self._connect(), False

    def _release(self, conn: _Connection) -> None:
        """Pool ``conn`` again if it is healthy and idle; otherwise close it."""
        reusable = (
            not self._closed
            and not conn.closed
            and not conn.broken
            and conn.info.transaction_status == TransactionStatus.IDLE
        )
        with self._lock:
            if reusable and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        with contextlib.suppress(psycopg.Error):
            conn.close()

    def fetch(self, query: Any, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement on its own (autocommit) and return its rows. Every such
        statement here is a read or idempotent, so when a pooled connection turns out to
        have died (server restart, idle timeout) it is retried once on a new one."""
        for attempt in (0, 1):
            conn, pooled = self._acquire(fresh=attempt > 0)
            try:
                cursor = conn.execute(query, params)
                rows = cursor.fetchall() if cursor.description is not None else []
            except psycopg.OperationalError as exc:
                self._release(conn)
                if pooled and attempt == 0:
                    continue
                raise StoreError(f"PostgreSQL at {self.url}: {self._scrub(exc)}") from exc
            except psycopg.Error as exc:
                self._release(conn)
                raise StoreError(f"PostgreSQL at {self.url}: {self._scrub(exc)}") from exc
            self._release(conn)
            return rows
        raise AssertionError("unreachable")  # pragma: no cover

    def _begin(self) -> _Connection:
        """A connection inside a fresh transaction. A pooled connection that fails at
        ``BEGIN`` had died while idle; nothing ran on it, so a new one is tried once."""
        for attempt in (0, 1):
            conn, pooled = self._acquire(fresh=attempt > 0)
            try:
                conn.execute("BEGIN")
            except psycopg.Error as exc:
                self._release(conn)
                if pooled and attempt == 0 and isinstance(exc, psycopg.OperationalError):
                    continue
                raise StoreError(f"PostgreSQL at {self.url}: {self._scrub(exc)}") from exc
            return conn
        raise AssertionError("unreachable")  # pragma: no cover

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Connection]:
        """One transaction, committed when the block ends, rolled back if it raises."""
        conn = self._begin()
        try:
            with self.errors():
                try:
                    yield conn
                except BaseException:
                    if not conn.broken:
                        with contextlib.suppress(psycopg.Error):
                            conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        finally:
            self._release(conn)

    def ensure_schema(self, component: str, ddl: Sequence[str]) -> None:
        """Create ``component``'s tables on first use; refuse a schema we do not know."""
        key = f"{component}.schema_version"
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            exists = conn.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
            ).fetchone()
            if exists is None:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS plait_meta (key text PRIMARY KEY, value text NOT NULL)"
            )
            row = conn.execute("SELECT value FROM plait_meta WHERE key = %s", (key,)).fetchone()
            if row is None:
                for statement in ddl:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO plait_meta (key, value) VALUES (%s, %s)",
                    (key, str(SCHEMA_VERSION)),
                )
                return
            if str(row[0]) != str(SCHEMA_VERSION):
                raise SchemaVersionError(
                    f"PostgreSQL at {self.url} (schema {self.schema!r}) holds {component} "
                    f"schema version {row[0]!r}; this plait-postgres knows version "
                    f"{SCHEMA_VERSION} only (upgrade plait-postgres to open it)"
                )

    def close(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(psycopg.Error):
                conn.close()


def _server_key(params: dict[str, Any]) -> tuple[str, str, str, str]:
    user = str(params.get("user") or "")
    return (
        str(params.get("host") or ""),
        str(params.get("port") or "5432"),
        str(params.get("dbname") or user),
        user,
    )


def _query(conn: _Connection) -> Query:
    """``plait.persistence.steps``' way to run a statement on ``conn``. In a pipeline a
    statement's result may not have arrived when it returns, so one that yields rows
    waits for them, and a write does not wait at all (its error, if any, is raised at
    the pipeline's next sync)."""

    def run(text: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = conn.execute(text, params)
        if conn.pgconn.pipeline_status != pq.PipelineStatus.OFF:
            return cursor.fetchall() if _yields_rows(text) else []
        return cursor.fetchall() if cursor.description is not None else []

    return run


def _yields_rows(text: str) -> bool:
    return text.lstrip()[:6].upper() == "SELECT" or "RETURNING" in text.upper()


def _message_rows(upserts: Sequence[AnyMessage]) -> list[tuple[str, str]]:
    """``(id, json)`` per distinct id, in first-seen order with the last version's data."""
    rows: dict[str, str] = {}
    for message in upserts:
        rows[message.id] = dump_message(message)
    return list(rows.items())


class PostgresCheckpointer:
    """Threads in PostgreSQL, shared safely by any number of processes and machines.

    :param conninfo: a libpq connection string or ``postgresql://`` URL.
    :param schema: the PostgreSQL schema holding plait's tables (created if missing).
    :param connect_timeout: seconds to wait for the server when connecting.
    :param keep_steps: the steps of each thread kept in its history (default
        ``plait.history.KEEP_STEPS``, 1000); ``None`` keeps them all.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "public",
        connect_timeout: float = 10.0,
        keep_steps: int | None = KEEP_STEPS,
    ) -> None:
        self.keep_steps = check_keep_steps(keep_steps, "PostgresCheckpointer")
        self._db = _Database(conninfo, schema=schema, connect_timeout=connect_timeout)
        self._db.ensure_schema("checkpointer", _CHECKPOINTER_DDL)
        self._db.ensure_schema("events", _EVENTS_DDL)
        self._db.ensure_schema("leases", _LEASES_DDL)
        self._db.ensure_schema("history", history_ddl(postgres=True))

    @classmethod
    def from_url(cls, url: str) -> PostgresCheckpointer:
        """The checkpointer for ``postgresql://user:password@host:port/db[?schema=name]``,
        optionally with ``keep_steps=N`` (or ``all``) (the ``plait.checkpointers`` entry
        point)."""
        keep: int | None = KEEP_STEPS
        parts = urlsplit(url)
        if "keep_steps=" in parts.query:
            pairs = parse_qsl(parts.query, keep_blank_values=True)
            for name, value in pairs:
                if name == "keep_steps":
                    keep = keep_steps_option(value, redact_url(url))
            rest = urlencode([(k, v) for k, v in pairs if k != "keep_steps"], quote_via=quote)
            url = _unsplit(parts.scheme, parts.netloc, parts.path, rest, parts.fragment)
        conninfo, schema = parse_postgres_url(url)
        return cls(conninfo, schema=schema, keep_steps=keep)

    @property
    def url(self) -> str:
        """The connection URL with its password redacted."""
        return self._db.url

    def load(self, thread_id: str) -> Checkpoint | None:
        with self._db.transaction() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            row = conn.execute(
                "SELECT step FROM plait_threads WHERE id = %s", (thread_id,)
            ).fetchone()
            if row is None:
                return None
            fork = _STEPS.fork_of(_query(conn), thread_id)
            if fork is not None and not fork[2]:  # a fork not written to yet: its parent's
                rows = _STEPS.rows_at(_query(conn), fork[0], fork[1])
                return None if rows is None else self._checkpoint(thread_id, fork[1], rows)
            message_rows = conn.execute(_MESSAGES, (thread_id,)).fetchall()
            value_rows = conn.execute(_VALUES, (thread_id,)).fetchall()
        return self._loaded(thread_id, int(row[0]), message_rows, value_rows)

    def load_in(self, conn: _Connection, thread_id: str) -> Checkpoint | None:
        """``load`` on ``conn``, a psycopg connection to this checkpointer's database in a
        transaction the caller holds (start it ``REPEATABLE READ`` for one snapshot), so
        that the caller's own reads of that moment ride with it (a durable-execution
        engine's look for what an earlier attempt recorded). Pipelined: the thread's
        reads are all sent before any is waited for, so they cost one round trip."""
        with self._db.callers(conn):
            step_read = conn.execute("SELECT step FROM plait_threads WHERE id = %s", (thread_id,))
            fork_read = conn.execute(*_STEPS.fork_query(thread_id))
            message_read = conn.execute(_MESSAGES, (thread_id,))
            value_read = conn.execute(_VALUES, (thread_id,))
            row = step_read.fetchone()
            if row is None:
                return None
            fork = _STEPS.fork_from(fork_read.fetchall())
            if fork is not None and not fork[2]:  # a fork not written to yet: its parent's
                rows = _STEPS.rows_at(_query(conn), fork[0], fork[1])
                return None if rows is None else self._checkpoint(thread_id, fork[1], rows)
            message_rows = message_read.fetchall()
            value_rows = value_read.fetchall()
        return self._loaded(thread_id, int(row[0]), message_rows, value_rows)

    def _loaded(
        self,
        thread_id: str,
        step: int,
        message_rows: Sequence[tuple[Any, ...]],
        value_rows: Sequence[tuple[Any, ...]],
    ) -> Checkpoint:
        try:
            messages = [load_message(data) for (data,) in message_rows]
            values = {str(key): load_value(data) for key, data in value_rows}
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(
                f"PostgreSQL at {self.url}: thread {thread_id!r} holds a record this "
                f"plait cannot read: {exc}"
            ) from exc
        return Checkpoint(step, messages, values)

    def step(self, thread_id: str) -> int:
        rows = self._db.fetch("SELECT step FROM plait_threads WHERE id = %s", (thread_id,))
        return int(rows[0][0]) if rows else 0

    def _busy(self, conn: _Connection, thread_id: str, delta: StepDelta) -> ThreadBusyError:
        row = conn.execute("SELECT step FROM plait_threads WHERE id = %s", (thread_id,)).fetchone()
        stored = 0 if row is None else int(row[0])
        return ThreadBusyError(
            f"thread {thread_id!r} is at step {stored}, not {delta.step - 1}: "
            "another run wrote to it since this one loaded it"
        )

    def save(self, thread_id: str, delta: StepDelta) -> None:
        with self._db.transaction() as conn:
            self._write(conn, thread_id, delta)

    def save_in(self, conn: _Connection, thread_id: str, delta: StepDelta) -> None:
        """``save`` on ``conn``: a psycopg connection to this checkpointer's database
        (``same_database``) that the caller holds in a transaction and commits or rolls
        back itself, so that its own writes in that transaction (a durable-execution
        engine's record of the step that produced ``delta``) commit with the step or not
        at all, in one commit instead of two. Its statements are pipelined: the schema
        is set (on a connection not of this checkpointer's ``transaction``), and the
        reads the undo record needs are sent, in the round trip of the compare-and-set.
        On a ``conn`` in a pipeline already, the writes are left in it, sent with the
        caller's next sync (which raises their error, if any)."""
        with self._db.callers(conn):
            self._write(conn, thread_id, delta)

    def transaction(self, block: Callable[[_Connection], _T], *, flush: bool = True) -> _T:
        """Run ``block`` in a transaction on one of this checkpointer's own connections,
        its statements pipelined (BEGIN goes with the first of them), and commit in the
        round trip of its last statements; roll back if it raises: for a caller that
        writes a ``save_in`` and rows of its own (a durable-execution engine's record of
        the step) in one commit, without a connection of its own. A pooled connection
        found dead inside ``block`` (before the commit was sent: nothing of it can have
        committed) is replaced and ``block`` run again, once, from the start. Driver
        errors are ``StoreError``s.

        ``flush=False``: the commit does not wait for PostgreSQL to flush it to disk
        (``synchronous_commit`` off for this transaction), for a write the caller can
        make again should the server crash before the next commit that waits for the
        flush (which flushes this one too, being later in the log)."""
        for attempt in (0, 1):
            conn, pooled = self._db._acquire(fresh=attempt > 0)
            committing = False
            try:
                with self._db.errors():
                    try:
                        with conn.pipeline():
                            conn.execute("BEGIN")
                            if not flush:
                                conn.execute("SET LOCAL synchronous_commit TO OFF")
                            result = block(conn)
                            committing = True
                            conn.execute("COMMIT")
                        return result
                    except BaseException:
                        if not conn.broken:
                            with contextlib.suppress(psycopg.Error):
                                conn.execute("ROLLBACK")
                        raise
            except StoreError:
                if pooled and attempt == 0 and conn.broken and not committing:
                    continue
                raise
            finally:
                self._db._release(conn)
        raise AssertionError("unreachable")  # pragma: no cover

    def same_database(self, url: str) -> bool:
        """Whether ``url`` (a libpq or SQLAlchemy ``postgresql[+driver]://`` URL) names
        this checkpointer's database as the same user: a transaction there can hold a
        ``save_in``."""
        return self._db.same_database(url)

    def _write(self, conn: _Connection, thread_id: str, delta: StepDelta) -> None:
        rows = _message_rows(delta.upserts)
        values = [(thread_id, key, dump_value(value, key)) for key, value in delta.values.items()]
        # The compare-and-set comes first: its row lock orders concurrent writers. The
        # reads the undo record needs are sent right behind it, before its answer is
        # read: in a pipeline all of them cost one round trip.
        if delta.step == 1:
            cas = conn.execute(
                "INSERT INTO plait_threads (id, step, next_seq) VALUES (%s, 1, %s) "
                "ON CONFLICT (id) DO NOTHING RETURNING 0",
                (thread_id, len(rows)),
            )
        else:
            cas = conn.execute(
                "UPDATE plait_threads SET step = %s, next_seq = next_seq + %s "
                "WHERE id = %s AND step = %s RETURNING next_seq - %s",
                (delta.step, len(rows), thread_id, delta.step - 1, len(rows)),
            )
        fork_read = conn.execute(*_STEPS.fork_query(thread_id))
        touched_reads = [
            None if statement is None else conn.execute(*statement)
            for statement in _STEPS.touched_queries(thread_id, delta)
        ]
        won = cas.fetchone()
        if won is None:
            raise self._busy(conn, thread_id, delta)
        base = int(won[0])
        q = _query(conn)
        fork = _STEPS.fork_from(fork_read.fetchall())
        if fork is not None and not fork[2]:
            base = _STEPS.copy_fork(q, thread_id, fork[0], fork[1], self._where)
            conn.execute(
                "UPDATE plait_threads SET next_seq = %s WHERE id = %s",
                (base + len(rows), thread_id),
            )
            touched = _STEPS.touched(q, thread_id, delta)  # the fork's own rows, just copied
        else:
            touched = _STEPS.touched_from(
                *[[] if read is None else read.fetchall() for read in touched_reads]
            )
        undo = json.dumps(undo_record(delta, *touched), ensure_ascii=False, separators=(",", ":"))
        if delta.reset:
            conn.execute("DELETE FROM plait_messages WHERE thread = %s", (thread_id,))
        elif delta.removed:
            conn.execute(
                "DELETE FROM plait_messages WHERE thread = %s AND id = ANY(%s)",
                (thread_id, list(delta.removed)),
            )
        with conn.cursor() as cur:
            if rows:
                cur.executemany(
                    "INSERT INTO plait_messages (thread, id, seq, data) "
                    "VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (thread, id) DO UPDATE SET data = EXCLUDED.data",
                    [
                        (thread_id, message_id, base + index, data)
                        for index, (message_id, data) in enumerate(rows)
                    ],
                )
            if values:
                cur.executemany(
                    "INSERT INTO plait_values (thread, key, data) VALUES (%s, %s, %s) "
                    "ON CONFLICT (thread, key) DO UPDATE SET data = EXCLUDED.data",
                    values,
                )
        _STEPS.record(q, thread_id, delta, undo, time.time(), self.keep_steps)

    def list_threads(self) -> list[str]:
        rows = self._db.fetch("SELECT id FROM plait_threads ORDER BY ord")
        return [str(row[0]) for row in rows]

    def delete_thread(self, thread_id: str) -> None:
        with self._db.transaction() as conn:
            # The thread row first: a concurrent save locks it first too (no deadlock).
            conn.execute("SELECT 1 FROM plait_threads WHERE id = %s FOR UPDATE", (thread_id,))
            _STEPS.forget(_query(conn), thread_id, self._where)
            conn.execute("DELETE FROM plait_threads WHERE id = %s", (thread_id,))
            conn.execute("DELETE FROM plait_messages WHERE thread = %s", (thread_id,))
            conn.execute("DELETE FROM plait_values WHERE thread = %s", (thread_id,))
            conn.execute("DELETE FROM plait_events WHERE thread = %s", (thread_id,))
            conn.execute("DELETE FROM plait_run_leases WHERE thread = %s", (thread_id,))

    # -- history (plait.checkpoint.History) ------------------------------------------------

    @property
    def _where(self) -> str:
        return f"PostgreSQL at {self.url}"

    def _checkpoint(self, thread_id: str, step: int, rows: Any) -> Checkpoint:
        try:
            return checkpoint_from_rows(step, rows)
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(
                f"PostgreSQL at {self.url}: thread {thread_id!r} holds a record this "
                f"plait cannot read: {exc}"
            ) from exc

    def history(self, thread_id: str) -> list[StepInfo]:
        with self._db.transaction() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return _STEPS.infos(_query(conn), thread_id)

    def load_step(self, thread_id: str, step: int) -> Checkpoint:
        with self._db.transaction() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            q = _query(conn)
            rows = _STEPS.rows_at(q, thread_id, step)
            if rows is None:
                raise _STEPS.missing(q, thread_id, step)
        return self._checkpoint(thread_id, step, rows)

    def fork(self, thread_id: str, step: int, new_thread_id: str) -> None:
        with self._db.transaction() as conn:
            # The row lock of the thread whose records hold the step: its saves (which
            # take that lock first) cannot forget the step while the fork points at it.
            owner = _STEPS.owner(_query(conn), thread_id, step)
            conn.execute("SELECT 1 FROM plait_threads WHERE id = %s FOR UPDATE", (owner,))
            try:
                _STEPS.fork(_query(conn), thread_id, step, new_thread_id, time.time())
            except psycopg.errors.UniqueViolation:  # made by another client meanwhile
                raise HistoryError(
                    f"cannot fork onto thread {new_thread_id!r}: it exists"
                ) from None

    def prune(self, *, before: float) -> int:
        with self._db.transaction() as conn:
            return _STEPS.prune(_query(conn), before)

    # -- the run log (plait.checkpoint.EventLog) -------------------------------------------

    def append_events(self, thread_id: str, events: Sequence[Any], *, after: int) -> int:
        rows = [dump_event(event) for event in events]
        with self._db.transaction() as conn:
            # Writers to one log queue on this lock, so the check below cannot go stale.
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_EVENTS_LOCK, thread_id)
            )
            row = conn.execute(
                "SELECT max(seq) FROM plait_events WHERE thread = %s", (thread_id,)
            ).fetchone()
            stored = int(row[0] or 0) if row is not None else 0
            if stored != after:
                raise event_conflict(thread_id, stored, after)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO plait_events (thread, seq, data) VALUES (%s, %s, %s)",
                    [(thread_id, after + index + 1, data) for index, data in enumerate(rows)],
                )
        return after + len(rows)

    def read_events(
        self, thread_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, Any]]:
        rows = self._db.fetch(
            "SELECT seq, data FROM plait_events WHERE thread = %s AND seq > %s "
            "ORDER BY seq LIMIT %s",
            (thread_id, after, None if limit is None else max(limit, 0)),
        )
        return [(int(seq), load_value(data)) for seq, data in rows]

    def last_event(self, thread_id: str) -> int:
        rows = self._db.fetch("SELECT max(seq) FROM plait_events WHERE thread = %s", (thread_id,))
        return int(rows[0][0] or 0) if rows else 0

    def forget_events(self, thread_id: str, *, after: int, through: int) -> int:
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM plait_events WHERE thread = %s AND seq > %s AND seq <= %s",
                (thread_id, after, through),
            )
            return int(cursor.rowcount)

    # -- run leases (plait.checkpoint.RunLeases) -------------------------------------------

    def renew_lease(self, thread_id: str, run_id: str, seconds: float) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO plait_run_leases (thread, run_id, expires) VALUES (%s, %s, %s) "
                "ON CONFLICT (thread) DO UPDATE SET run_id = excluded.run_id, "
                "expires = excluded.expires",
                (thread_id, run_id, time.time() + seconds),
            )

    def run_lease(self, thread_id: str) -> RunLease | None:
        rows = self._db.fetch(
            "SELECT run_id, expires FROM plait_run_leases WHERE thread = %s", (thread_id,)
        )
        return RunLease(str(rows[0][0]), float(rows[0][1])) if rows else None

    def end_lease(self, thread_id: str, run_id: str) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM plait_run_leases WHERE thread = %s AND run_id = %s",
                (thread_id, run_id),
            )

    def close(self) -> None:
        """Close every pooled connection."""
        self._db.close()

    def __enter__(self) -> PostgresCheckpointer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresCheckpointer({self.url!r}, schema={self._db.schema!r})"


def encode_namespace(namespace: Sequence[str]) -> bytes:
    """An order-preserving byte key for a namespace tuple (bytea compares bytewise, so
    keys sort as Python sorts the tuples, and a prefix search is one range scan): each
    part's UTF-8 with 0x00/0x01 escaped as 0x01 0x01 / 0x01 0x02, then a 0x00 terminator.
    The same encoding as plait's SQLite store."""
    out = bytearray()
    for part in namespace:
        if not isinstance(part, str):
            raise TypeError(f"a namespace is a tuple of str, got part {part!r}")
        out += part.encode("utf-8").replace(b"\x01", b"\x01\x02").replace(b"\x00", b"\x01\x01")
        out += b"\x00"
    return bytes(out)


def decode_namespace(key: bytes) -> tuple[str, ...]:
    parts = bytes(key).split(b"\x00")[:-1]
    return tuple(
        p.replace(b"\x01\x01", b"\x00").replace(b"\x01\x02", b"\x01").decode("utf-8") for p in parts
    )


def _check_item(namespace: Sequence[str], key: str) -> bytes:
    if isinstance(namespace, str):
        raise TypeError(f"a namespace is a tuple of str, not the str {namespace!r}")
    if not isinstance(key, str):
        raise TypeError(f"a store key is a str, got {key!r}")
    return encode_namespace(namespace)


class PostgresStore:
    """A namespaced key-value store in PostgreSQL, shared by every process.

    :param conninfo: a libpq connection string or ``postgresql://`` URL.
    :param schema: the PostgreSQL schema holding plait's tables (created if missing).
    :param connect_timeout: seconds to wait for the server when connecting.
    """

    def __init__(
        self, conninfo: str, *, schema: str = "public", connect_timeout: float = 10.0
    ) -> None:
        self._db = _Database(conninfo, schema=schema, connect_timeout=connect_timeout)
        self._db.ensure_schema("store", _STORE_DDL)

    @classmethod
    def from_url(cls, url: str) -> PostgresStore:
        """The store for a ``postgresql://`` URL (the ``plait.stores`` entry point)."""
        conninfo, schema = parse_postgres_url(url)
        return cls(conninfo, schema=schema)

    @property
    def url(self) -> str:
        """The connection URL with its password redacted."""
        return self._db.url

    def put(self, namespace: tuple[str, ...], key: str, value: Any) -> None:
        ns = _check_item(namespace, key)
        data = dump_value(value)
        self._db.fetch(
            "INSERT INTO plait_store (ns, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value",
            (ns, key, data),
        )

    def get(self, namespace: tuple[str, ...], key: str) -> StoreItem | None:
        ns = _check_item(namespace, key)
        rows = self._db.fetch("SELECT value FROM plait_store WHERE ns = %s AND key = %s", (ns, key))
        if not rows:
            return None
        return StoreItem(tuple(namespace), key, load_value(rows[0][0]))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        ns = _check_item(namespace, key)
        self._db.fetch("DELETE FROM plait_store WHERE ns = %s AND key = %s", (ns, key))

    def search(self, prefix: tuple[str, ...], *, limit: int = 10) -> list[StoreItem]:
        if isinstance(prefix, str):
            raise TypeError(f"a namespace prefix is a tuple of str, not the str {prefix!r}")
        problem = integer(minimum=0).problem(limit)
        if problem is not None:
            raise ValueError(f"search limit: {problem}")
        low = encode_namespace(prefix)
        if low:
            rows = self._db.fetch(
                "SELECT ns, key, value FROM plait_store WHERE ns >= %s AND ns < %s "
                "ORDER BY ns, key LIMIT %s",
                (low, low[:-1] + b"\x01", limit),
            )
        else:
            rows = self._db.fetch(
                "SELECT ns, key, value FROM plait_store ORDER BY ns, key LIMIT %s", (limit,)
            )
        return [
            StoreItem(decode_namespace(ns), str(key), load_value(value)) for ns, key, value in rows
        ]

    def close(self) -> None:
        """Close every pooled connection."""
        self._db.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r}, schema={self._db.schema!r})"
