"""SQLite-only concerns: URLs, file modes, bad files, schema versions, and that a step
writes only the rows it changed."""

from __future__ import annotations

import gc
import sqlite3
import threading
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from plait.checkpoint import Checkpoint, StepDelta
from plait.errors import SchemaVersionError, StoreError
from plait.messages import HumanMessage
from plait.persistence import SQLiteCheckpointer, SQLiteStore
from plait.persistence.sqlite import parse_sqlite_url


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///agent.db", "agent.db"),
        ("sqlite:///data/agent.db", "data/agent.db"),
        ("sqlite:////abs/path/agent.db", "/abs/path/agent.db"),
        ("sqlite:///my%20agent.db", "my agent.db"),
        ("sqlite://:memory:", ":memory:"),
        ("sqlite:///:memory:", ":memory:"),
    ],
)
def test_url_forms(url: str, path: str) -> None:
    assert parse_sqlite_url(url) == (path, {})


def test_synchronous_option(tmp_path: Path) -> None:
    assert parse_sqlite_url("sqlite:///a.db?synchronous=normal") == (
        "a.db",
        {"synchronous": "normal"},
    )
    for query, level in [("", 2), ("?synchronous=full", 2), ("?synchronous=normal", 1)]:
        cp = SQLiteCheckpointer.from_url(f"sqlite:///{tmp_path / 's.db'}{query}")
        with cp._db.connection() as conn:
            assert conn.execute("PRAGMA synchronous").fetchone() == (level,)
        cp.close()
    with pytest.raises(ValueError) as info:
        SQLiteStore(tmp_path / "s.db", synchronous="off")  # type: ignore[arg-type]
    assert str(info.value) == "synchronous: expected one of 'full', 'normal', got 'off'"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("sqlite:agent.db", "expected sqlite:///relative.db"),
        ("postgresql:///agent.db", "expected sqlite:///relative.db"),
        ("sqlite://host/agent.db", "has no host"),
        ("sqlite:///", "names no database file"),
        ("sqlite:////tmp/dir/", "names no database file"),
        ("sqlite:///agent.db?mode=ro", "unknown option 'mode=ro'"),
        ("sqlite:///agent.db?synchronous=off", "unknown option 'synchronous=off'"),
    ],
)
def test_malformed_urls_are_store_errors_naming_the_url(url: str, why: str) -> None:
    with pytest.raises(StoreError, match="malformed SQLite URL") as info:
        SQLiteCheckpointer.from_url(url)
    assert repr(url) in str(info.value)
    assert why in str(info.value)
    with pytest.raises(StoreError, match="malformed SQLite URL"):
        SQLiteStore.from_url(url)


def test_relative_url_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cp = SQLiteCheckpointer.from_url("sqlite:///rel.db")
    cp.save("t", StepDelta(1, upserts=(HumanMessage("hi"),)))
    cp.close()
    assert (tmp_path / "rel.db").is_file()


def test_entry_points_open_by_url(tmp_path: Path) -> None:
    (cp_ep,) = [e for e in entry_points(group="plait.checkpointers") if e.name == "sqlite"]
    (store_ep,) = [e for e in entry_points(group="plait.stores") if e.name == "sqlite"]
    url = f"sqlite:///{tmp_path / 'both.db'}"
    cp = cp_ep.load()(url)
    store = store_ep.load()(url)
    assert isinstance(cp, SQLiteCheckpointer) and isinstance(store, SQLiteStore)
    # Checkpointer and store share one file without stepping on each other.
    cp.save("t", StepDelta(1, upserts=(HumanMessage("hi", id="h"),), values={"k": 1}))
    store.put(("ns",), "k", {"v": 1})
    cp.close()
    store.close()
    assert SQLiteCheckpointer(tmp_path / "both.db").load("t") == Checkpoint(
        1, [HumanMessage("hi", id="h")], {"k": 1}
    )
    item = SQLiteStore(tmp_path / "both.db").get(("ns",), "k")
    assert item is not None and item.value == {"v": 1}


def test_wal_and_secure_delete_are_on(tmp_path: Path) -> None:
    cp = SQLiteCheckpointer(tmp_path / "a.db")
    cp.save("t", StepDelta(1, upserts=(HumanMessage("secret"),)))
    with sqlite3.connect(tmp_path / "a.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with cp._db.connection() as conn:
        assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
    cp.close()


def test_a_file_that_is_not_a_database_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 200)
    with pytest.raises(StoreError, match="not a usable SQLite database") as info:
        SQLiteCheckpointer(path)
    assert str(path) in str(info.value)
    with pytest.raises(StoreError, match=r"notes\.db"):
        SQLiteStore.from_url(f"sqlite:///{path}")


