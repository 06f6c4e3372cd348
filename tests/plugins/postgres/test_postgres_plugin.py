"""PostgreSQL-only concerns: URLs and redaction, a missing server, schema versions and
schemas, row-lock waits ending in ThreadBusyError, dropped connections, and that a step
writes only the rows it changed. (Shared semantics are in the conformance suites.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

import psycopg
import pytest
from postgres_server import drop_schema, new_schema_name, postgres_url_or_skip
from psycopg import sql

from plait.checkpoint import Checkpoint, StepDelta
from plait.errors import SchemaVersionError, StoreError, ThreadBusyError
from plait.messages import HumanMessage
from plait_postgres import PostgresCheckpointer, PostgresStore, redact_url


@pytest.fixture
def server() -> str:
    return postgres_url_or_skip()


@pytest.fixture
def schema(server: str) -> Iterator[str]:
    """A fresh schema name, dropped after the test."""
    name = new_schema_name()
    yield name
    drop_schema(server, name)


def _with_schema(url: str, schema: str) -> str:
    return url + ("&" if "?" in url else "?") + f"schema={schema}"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://bob:s3cret@db.example:5432/app", "postgresql://bob:***@db.example:5432/app"),
        ("postgres://bob@db/app", "postgres://bob@db/app"),
        ("postgresql://db/app?password=s3cret&sslmode=require", "postgresql://db/app?password=***&sslmode=require"),
        ("postgresql://bob:p%40ss@db/app", "postgresql://bob:***@db/app"),
        ("host=db user=bob password=s3cret dbname=app", "host=db user=bob password=*** dbname=app"),
        ("postgresql:///app?password=s3cret", "postgresql:///app?password=***"),
        ("postgresql://", "postgresql://"),
        ("host=db password = 'a b\\' c' dbname=app", "host=db password = *** dbname=app"),
    ],
)  # fmt: skip
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_a_key_value_connection_string_is_redacted_too() -> None:
    with pytest.raises(StoreError, match="cannot connect") as info:
        PostgresCheckpointer("host=127.0.0.1 port=1 user=bob password=s3cret connect_timeout=2")
    assert "password=***" in str(info.value)
    assert "s3cret" not in str(info.value)


def test_a_missing_server_is_a_store_error_with_the_password_redacted() -> None:
    url = "postgresql://bob:s3cret@127.0.0.1:1/app?connect_timeout=2"
    for factory in (PostgresCheckpointer.from_url, PostgresStore.from_url):
        with pytest.raises(StoreError, match="cannot connect to PostgreSQL at") as info:
            factory(url)
        message = str(info.value)
        assert "postgresql://bob:***@127.0.0.1:1/app" in message
        assert "s3cret" not in message
        assert info.value.__cause__ is None or "s3cret" not in str(info.value.__cause__)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("mysql://bob:s3cret@db/app", "expected postgresql://"),
        ("postgresql://bob:s3cret@db/app?bogus=1", "invalid URI query parameter"),
        ("postgresql://bob:s3cret@db:port/app", "malformed PostgreSQL URL"),
        ("postgresql://bob:s3cret@db/app?schema=", "schema= is empty"),
    ],
)
def test_malformed_urls_are_store_errors_naming_the_redacted_url(url: str, why: str) -> None:
    with pytest.raises(StoreError, match="malformed PostgreSQL URL") as info:
        PostgresCheckpointer.from_url(url)
    assert why in str(info.value)
    assert "bob:***@db" in str(info.value)
    assert "s3cret" not in str(info.value)


def test_a_url_without_a_host_is_libpqs_and_works(server: str, schema: str) -> None:
    """``postgresql:///db?host=…`` (the host in parameters, or a local socket) used to
    lose its ``//`` and fail as a malformed connection string."""
    parts = urlsplit(server)
    params = {"host": parts.hostname or "", "port": str(parts.port or 5432)}
    if parts.username:
        params["user"] = unquote(parts.username)
    if parts.password:
        params["password"] = unquote(parts.password)
    url = f"postgresql://{parts.path}?{urlencode(params)}&schema={schema}"
    cp = PostgresCheckpointer.from_url(url)
    cp.save("t", StepDelta(1, upserts=(HumanMessage("hi", id="h"),)))
    assert cp.load("t") == Checkpoint(1, [HumanMessage("hi", id="h")], {})
    cp.close()


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_entry_points_open_by_url(server: str, schema: str, scheme: str) -> None:
    url = _with_schema(scheme + server[server.index("://") :], schema)
    (cp_ep,) = [e for e in entry_points(group="plait.checkpointers") if e.name == scheme]
    (store_ep,) = [e for e in entry_points(group="plait.stores") if e.name == scheme]
    cp = cp_ep.load()(url)
    store = store_ep.load()(url)
    cp.save("t", StepDelta(1, upserts=(HumanMessage("hi", id="h"),), values={"k": 1}))
    store.put(("ns",), "k", [1])
    assert cp.load("t") == Checkpoint(1, [HumanMessage("hi", id="h")], {"k": 1})
    item = store.get(("ns",), "k")
    assert item is not None and item.value == [1]
    with psycopg.connect(server) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "ORDER BY table_name",
            (schema,),
        ).fetchall()
    assert [t for (t,) in tables] == [
        "plait_events",
        "plait_forks",
        "plait_messages",
        "plait_meta",
        "plait_run_leases",
        "plait_steps",
        "plait_store",
        "plait_threads",
        "plait_values",
    ]
    cp.close()
    store.close()


