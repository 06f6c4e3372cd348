"""Every built-in checkpointer keeps each step of a thread (``plait.checkpoint.History``):
any kept step loads back exactly as it was saved, forks share their parent's steps, and
retention forgets the oldest steps, never the latest state."""

from __future__ import annotations

import time
from typing import Any

import pytest

from plait.checkpoint import Checkpoint, History, HistoryError, StepDelta
from plait.messages import AIMessage, HumanMessage, ToolMessage


@pytest.fixture
def cp(checkpointer_backend: Any) -> Any:
    made = checkpointer_backend.make()
    assert isinstance(made, History)
    return made


def _h(text: str, id: str) -> HumanMessage:
    return HumanMessage(text, id=id)


DELTAS = [
    StepDelta(1, upserts=(_h("hi", "m1"),), values={"n": 1}, run_id="r1", node="before_agent"),
    StepDelta(
        2, upserts=(AIMessage("hello", id="m2"),), values={"n": 2}, run_id="r1", node="model"
    ),
    # replaces m1 in place, adds a key
    StepDelta(3, upserts=(_h("hi (edited)", "m1"),), values={"todo": ["a"]}, run_id="r1", node="x"),
    StepDelta(4, removed=("m2",), upserts=(_h("again", "m3"),), run_id="r2", node="model"),
    # a summary: every message replaced by one
    StepDelta(
        5,
        reset=True,
        upserts=(AIMessage("summary", id="s"),),
        values={"n": 5},
        run_id="r2",
        node="summarize",
    ),
    StepDelta(
        6, upserts=(ToolMessage("ok", tool_call_id="c", id="m6"),), run_id="r2", node="tools"
    ),
]


def _save_all(cp: Any, thread: str = "t") -> list[Checkpoint]:
    seen = []
    for delta in DELTAS:
        cp.save(thread, delta)
        seen.append(cp.load(thread))
    return seen


def test_every_kept_step_loads_back_exactly_as_it_was_saved(cp: Any) -> None:
    seen = _save_all(cp)
    for step, expected in enumerate(seen, start=1):
        assert cp.load_step("t", step) == expected
    assert cp.load_step("t", 0) == Checkpoint(0, [], {})
    assert cp.load("t") == seen[-1]  # history never changes the latest state


def test_history_lists_steps_newest_first_with_run_node_and_time(cp: Any) -> None:
    before = time.time()
    _save_all(cp)
    history = cp.history("t")
    assert [(i.step, i.run_id, i.node) for i in history] == [
        (6, "r2", "tools"),
        (5, "r2", "summarize"),
        (4, "r2", "model"),
        (3, "r1", "x"),
        (2, "r1", "model"),
        (1, "r1", "before_agent"),
    ]
    assert all(before - 1 <= i.time <= time.time() + 1 for i in history)
    assert cp.history("nobody") == []


def test_a_step_that_is_not_kept_is_refused_in_one_line(cp: Any) -> None:
    _save_all(cp)
    with pytest.raises(
        HistoryError, match=r"^thread 't' has no step 9: the steps kept are 1 to 6$"
    ):
        cp.load_step("t", 9)
    with pytest.raises(HistoryError, match=r"^thread 'x' has no saved steps$"):
        cp.load_step("x", 1)


def test_a_fork_is_its_parent_at_the_step_and_then_goes_its_own_way(cp: Any) -> None:
    seen = _save_all(cp)
    cp.fork("t", 3, "f")
    assert cp.step("f") == 3
    assert cp.load("f") == seen[2]
    assert "f" in cp.list_threads()
    # the fork's history is its parent's up to the fork point
    assert [i.step for i in cp.history("f")] == [3, 2, 1]
    cp.save("f", StepDelta(4, upserts=(_h("other way", "o1"),), run_id="r9", node="model"))
    mine = cp.load("f")
    assert [m.content for m in mine.messages] == ["hi (edited)", "hello", "other way"]
    assert [(i.step, i.run_id) for i in cp.history("f")][:2] == [(4, "r9"), (3, "r1")]
    assert cp.load_step("f", 3) == seen[2]
    assert cp.load_step("f", 1) == seen[0]
    # the parent is untouched
    assert cp.load("t") == seen[-1]
    assert cp.load_step("t", 4) == seen[3]


