"""SQLite checkpointer and store: one file, WAL, one ``BEGIN IMMEDIATE`` transaction per step.

A step writes only what it changed: one row per added or replaced message (a replaced
message keeps its sequence number, hence its position), one delete per removed message,
one row per written state key and the thread's step record. Loading never runs during a
step; the agent's per-process cache checks ``step()`` (one indexed read) instead.

The tables are prefixed ``plait_`` so the checkpointer and the store can share one file
(and that file may hold an application's own tables too).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, Literal
from urllib.parse import unquote

from plait._convert import expected, integer
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
    Rows,
    StepInfo,
    check_keep_steps,
    keep_steps_option,
    missing_step,
    undo_record,
)
from plait.messages import AnyMessage
from plait.persistence.steps import Query, StepSQL, history_ddl
from plait.store import StoreItem

__all__ = ["SCHEMA_VERSION", "SQLiteCheckpointer", "SQLiteStore", "parse_sqlite_url"]

SCHEMA_VERSION = 1
"""The schema this module writes; a database with a higher number is refused."""

_MEMORY = ":memory:"

_META_DDL = "CREATE TABLE IF NOT EXISTS plait_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

_CHECKPOINTER_DDL = (
    """CREATE TABLE plait_threads (
        id TEXT PRIMARY KEY NOT NULL,
        step INTEGER NOT NULL,
        next_seq INTEGER NOT NULL,
        created REAL NOT NULL
    )""",
    """CREATE TABLE plait_messages (
        thread TEXT NOT NULL,
        id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (thread, id)
    )""",
    "CREATE INDEX plait_messages_by_seq ON plait_messages (thread, seq)",
    """CREATE TABLE plait_values (
        thread TEXT NOT NULL,
        key TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (thread, key)
    )""",
)

# The run log's table is created on first use with IF NOT EXISTS, so a database made
# before the run log existed gains it without a schema version change.
_EVENTS_DDL = """CREATE TABLE IF NOT EXISTS plait_events (
    thread TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread, seq)
) WITHOUT ROWID"""

# Run leases (plait.checkpoint.RunLeases): one row per thread with a run in progress,
# created on first use like the run log's table.
_LEASES_DDL = """CREATE TABLE IF NOT EXISTS plait_run_leases (
    thread TEXT PRIMARY KEY NOT NULL,
    run_id TEXT NOT NULL,
    expires REAL NOT NULL
)"""

_STEPS = StepSQL(postgres=False, value_order="rowid")

_STORE_DDL = (
    """CREATE TABLE plait_store (
        ns BLOB NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (ns, key)
    )""",
)


_SYNCHRONOUS = ("full", "normal")


def parse_sqlite_url(url: str) -> tuple[str, dict[str, str]]:
    """The database path a ``sqlite://`` URL names (``":memory:"`` for an in-memory one)
    and its options.

    ``sqlite:///relative.db`` is relative to the working directory,
    ``sqlite:////abs/path.db`` is absolute, ``sqlite://:memory:`` lives in memory. The one
    option is ``?synchronous=full`` (the default) or ``normal``.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "sqlite":
        raise MalformedURLError(
            f"malformed SQLite URL {url!r}: expected sqlite:///relative.db, "
            "sqlite:////absolute/path.db or sqlite://:memory:"
        )
    rest, _, query = rest.partition("?")
    options: dict[str, str] = {}
    for pair in filter(None, query.split("&")):
        name, _, value = pair.partition("=")
        if name == "keep_steps":
            keep_steps_option(value, url)  # checked now, read by the checkpointer
        elif name != "synchronous" or value not in _SYNCHRONOUS:
            raise MalformedURLError(
                f"malformed SQLite URL {url!r}: unknown option {pair!r}; the options are "
                "synchronous=full or synchronous=normal, and keep_steps=N or keep_steps=all"
            )
        options[name] = value
    if "#" in rest:
        raise MalformedURLError(f"malformed SQLite URL {url!r}: '#' is not allowed")
    if rest in (_MEMORY, "/" + _MEMORY):
        return _MEMORY, options
    if not rest.startswith("/"):
        raise MalformedURLError(
            f"malformed SQLite URL {url!r}: a SQLite URL has no host; write "
            "sqlite:///relative.db or sqlite:////absolute/path.db"
        )
    path = unquote(rest[1:])
    if not path or path.endswith("/"):
        raise MalformedURLError(f"malformed SQLite URL {url!r}: it names no database file")
    return path, options