def test_schemas_keep_threads_apart(server: str, schema: str) -> None:
    other = schema + "_b"
    try:
        a = PostgresCheckpointer(server, schema=schema)
        b = PostgresCheckpointer(server, schema=other)
        a.save("t", StepDelta(1, upserts=(HumanMessage("in a"),)))
        assert b.load("t") is None
        assert b.list_threads() == []
        a.close()
        b.close()
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(other)))


def test_a_newer_schema_version_is_refused(server: str, schema: str) -> None:
    PostgresCheckpointer(server, schema=schema).close()
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "UPDATE {}.plait_meta SET value = '9' WHERE key = 'checkpointer.schema_version'"
            ).format(sql.Identifier(schema))
        )
    with pytest.raises(SchemaVersionError, match="schema version '9'") as info:
        PostgresCheckpointer(server, schema=schema)
    assert schema in str(info.value)


def test_a_writer_waiting_on_the_row_lock_then_gets_thread_busy(server: str, schema: str) -> None:
    cp = PostgresCheckpointer(server, schema=schema)
    cp.save("t", StepDelta(1, upserts=(HumanMessage("a", id="a"),)))
    outcome: list[BaseException | None] = []
    with psycopg.connect(server) as other:  # a transaction holding the thread's row
        other.execute(
            sql.SQL("UPDATE {}.plait_threads SET step = 2 WHERE id = 't'").format(
                sql.Identifier(schema)
            )
        )

        def late_writer() -> None:
            try:
                cp.save("t", StepDelta(2, upserts=(HumanMessage("late", id="late"),)))
                outcome.append(None)
            except ThreadBusyError as exc:
                outcome.append(exc)

        writer = threading.Thread(target=late_writer)
        writer.start()
        other.commit()
    writer.join()
    assert len(outcome) == 1 and isinstance(outcome[0], ThreadBusyError)
    assert "at step 2, not 1" in str(outcome[0])
    loaded = cp.load("t")
    assert loaded is not None and [m.id for m in loaded.messages] == ["a"]
    cp.close()


def test_a_dropped_connection_is_replaced(server: str, schema: str) -> None:
    # named apart, so that only this test's connections are ended below (other tests
    # running beside it on the same server keep theirs)
    name = f"plait-{schema}"
    url = server + ("&" if "?" in server else "?") + f"application_name={name}"
    cp = PostgresCheckpointer(url, schema=schema)
    store = PostgresStore(url, schema=schema)
    cp.save("t", StepDelta(1, upserts=(HumanMessage("a", id="a"),)))
    store.put(("ns",), "k", 1)
    with psycopg.connect(server, autocommit=True) as admin:
        ended = admin.execute(
            # waiting (up to 10 s) for each backend to be gone
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE application_name = %s",
            (name,),
        ).fetchall()
    assert ended and all(row[0] for row in ended)
    # The pooled connections are dead; each call below transparently uses a new one.
    assert cp.step("t") == 1
    cp.save("t", StepDelta(2, upserts=(HumanMessage("b", id="b"),)))
    loaded = cp.load("t")
    assert loaded is not None and [m.id for m in loaded.messages] == ["a", "b"]
    item = store.get(("ns",), "k")
    assert item is not None and item.value == 1
    cp.close()
    store.close()