def test_a_fork_of_a_fork_and_the_parent_moving_on(cp: Any) -> None:
    seen = _save_all(cp)
    cp.fork("t", 2, "f1")
    cp.fork("f1", 1, "f2")
    assert cp.load("f2") == seen[0]
    cp.save("t", StepDelta(7, upserts=(_h("later", "l"),), run_id="r3", node="model"))
    assert cp.load("f1") == seen[1]
    assert cp.load_step("f2", 1) == seen[0]


def test_forking_onto_an_existing_thread_or_a_missing_step_is_refused(cp: Any) -> None:
    _save_all(cp)
    cp.save("other", DELTAS[0])
    with pytest.raises(HistoryError, match=r"^cannot fork onto thread 'other': it exists$"):
        cp.fork("t", 2, "other")
    with pytest.raises(HistoryError, match="has no step 8"):
        cp.fork("t", 8, "new")
    assert "new" not in cp.list_threads()


def test_deleting_the_parent_leaves_its_forks_whole(cp: Any) -> None:
    seen = _save_all(cp)
    cp.fork("t", 4, "f")
    cp.delete_thread("t")
    assert cp.load("f") == seen[3]
    cp.save("f", StepDelta(5, upserts=(_h("go on", "g"),)))
    assert [m.content for m in cp.load("f").messages][-1] == "go on"


def test_a_fork_keeps_its_history_when_its_parent_is_deleted(cp: Any) -> None:
    # The fork's steps up to its fork point were its parent's records: deleting the parent
    # leaves them listed and loadable from the fork, written to or not (SQLite and
    # PostgreSQL dropped them, so a fork at step 4 listed no step at all; memory kept them).
    # They are listed under the fork's own thread id: the parent is gone (memory listed
    # them under the deleted parent's id, which a new thread may take).
    seen = _save_all(cp)
    cp.fork("t", 4, "fresh")
    cp.fork("t", 3, "written")
    cp.save("written", StepDelta(4, upserts=(_h("mine", "w"),), run_id="rw", node="model"))
    cp.delete_thread("t")
    assert [i.step for i in cp.history("fresh")] == [4, 3, 2, 1]
    assert [i.step for i in cp.history("written")] == [4, 3, 2, 1]
    assert {i.thread_id for i in cp.history("fresh")} == {"fresh"}
    assert {i.thread_id for i in cp.history("written")} == {"written"}
    assert [(i.run_id, i.node) for i in cp.history("fresh")][1:] == [
        ("r1", "x"),
        ("r1", "model"),
        ("r1", "before_agent"),
    ]
    for step in (1, 2, 3, 4):
        assert cp.load_step("fresh", step) == seen[step - 1]
    for step in (1, 2, 3):
        assert cp.load_step("written", step) == seen[step - 1]


def test_a_fork_of_a_fork_keeps_its_history_when_the_middle_one_is_deleted(cp: Any) -> None:
    seen = _save_all(cp)
    cp.fork("t", 2, "mid")
    cp.save("mid", StepDelta(3, upserts=(_h("mid", "x"),), run_id="rm", node="model"))
    cp.save("mid", StepDelta(4, upserts=(_h("mid 2", "y"),), run_id="rm", node="model"))
    mid_at_3 = cp.load_step("mid", 3)
    cp.fork("mid", 3, "leaf")
    cp.fork("mid", 1, "low")  # below mid's own fork point: "t"'s step
    cp.delete_thread("mid")
    assert [(i.thread_id, i.step) for i in cp.history("low")] == [("t", 1)]
    assert cp.load_step("low", 1) == cp.load("low") == seen[0]
    # Step 3 was the deleted thread's record, now the leaf's; 2 and 1 are still "t"'s.
    assert [(i.thread_id, i.step) for i in cp.history("leaf")] == [
        ("leaf", 3),
        ("t", 2),
        ("t", 1),
    ]
    assert cp.load_step("leaf", 3) == mid_at_3
    assert cp.load_step("leaf", 2) == seen[1]
    assert cp.load_step("leaf", 1) == seen[0]