class _Connection(sqlite3.Connection):
    """A connection that can be weakly referenced: a thread's connection closes when the
    thread ends (its ``threading.local`` slot goes), instead of living until ``close()``."""


class _Database:
    """Connections to one SQLite file, one per thread (an in-memory database has one
    connection shared under a lock, since each connection would see its own database)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float,
        synchronous: str,
        component: str,
        ddl: Sequence[str],
    ) -> None:
        if synchronous not in _SYNCHRONOUS:
            choices = "one of " + ", ".join(map(repr, _SYNCHRONOUS))
            raise ValueError(f"synchronous: {expected(choices, synchronous)}")
        self.path = os.fspath(path)
        self._component = component
        self._ddl = tuple(ddl)
        self._ready = False
        self._ready_lock = threading.Lock()
        self._timeout = timeout
        self._synchronous = synchronous
        self._local = threading.local()
        self._lock = threading.RLock() if self.path == _MEMORY else None
        self._shared: sqlite3.Connection | None = None
        self._all: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._all_lock = threading.Lock()
        self._closed = False
        self._pid = os.getpid()
        self._inherited: list[sqlite3.Connection] = []

    def _forget_inherited(self) -> None:
        """After ``fork``, the parent's connections must not be used (or closed) by the
        child: SQLite's locks are per process. Keep them referenced, open new ones."""
        with self._all_lock:
            self._inherited += list(self._all)
            self._all = weakref.WeakSet()
        self._local = threading.local()
        self._pid = os.getpid()

    def _open(self) -> _Connection:
        if self._closed:
            raise StoreError(f"SQLite database {self.path!r} is closed")
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._timeout,
                isolation_level=None,
                check_same_thread=False,
                factory=_Connection,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        try:
            with self.errors():
                self._use_wal(conn)
                conn.execute(f"PRAGMA synchronous={self._synchronous.upper()}")
                conn.execute("PRAGMA secure_delete=ON")
        except BaseException:
            conn.close()
            raise
        with self._all_lock:
            self._all.add(conn)
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Put the file in WAL mode. While several connections open a new file at once,
        SQLite can refuse the switch with "database is locked" at once, without waiting
        on its busy timeout (seen about once in 70 six-thread opens); wait here instead,
        as long as the timeout allows."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Turn driver errors into ``StoreError``s that name the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "not a database" in text or "malformed" in text:
                raise StoreError(
                    f"{self.path!r} is not a usable SQLite database (corrupted, or not a "
                    f"database file): {text}"
                ) from exc
            raise StoreError(f"SQLite database {self.path!r}: {text}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite database {self.path!r}: {exc}") from exc

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise StoreError(f"SQLite database {self.path!r} is closed")
        if self._lock is not None:
            with self._lock:
                if self._shared is None:
                    self._shared = self._open()
                if not self._ready:
                    self._ensure_schema(self._shared)
                yield self._shared
            return
        if self._pid != os.getpid():
            self._forget_inherited()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        if not self._ready:
            self._ensure_schema(conn)
        yield conn

    @contextlib.contextmanager
    def transaction(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction; a write one takes the database's write lock up front
        (``BEGIN IMMEDIATE``), so the compare-and-set read and the writes are atomic."""
        with self.connection() as conn, self.errors():
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield conn
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def check(self) -> None:
        """Check the database when the checkpointer or store is built, creating nothing:
        an existing file is opened and its schema checked (or created) now, so a file that
        is not a database or has a newer schema fails here; a missing file is created on
        first use, so an agent that fails to build leaves no file behind."""
        if self.path == _MEMORY or os.path.exists(self.path):
            with self.connection():
                return
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):
            raise StoreError(
                f"cannot open SQLite database {self.path!r}: unable to open database file "
                f"(the directory {folder!r} does not exist)"
            )

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        """Create this component's tables on first use; refuse a schema we do not know."""
        with self._ready_lock:
            if self._ready:
                return
            key = f"{self._component}.schema_version"
            with self.errors():
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(_META_DDL)
                    row = conn.execute(
                        "SELECT value FROM plait_meta WHERE key = ?", (key,)
                    ).fetchone()
                    if row is None:
                        for statement in self._ddl:
                            conn.execute(statement)
                        conn.execute(
                            "INSERT INTO plait_meta (key, value) VALUES (?, ?)",
                            (key, str(SCHEMA_VERSION)),
                        )
                    elif str(row[0]) != str(SCHEMA_VERSION):
                        raise SchemaVersionError(
                            f"SQLite database {self.path!r} holds {self._component} schema "
                            f"version {str(row[0])!r}; this plait knows version "
                            f"{SCHEMA_VERSION} only (upgrade plait to open it)"
                        )
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            self._ready = True

    def close(self) -> None:
        self._closed = True
        with self._all_lock:
            conns, self._all = list(self._all), weakref.WeakSet()
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._shared = None


def _message_rows(upserts: Sequence[AnyMessage]) -> list[tuple[str, str]]:
    """``(id, json)`` per distinct id, in first-seen order with the last version's data
    (a message upserted twice in one step is one row, placed where it first appeared)."""
    rows: dict[str, str] = {}
    for message in upserts:
        rows[message.id] = dump_message(message)
    return list(rows.items())


def _query(conn: sqlite3.Connection) -> Query:
    """``plait.persistence.steps``' way to run a statement on ``conn``."""
    return lambda text, params: conn.execute(text, params).fetchall()


def _busy(thread_id: str, stored: int, delta: StepDelta) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is at step {stored}, not {delta.step - 1}: "
        "another run wrote to it since this one loaded it"
    )