def test_a_step_writes_only_the_rows_it_changed(server: str, schema: str) -> None:
    cp = PostgresCheckpointer(server, schema=schema)
    history = tuple(HumanMessage(f"m{i}", id=f"m{i}") for i in range(300))
    cp.save("t", StepDelta(1, upserts=history, values={"a": 1, "b": 2}))
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        conn.execute("CREATE TABLE audit (what text)")
        conn.execute(
            """CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    INSERT INTO audit VALUES (lower(TG_OP) || ' ' || TG_TABLE_NAME || ' '
                                              || OLD.id);
                    RETURN OLD;
                ELSIF TG_TABLE_NAME = 'plait_values' THEN
                    INSERT INTO audit VALUES (lower(TG_OP) || ' ' || TG_TABLE_NAME || ' '
                                              || NEW.key);
                ELSE
                    INSERT INTO audit VALUES (lower(TG_OP) || ' ' || TG_TABLE_NAME || ' '
                                              || NEW.id);
                END IF;
                RETURN NEW;
            END $$"""
        )
        for table in ("plait_messages", "plait_values"):
            conn.execute(
                sql.SQL(
                    "CREATE TRIGGER audit AFTER INSERT OR UPDATE OR DELETE ON {} "
                    "FOR EACH ROW EXECUTE FUNCTION audit_row()"
                ).format(sql.Identifier(table))
            )
    cp.save(
        "t",
        StepDelta(
            2,
            removed=("m3",),
            upserts=(HumanMessage("edited", id="m7"), HumanMessage("new", id="m300")),
            values={"b": 3},
        ),
    )
    with psycopg.connect(server) as conn:
        audit = conn.execute(
            sql.SQL("SELECT what FROM {}.audit ORDER BY what").format(sql.Identifier(schema))
        ).fetchall()
    assert [a for (a,) in audit] == [
        "delete plait_messages m3",
        "insert plait_messages m300",
        "update plait_messages m7",
        "update plait_values b",
    ]
    loaded = cp.load("t")
    assert loaded is not None
    assert [m.id for m in loaded.messages][5:8] == ["m6", "m7", "m8"]
    assert loaded.messages[6].text == "edited" and loaded.messages[-1].id == "m300"
    cp.close()


def test_closed_checkpointer_says_so(server: str, schema: str) -> None:
    cp = PostgresCheckpointer(server, schema=schema)
    cp.close()
    with pytest.raises(StoreError, match="is closed"):
        cp.step("t")


def test_save_in_commits_and_rolls_back_with_the_callers_transaction(
    server: str, schema: str
) -> None:
    """``save_in`` writes a step inside a transaction the caller holds (its own writes
    commit with the step or not at all) and in the checkpointer's schema, whatever the
    caller's connection's ``search_path``."""
    checkpointer = PostgresCheckpointer(server, schema=schema)
    assert checkpointer.same_database(server)
    first = StepDelta(step=1, upserts=[HumanMessage("hi", id="m1")], run_id="r")
    with psycopg.connect(server) as conn:  # not autocommit: one transaction, rolled back
        checkpointer.save_in(conn, "t", first)
        conn.rollback()
    assert checkpointer.load("t") is None
    with psycopg.connect(server) as conn:
        before = conn.execute("SHOW search_path").fetchone()
        checkpointer.save_in(conn, "t", first)
        conn.commit()
        assert conn.execute("SHOW search_path").fetchone() == before  # the caller's again
    loaded = checkpointer.load("t")
    assert loaded is not None and [m.text for m in loaded.messages] == ["hi"]
    with psycopg.connect(server) as conn, pytest.raises(ThreadBusyError):
        checkpointer.save_in(conn, "t", first)  # step 1 again: the compare-and-set loses
    checkpointer.close()


def test_transaction_commits_a_save_in_and_the_callers_rows_together_or_neither(
    server: str, schema: str
) -> None:
    """``transaction`` runs a save and the caller's own writes (here in the
    checkpointer's schema, the connection's ``search_path``) in one transaction:
    committed when the block returns, neither written when the block raises; a pooled
    connection that died while idle is replaced (the block run again if it had begun)."""
    # its connections named apart, so that only they are ended below
    name = f"plait-{schema}"
    url = server + ("&" if "?" in server else "?") + f"application_name={name}"
    checkpointer = PostgresCheckpointer(url, schema=schema)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE TABLE {}.mine (x int)").format(sql.Identifier(schema)))

    def mine() -> int:
        with psycopg.connect(server) as conn:
            query = sql.SQL("SELECT count(*) FROM {}.mine").format(sql.Identifier(schema))
            row = conn.execute(query).fetchone()
        assert row is not None
        return int(row[0])

    runs: list[int] = []

    def save_and_mine(delta: StepDelta, *, fail: bool = False) -> Any:
        def block(tx: Any) -> str:
            runs.append(delta.step)
            checkpointer.save_in(tx, "t", delta)
            tx.execute("INSERT INTO mine VALUES (1)")
            if fail:
                raise RuntimeError("the caller failed")
            return "done"

        return checkpointer.transaction(block)

    first = StepDelta(step=1, upserts=[HumanMessage("hi", id="m1")], run_id="r")
    with pytest.raises(RuntimeError, match="the caller failed"):
        save_and_mine(first, fail=True)
    assert checkpointer.load("t") is None and mine() == 0
    assert save_and_mine(first) == "done"
    loaded = checkpointer.load("t")
    assert loaded is not None and [m.text for m in loaded.messages] == ["hi"]
    assert mine() == 1
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(
            # waiting (up to 10 s) for each backend to be gone
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE application_name = %s",
            (name,),
        )
    runs.clear()
    second = StepDelta(step=2, upserts=[HumanMessage("again", id="m2")], run_id="r")
    assert save_and_mine(second) == "done"  # on a new connection (the block's writes once)
    assert runs[-1] == 2

    def setting(tx: Any) -> str:
        row = tx.execute("SHOW synchronous_commit").fetchone()
        return str(row[0])

    # flush=False: this transaction's commit does not wait for the disk
    assert checkpointer.transaction(setting, flush=False) == "off"
    assert checkpointer.transaction(setting) == "on"
    loaded = checkpointer.load("t")
    assert loaded is not None and [m.text for m in loaded.messages] == ["hi", "again"]
    assert mine() == 2
    checkpointer.close()