def test_prune_by_age_forgets_old_steps_never_the_latest(cp: Any) -> None:
    seen = _save_all(cp)
    assert cp.prune(before=0.0) == 0
    forgotten = cp.prune(before=time.time() + 10)
    assert forgotten == 5
    assert [i.step for i in cp.history("t")] == [6]
    assert cp.load("t") == seen[-1]
    with pytest.raises(HistoryError, match="the steps kept are 6 to 6"):
        cp.load_step("t", 4)


def test_keep_steps_bounds_each_threads_history(checkpointer_backend: Any) -> None:
    cp = checkpointer_backend.make()
    cp.keep_steps = 3
    seen = _save_all(cp)
    assert [i.step for i in cp.history("t")] == [6, 5, 4]
    assert cp.load_step("t", 3) == seen[2]  # step 3 is what step 4's record undoes to
    with pytest.raises(HistoryError):
        cp.load_step("t", 2)


def test_keep_steps_spares_what_an_unwritten_fork_reads(checkpointer_backend: Any) -> None:
    cp = checkpointer_backend.make()
    cp.keep_steps = 2
    seen = _save_all(cp)
    cp.fork("t", 5, "f")
    for step in range(7, 12):
        cp.save("t", StepDelta(step, upserts=(_h(str(step), f"x{step}"),)))
    assert cp.load("f") == seen[4]


def test_keep_steps_in_the_url(checkpointer_backend: Any) -> None:
    from plait.errors import MalformedURLError

    url = checkpointer_backend.url
    if url is None:
        pytest.skip("this checkpointer is not opened by URL")
    cls = type(checkpointer_backend.make())
    sep = "&" if "?" in url else "?"
    opened = cls.from_url(f"{url}{sep}keep_steps=2")
    assert opened.keep_steps == 2
    opened.close()
    opened = cls.from_url(f"{url}{sep}keep_steps=all")
    assert opened.keep_steps is None
    opened.close()
    assert cls.from_url(url).keep_steps == 1000
    with pytest.raises(
        MalformedURLError, match=r"keep_steps=0: expected a whole number of at least 1 or 'all'$"
    ):
        cls.from_url(f"{url}{sep}keep_steps=0")


def _message_rows(backend: Any, thread: str) -> int:
    """Rows the database holds for ``thread``'s messages, read with the driver itself."""
    if backend.kind == "sqlite":
        import sqlite3

        from plait.persistence.sqlite import parse_sqlite_url

        with sqlite3.connect(parse_sqlite_url(backend.url)[0]) as conn:
            query = "SELECT count(*) FROM plait_messages WHERE thread = ?"
            return int(conn.execute(query, (thread,)).fetchone()[0])
    import psycopg

    from plait_postgres._postgres import parse_postgres_url

    conninfo, schema = parse_postgres_url(backend.url)
    with psycopg.connect(conninfo) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        query = "SELECT count(*) FROM plait_messages WHERE thread = %s"
        row = conn.execute(query, (thread,)).fetchone()
        assert row is not None
        return int(row[0])


def test_a_fork_copies_nothing_until_it_is_written_to(checkpointer_backend: Any) -> None:
    if not checkpointer_backend.durable:
        pytest.skip("a database checkpointer: memory shares its strings anyway")
    cp = checkpointer_backend.make()
    seen = _save_all(cp)
    assert _message_rows(checkpointer_backend, "t") == 2
    cp.fork("t", 4, "f")
    assert _message_rows(checkpointer_backend, "f") == 0  # a parent pointer, no copy
    assert cp.load("f") == seen[3]
    cp.save("f", StepDelta(5, upserts=(_h("mine", "mine"),)))
    assert _message_rows(checkpointer_backend, "f") == 3  # written on its first save
    assert [m.content for m in cp.load("f").messages] == ["hi (edited)", "again", "mine"]