class SQLiteCheckpointer:
    """Threads in a SQLite file: safe across threads and processes on one machine.

    :param path: the database file (created on first use if missing), or ``":memory:"``.
    :param timeout: seconds to wait for another process's write lock before giving up.
    :param synchronous: ``"full"`` flushes every step to disk before ``save`` returns
        (survives a power cut); ``"normal"`` skips that flush, which is much faster
        on slow disks and still loses nothing when the process crashes (a power cut may
        lose the last steps, never corrupt the file).
    :param keep_steps: the steps of each thread kept in its history (default
        ``plait.history.KEEP_STEPS``, 1000); ``None`` keeps them all.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: Literal["full", "normal"] = "full",
        keep_steps: int | None = KEEP_STEPS,
    ) -> None:
        self.keep_steps = check_keep_steps(keep_steps, "SQLiteCheckpointer")
        self._db = _Database(
            path,
            timeout=timeout,
            synchronous=synchronous,
            component="checkpointer",
            ddl=_CHECKPOINTER_DDL,
        )
        self._db.check()
        self._events_ready = False
        self._leases_ready = False
        self._history_ready = False

    @classmethod
    def from_url(cls, url: str) -> SQLiteCheckpointer:
        """The checkpointer for ``sqlite:///relative.db``, ``sqlite:////abs/path.db`` or
        ``sqlite://:memory:``, optionally with ``?synchronous=normal`` and
        ``?keep_steps=N`` (or ``all``) (the ``plait.checkpointers`` entry point)."""
        path, options = parse_sqlite_url(url)
        keep = options.get("keep_steps")
        return cls(
            path,
            synchronous="normal" if options.get("synchronous") == "normal" else "full",
            keep_steps=KEEP_STEPS if keep is None else keep_steps_option(keep, url),
        )

    @property
    def path(self) -> str:
        return self._db.path

    def load(self, thread_id: str) -> Checkpoint | None:
        with self._db.transaction(write=False) as conn:
            row = conn.execute(
                "SELECT step FROM plait_threads WHERE id = ?", (thread_id,)
            ).fetchone()
            if row is None:
                return None
            fork = _STEPS.fork_of(_query(conn), thread_id) if self._has_history(conn) else None
            if fork is not None and not fork[2]:  # a fork not written to yet: its parent's
                rows = _STEPS.rows_at(_query(conn), fork[0], fork[1])
                return None if rows is None else self._checkpoint(thread_id, fork[1], rows)
            message_rows = conn.execute(
                "SELECT id, data FROM plait_messages WHERE thread = ? ORDER BY seq",
                (thread_id,),
            ).fetchall()
            value_rows = conn.execute(
                "SELECT key, data FROM plait_values WHERE thread = ? ORDER BY rowid",
                (thread_id,),
            ).fetchall()
        try:
            messages = [load_message(data) for _, data in message_rows]
            values = {key: load_value(data) for key, data in value_rows}
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(
                f"SQLite database {self.path!r}: thread {thread_id!r} holds a record this "
                f"plait cannot read: {exc}"
            ) from exc
        return Checkpoint(int(row[0]), messages, values)

    def step(self, thread_id: str) -> int:
        with self._db.connection() as conn, self._db.errors():
            row = conn.execute(
                "SELECT step FROM plait_threads WHERE id = ?", (thread_id,)
            ).fetchone()
        return 0 if row is None else int(row[0])

    def save(self, thread_id: str, delta: StepDelta) -> None:
        # Encode before taking the write lock: a value that is not JSON fails here,
        # having written nothing.
        rows = _message_rows(delta.upserts)
        values = [(thread_id, key, dump_value(value, key)) for key, value in delta.values.items()]
        with self._db.transaction(write=True) as conn:
            row = conn.execute(
                "SELECT step, next_seq FROM plait_threads WHERE id = ?", (thread_id,)
            ).fetchone()
            stored, next_seq = (0, 0) if row is None else (int(row[0]), int(row[1]))
            if stored != delta.step - 1:
                raise _busy(thread_id, stored, delta)
            self._ensure_history(conn)
            q = _query(conn)
            fork = _STEPS.fork_of(q, thread_id)
            if fork is not None and not fork[2]:
                next_seq = _STEPS.copy_fork(q, thread_id, fork[0], fork[1], self._where)
            undo = json.dumps(
                undo_record(delta, *_STEPS.touched(q, thread_id, delta)),
                ensure_ascii=False,
                separators=(",", ":"),
            )
            if row is None:
                conn.execute(
                    "INSERT INTO plait_threads (id, step, next_seq, created) VALUES (?, ?, ?, ?)",
                    (thread_id, delta.step, len(rows), time.time()),
                )
            else:
                conn.execute(
                    "UPDATE plait_threads SET step = ?, next_seq = ? WHERE id = ?",
                    (delta.step, next_seq + len(rows), thread_id),
                )
            if delta.reset:
                conn.execute("DELETE FROM plait_messages WHERE thread = ?", (thread_id,))
            elif delta.removed:
                conn.executemany(
                    "DELETE FROM plait_messages WHERE thread = ? AND id = ?",
                    [(thread_id, message_id) for message_id in delta.removed],
                )
            if rows:
                conn.executemany(
                    "INSERT INTO plait_messages (thread, id, seq, data) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (thread, id) DO UPDATE SET data = excluded.data",
                    [
                        (thread_id, message_id, next_seq + index, data)
                        for index, (message_id, data) in enumerate(rows)
                    ],
                )
            if values:
                conn.executemany(
                    "INSERT INTO plait_values (thread, key, data) VALUES (?, ?, ?) "
                    "ON CONFLICT (thread, key) DO UPDATE SET data = excluded.data",
                    values,
                )
            _STEPS.record(q, thread_id, delta, undo, time.time(), self.keep_steps)

    def list_threads(self) -> list[str]:
        with self._db.connection() as conn, self._db.errors():
            rows = conn.execute("SELECT id FROM plait_threads ORDER BY rowid").fetchall()
        return [str(row[0]) for row in rows]

    def delete_thread(self, thread_id: str) -> None:
        with self._db.transaction(write=True) as conn:
            self._ensure_history(conn)
            _STEPS.forget(_query(conn), thread_id, self._where)
            conn.execute("DELETE FROM plait_messages WHERE thread = ?", (thread_id,))
            conn.execute("DELETE FROM plait_values WHERE thread = ?", (thread_id,))
            conn.execute("DELETE FROM plait_threads WHERE id = ?", (thread_id,))
            if self._has_events(conn):
                conn.execute("DELETE FROM plait_events WHERE thread = ?", (thread_id,))
            if self._has_leases(conn):
                conn.execute("DELETE FROM plait_run_leases WHERE thread = ?", (thread_id,))

    # -- history (plait.checkpoint.History) ------------------------------------------------

    @property
    def _where(self) -> str:
        return f"SQLite database {self.path!r}"

    def _ensure_history(self, conn: sqlite3.Connection) -> None:
        if not self._history_ready:
            for statement in history_ddl(postgres=False):
                conn.execute(statement)
            self._history_ready = True

    def _has_history(self, conn: sqlite3.Connection) -> bool:
        if not self._history_ready:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plait_forks'"
            ).fetchone()
            self._history_ready = row is not None
        return self._history_ready

    def _checkpoint(self, thread_id: str, step: int, rows: Rows) -> Checkpoint:
        try:
            return checkpoint_from_rows(step, rows)
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(
                f"SQLite database {self.path!r}: thread {thread_id!r} holds a record this "
                f"plait cannot read: {exc}"
            ) from exc

    def history(self, thread_id: str) -> list[StepInfo]:
        with self._db.transaction(write=False) as conn:
            if not self._has_history(conn):
                return []
            return _STEPS.infos(_query(conn), thread_id)

    def load_step(self, thread_id: str, step: int) -> Checkpoint:
        with self._db.transaction(write=False) as conn:
            q = _query(conn)
            has = self._has_history(conn)
            rows = _STEPS.rows_at(q, thread_id, step) if has else None
            if rows is None:
                raise (
                    _STEPS.missing(q, thread_id, step) if has else missing_step(thread_id, step, [])
                )
        return self._checkpoint(thread_id, step, rows)

    def fork(self, thread_id: str, step: int, new_thread_id: str) -> None:
        with self._db.transaction(write=True) as conn:
            self._ensure_history(conn)
            _STEPS.fork(_query(conn), thread_id, step, new_thread_id, time.time())

    def prune(self, *, before: float) -> int:
        with self._db.transaction(write=True) as conn:
            if not self._has_history(conn):
                return 0
            return _STEPS.prune(_query(conn), before)

    # -- the run log (plait.checkpoint.EventLog) -------------------------------------------

    def _has_events(self, conn: sqlite3.Connection) -> bool:
        if not self._events_ready:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plait_events'"
            ).fetchone()
            self._events_ready = row is not None
        return self._events_ready

    def append_events(self, thread_id: str, events: Sequence[Any], *, after: int) -> int:
        rows = [dump_event(event) for event in events]
        with self._db.transaction(write=True) as conn:
            if not self._has_events(conn):
                conn.execute(_EVENTS_DDL)
                self._events_ready = True
            row = conn.execute(
                "SELECT max(seq) FROM plait_events WHERE thread = ?", (thread_id,)
            ).fetchone()
            stored = int(row[0] or 0)
            if stored != after:
                raise event_conflict(thread_id, stored, after)
            conn.executemany(
                "INSERT INTO plait_events (thread, seq, data) VALUES (?, ?, ?)",
                [(thread_id, after + index + 1, data) for index, data in enumerate(rows)],
            )
        return after + len(rows)

    def read_events(
        self, thread_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, Any]]:
        with self._db.connection() as conn, self._db.errors():
            if not self._has_events(conn):
                return []
            rows = conn.execute(
                "SELECT seq, data FROM plait_events WHERE thread = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (thread_id, after, -1 if limit is None else max(limit, 0)),
            ).fetchall()
        return [(int(seq), load_value(data)) for seq, data in rows]

    def last_event(self, thread_id: str) -> int:
        with self._db.connection() as conn, self._db.errors():
            if not self._has_events(conn):
                return 0
            row = conn.execute(
                "SELECT max(seq) FROM plait_events WHERE thread = ?", (thread_id,)
            ).fetchone()
        return int(row[0] or 0)

    def forget_events(self, thread_id: str, *, after: int, through: int) -> int:
        with self._db.transaction(write=True) as conn:
            if not self._has_events(conn):
                return 0
            cursor = conn.execute(
                "DELETE FROM plait_events WHERE thread = ? AND seq > ? AND seq <= ?",
                (thread_id, after, through),
            )
            return int(cursor.rowcount)

    # -- run leases (plait.checkpoint.RunLeases) -------------------------------------------

    def _has_leases(self, conn: sqlite3.Connection) -> bool:
        if not self._leases_ready:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plait_run_leases'"
            ).fetchone()
            self._leases_ready = row is not None
        return self._leases_ready

    def renew_lease(self, thread_id: str, run_id: str, seconds: float) -> None:
        with self._db.transaction(write=True) as conn:
            if not self._has_leases(conn):
                conn.execute(_LEASES_DDL)
                self._leases_ready = True
            conn.execute(
                "INSERT INTO plait_run_leases (thread, run_id, expires) VALUES (?, ?, ?) "
                "ON CONFLICT (thread) DO UPDATE SET run_id = excluded.run_id, "
                "expires = excluded.expires",
                (thread_id, run_id, time.time() + seconds),
            )

    def run_lease(self, thread_id: str) -> RunLease | None:
        with self._db.connection() as conn, self._db.errors():
            if not self._has_leases(conn):
                return None
            row = conn.execute(
                "SELECT run_id, expires FROM plait_run_leases WHERE thread = ?", (thread_id,)
            ).fetchone()
        return None if row is None else RunLease(str(row[0]), float(row[1]))

    def end_lease(self, thread_id: str, run_id: str) -> None:
        with self._db.transaction(write=True) as conn:
            if self._has_leases(conn):
                conn.execute(
                    "DELETE FROM plait_run_leases WHERE thread = ? AND run_id = ?",
                    (thread_id, run_id),
                )

    def close(self) -> None:
        """Close every connection this checkpointer opened."""
        self._db.close()

    def __enter__(self) -> SQLiteCheckpointer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteCheckpointer({self.path!r})"


def encode_namespace(namespace: Sequence[str]) -> bytes:
    """An order-preserving byte key for a namespace tuple: comparing keys bytewise orders
    namespaces exactly as Python orders the tuples, and the keys of every namespace under
    a prefix share that prefix's key as their own prefix (so a search is one range scan).

    Each part is its UTF-8 bytes with 0x00 and 0x01 escaped (as 0x01 0x01, 0x01 0x02),
    followed by a 0x00 terminator.
    """
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


class SQLiteStore:
    """A namespaced key-value store in a SQLite file (may share the checkpointer's file).

    :param path: the database file (created on first use if missing), or ``":memory:"``.
    :param timeout: seconds to wait for another process's write lock before giving up.
    :param synchronous: ``"full"`` flushes every step to disk before ``save`` returns
        (survives a power cut); ``"normal"`` skips that flush, which is much faster
        on slow disks and still loses nothing when the process crashes (a power cut may
        lose the last steps, never corrupt the file).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: Literal["full", "normal"] = "full",
    ) -> None:
        self._db = _Database(
            path, timeout=timeout, synchronous=synchronous, component="store", ddl=_STORE_DDL
        )
        self._db.check()

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        """The store for a ``sqlite://`` URL (the ``plait.stores`` entry point)."""
        path, options = parse_sqlite_url(url)
        return cls(path, synchronous="normal" if options.get("synchronous") == "normal" else "full")

    @property
    def path(self) -> str:
        return self._db.path

    def put(self, namespace: tuple[str, ...], key: str, value: Any) -> None:
        ns = _check_item(namespace, key)
        data = dump_value(value)
        with self._db.transaction(write=True) as conn:
            conn.execute(
                "INSERT INTO plait_store (ns, key, value) VALUES (?, ?, ?) "
                "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value",
                (ns, key, data),
            )

    def get(self, namespace: tuple[str, ...], key: str) -> StoreItem | None:
        ns = _check_item(namespace, key)
        with self._db.connection() as conn, self._db.errors():
            row = conn.execute(
                "SELECT value FROM plait_store WHERE ns = ? AND key = ?", (ns, key)
            ).fetchone()
        if row is None:
            return None
        return StoreItem(tuple(namespace), key, load_value(row[0]))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        ns = _check_item(namespace, key)
        with self._db.transaction(write=True) as conn:
            conn.execute("DELETE FROM plait_store WHERE ns = ? AND key = ?", (ns, key))

    def search(self, prefix: tuple[str, ...], *, limit: int = 10) -> list[StoreItem]:
        if isinstance(prefix, str):
            raise TypeError(f"a namespace prefix is a tuple of str, not the str {prefix!r}")
        problem = integer(minimum=0).problem(limit)
        if problem is not None:
            raise ValueError(f"search limit: {problem}")
        low = encode_namespace(prefix)
        with self._db.connection() as conn, self._db.errors():
            if low:
                high = low[:-1] + b"\x01"
                rows = conn.execute(
                    "SELECT ns, key, value FROM plait_store WHERE ns >= ? AND ns < ? "
                    "ORDER BY ns, key LIMIT ?",
                    (low, high, limit),
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT ns, key, value FROM plait_store ORDER BY ns, key LIMIT ?", (limit,)
                ).fetchall()
        return [StoreItem(decode_namespace(ns), key, load_value(value)) for ns, key, value in rows]

    def close(self) -> None:
        """Close every connection this store opened."""
        self._db.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