def test_save_in_keeps_the_history_save_keeps_and_writes_a_fork_its_own_rows(
    server: str, schema: str
) -> None:
    """``save_in`` sends its statements in a pipeline; the rows the undo record keeps
    are read all the same, so a thread saved through it rewinds to each earlier step as
    one saved by ``save`` does, and a fork's first save through it copies the parent's
    rows first."""
    checkpointer = PostgresCheckpointer(server, schema=schema)
    steps = [
        StepDelta(1, upserts=[HumanMessage("hi", id="m1")], values={"x": 1}, run_id="r"),
        StepDelta(2, upserts=[HumanMessage("edited", id="m1")], values={"x": 2}, run_id="r"),
        StepDelta(3, upserts=[HumanMessage("more", id="m2")], values={"y": 3}, run_id="r"),
    ]

    def save_in(thread_id: str, delta: StepDelta) -> None:
        with psycopg.connect(server) as conn:
            checkpointer.save_in(conn, thread_id, delta)
            conn.commit()

    for delta in steps:
        checkpointer.save("plain", delta)
        save_in("joined", delta)

    def seen(checkpoint: Checkpoint) -> tuple[list[str], dict[str, object]]:
        return [m.text for m in checkpoint.messages], dict(checkpoint.values)

    for step in (1, 2):
        plain = seen(checkpointer.load_step("plain", step))
        assert seen(checkpointer.load_step("joined", step)) == plain
    assert seen(checkpointer.load_step("joined", 1)) == (["hi"], {"x": 1})
    checkpointer.fork("joined", 2, "fork")
    save_in("fork", StepDelta(3, upserts=[HumanMessage("forked", id="m3")], values={"x": 9}))
    loaded = checkpointer.load("fork")
    assert loaded is not None and seen(loaded) == (["edited", "forked"], {"x": 9})
    assert seen(checkpointer.load_step("fork", 2)) == (["edited"], {"x": 2})
    checkpointer.close()


def test_load_in_reads_what_load_reads_in_the_callers_transaction(server: str, schema: str) -> None:
    """``load_in`` (all of a thread's reads sent at once in the caller's pipelined
    transaction) returns what ``load`` does: nothing for a thread that does not exist,
    the thread, and a fork not written to yet as its parent's step."""
    checkpointer = PostgresCheckpointer(server, schema=schema)
    checkpointer.save("t", StepDelta(1, upserts=[HumanMessage("hi", id="m1")], values={"x": 1}))
    checkpointer.save("t", StepDelta(2, upserts=[HumanMessage("on", id="m2")], values={"x": 2}))
    checkpointer.fork("t", 1, "f")

    def load_in(thread_id: str) -> Checkpoint | None:
        def read(tx: Any) -> Checkpoint | None:
            tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return checkpointer.load_in(tx, thread_id)

        return checkpointer.transaction(read)

    for thread_id in ("t", "f", "none"):
        assert load_in(thread_id) == checkpointer.load(thread_id)
    forked = load_in("f")
    assert forked is not None and [m.text for m in forked.messages] == ["hi"]
    assert forked.values == {"x": 1}
    checkpointer.close()


@pytest.mark.parametrize(
    ("theirs", "same"),
    [
        ("postgresql+psycopg://bob@db:5432/app", True),
        ("postgresql://bob@db/app", True),
        ("postgresql://bob@db:5433/app", False),
        ("postgresql://bob@db/other", False),
        ("postgresql://alice@db/app", False),
        ("postgresql://bob@elsewhere/app", False),
    ],
)
def test_same_database_compares_host_port_database_and_user(theirs: str, same: bool) -> None:
    from plait_postgres._postgres import _Database

    ours = _Database("postgresql://bob:pw@db:5432/app", schema="public", connect_timeout=1)
    assert ours.same_database(theirs) is same