def test_a_corrupted_database_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    cp = SQLiteCheckpointer(path)
    big = tuple(HumanMessage("x" * 2000, id=f"m{i}") for i in range(200))
    cp.save("t", StepDelta(1, upserts=big))
    cp.close()  # the last connection folds the WAL into the file
    data = bytearray(path.read_bytes())
    page = 4096
    data[page * 2 :] = b"\xa5" * (len(data) - page * 2)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        reopened = SQLiteCheckpointer(path)
        reopened.load("t")
    assert str(path) in str(info.value)


def test_a_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "a.db"
    with pytest.raises(StoreError, match="unable to open database file") as info:
        SQLiteCheckpointer(path)
    assert str(path) in str(info.value)


def test_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with SQLiteCheckpointer(path) as cp:
        cp.list_threads()  # first use creates the file and its schema
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE plait_meta SET value = '7' WHERE key = 'checkpointer.schema_version'")
    with pytest.raises(SchemaVersionError, match="schema version '7'") as info:
        SQLiteCheckpointer(path)
    assert str(path) in str(info.value)
    # The store's schema is versioned on its own and still opens.
    SQLiteStore(path).close()


def test_an_application_database_keeps_its_own_tables(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        conn.execute("INSERT INTO orders (item) VALUES ('tea')")
    cp = SQLiteCheckpointer(path)
    cp.save("t", StepDelta(1, upserts=(HumanMessage("hi"),)))
    cp.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT item FROM orders").fetchall() == [("tea",)]


def test_a_step_writes_only_the_rows_it_changed(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    cp = SQLiteCheckpointer(path)
    history = tuple(HumanMessage(f"m{i}", id=f"m{i}") for i in range(500))
    cp.save("t", StepDelta(1, upserts=history, values={"a": 1, "b": 2}))
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE audit (what TEXT);
            CREATE TRIGGER ai AFTER INSERT ON plait_messages
                BEGIN INSERT INTO audit VALUES ('insert ' || new.id); END;
            CREATE TRIGGER au AFTER UPDATE ON plait_messages
                BEGIN INSERT INTO audit VALUES ('update ' || new.id); END;
            CREATE TRIGGER ad AFTER DELETE ON plait_messages
                BEGIN INSERT INTO audit VALUES ('delete ' || old.id); END;
            CREATE TRIGGER vi AFTER INSERT ON plait_values
                BEGIN INSERT INTO audit VALUES ('insert value ' || new.key); END;
            CREATE TRIGGER vu AFTER UPDATE ON plait_values
                BEGIN INSERT INTO audit VALUES ('update value ' || new.key); END;
            """
        )
    cp.save(
        "t",
        StepDelta(
            2,
            removed=("m3",),
            upserts=(HumanMessage("edited", id="m7"), HumanMessage("new", id="m500")),
            values={"b": 3},
        ),
    )
    with sqlite3.connect(path) as conn:
        audit = sorted(row[0] for row in conn.execute("SELECT what FROM audit"))
    assert audit == ["delete m3", "insert m500", "update m7", "update value b"]
    loaded = cp.load("t")
    assert loaded is not None
    assert [m.id for m in loaded.messages][:8] == ["m0", "m1", "m2", "m4", "m5", "m6", "m7", "m8"]
    assert loaded.messages[6].text == "edited" and loaded.messages[-1].id == "m500"
    cp.close()


def test_closed_checkpointer_says_so(tmp_path: Path) -> None:
    cp = SQLiteCheckpointer(tmp_path / "c.db")
    cp.close()
    with pytest.raises(StoreError, match="is closed"):
        cp.load("t")


def test_a_finished_threads_connection_is_closed(tmp_path: Path) -> None:
    cp = SQLiteCheckpointer(tmp_path / "threads.db")
    cp.save("t", StepDelta(1, upserts=(HumanMessage("hi"),)))
    workers = [threading.Thread(target=cp.step, args=("t",)) for _ in range(20)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    gc.collect()
    assert len(cp._db._all) == 1  # only this thread's connection is still open
    cp.close()


def test_stores_opened_at_once_on_a_new_file_all_work(tmp_path: Path) -> None:
    """Six threads opening one new file at once: SQLite may refuse the switch to WAL with
    "database is locked" without waiting on its timeout; every store must still open."""
    for trial in range(60):
        path = str(tmp_path / f"new{trial}.db")
        stores = [SQLiteStore(path) for _ in range(6)]
        failures: list[BaseException] = []

        threads = [
            threading.Thread(target=_put_or_note, args=(s, i, failures))
            for i, s in enumerate(stores)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == [], f"trial {trial}: {failures}"
        assert len(stores[0].search(("t",))) == 6
        for store in stores:
            store.close()


def _put_or_note(store: SQLiteStore, index: int, failures: list[BaseException]) -> None:
    try:
        store.put(("t",), f"k{index}", index)
    except BaseException as exc:
        failures.append(exc)
