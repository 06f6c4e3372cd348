"""Every checkpointer keeps the same promises as ``MemoryCheckpointer``, the reference:
exact round-trips, ``StepDelta`` semantics across steps, compare-and-set, thread listing
and deletion, and no interleaving under concurrent writers (threads and processes)."""

from __future__ import annotations

import multiprocessing
import random
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.checkpoint import Checkpoint, Checkpointer, StepDelta, apply_delta
from plait.errors import StoreError, ThreadBusyError
from plait.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
)


@pytest.fixture
def cp(checkpointer_backend: Any) -> Checkpointer:
    made: Checkpointer = checkpointer_backend.make()
    return made


def human(text: str) -> HumanMessage:
    return HumanMessage(text, id=f"m-{text}")


def ids(checkpoint: Checkpoint | None) -> list[str]:
    assert checkpoint is not None
    return [m.id for m in checkpoint.messages]


RICH_MESSAGES: list[AnyMessage] = [
    SystemMessage("You are terse.", metadata={"source": "config"}),
    HumanMessage(
        [
            {"type": "text", "text": "héllo ✓ 🧵 with a NUL \x00 inside"},
            {"type": "image", "url": "https://example.com/a.png", "detail": {"x": [1, 2]}},
        ],
        metadata={"redacted": False, "tags": ["a", "b"]},
    ),
    AIMessage(
        "",
        tool_calls=[
            ToolCall("get_weather", {"city": "Paris", "days": 3, "opts": {"units": None}}, "c1"),
            ToolCall("broken", {}, "c2", error="arguments were not valid JSON"),
        ],
        usage=Usage(12, 7, cache_read_tokens=3),
        response_metadata={"model": "scripted", "finish_reason": "tool_calls"},
    ),
    ToolMessage("18°C", tool_call_id="c1", name="get_weather"),
    ToolMessage("bad args", tool_call_id="c2", name="broken", status="error"),
    AIMessage("It is 18°C in Paris.", usage=Usage(30, 9)),
]

RICH_VALUES: dict[str, Any] = {
    "counts": {"thread": 3, "run": {"get_weather": 1}},
    "todos": [{"content": "ü", "status": "pending"}, None, True, 2.5, -0.0, 2**62],
    "empty": {},
    "nothing": None,
    "text": 'line\nbreak "quoted" \\ back',
}


def test_unknown_thread_is_absent(cp: Checkpointer) -> None:
    assert cp.load("never-saved") is None
    assert cp.step("never-saved") == 0
    assert "never-saved" not in cp.list_threads()


def test_exact_round_trip(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, upserts=tuple(RICH_MESSAGES), values=RICH_VALUES))
    loaded = cp.load("t")
    assert loaded == Checkpoint(1, RICH_MESSAGES, RICH_VALUES)
    assert [type(m) for m in loaded.messages] == [type(m) for m in RICH_MESSAGES]
    assert cp.step("t") == 1


def test_state_survives_reopening(checkpointer_backend: Any) -> None:
    if not checkpointer_backend.durable:
        pytest.skip("only durable backends can be reopened")
    first = checkpointer_backend.make()
    first.save("t", StepDelta(1, upserts=tuple(RICH_MESSAGES), values=RICH_VALUES))
    first.save("t", StepDelta(2, removed=(RICH_MESSAGES[0].id,), values={"nothing": 1}))
    first.close()
    reopened = checkpointer_backend.make()
    assert reopened.load("t") == Checkpoint(2, RICH_MESSAGES[1:], {**RICH_VALUES, "nothing": 1})


def test_upsert_replaces_in_place_and_appends_new(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, upserts=(human("a"), human("b"), human("c"))))
    edited = HumanMessage("B, redacted", id="m-b", metadata={"pii": "email"})
    cp.save("t", StepDelta(2, upserts=(edited, human("d"))))
    loaded = cp.load("t")
    assert loaded is not None
    assert [m.text for m in loaded.messages] == ["a", "B, redacted", "c", "d"]
    assert loaded.messages[1].metadata == {"pii": "email"}
    assert loaded.step == 2


def test_remove_then_readd_goes_to_the_end(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, upserts=(human("a"), human("b"), human("c"))))
    cp.save("t", StepDelta(2, removed=("m-a", "m-unknown")))
    assert ids(cp.load("t")) == ["m-b", "m-c"]
    # Removed and upserted in one step: deleted first, then appended.
    cp.save("t", StepDelta(3, removed=("m-b",), upserts=(HumanMessage("b again", id="m-b"),)))
    loaded = cp.load("t")
    assert ids(loaded) == ["m-c", "m-b"]
    assert loaded is not None and loaded.messages[1].text == "b again"


def test_reset_clears_before_upserts(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, upserts=(human("a"), human("b"))))
    summary = SystemMessage("summary of a and b", id="summary")
    cp.save("t", StepDelta(2, reset=True, upserts=(summary, human("b"))))
    assert ids(cp.load("t")) == ["summary", "m-b"]
    cp.save("t", StepDelta(3, reset=True))
    loaded = cp.load("t")
    assert loaded == Checkpoint(3, [], {})


def test_same_id_twice_in_one_step_keeps_first_place_last_version(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, upserts=(human("a"),)))
    cp.save(
        "t",
        StepDelta(2, upserts=(HumanMessage("v1", id="x"), human("b"), HumanMessage("v2", id="x"))),
    )
    loaded = cp.load("t")
    assert loaded is not None
    assert [(m.id, m.text) for m in loaded.messages] == [("m-a", "a"), ("x", "v2"), ("m-b", "b")]


def test_values_replace_only_the_keys_written(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, values={"a": 1, "b": {"x": [1]}}))
    cp.save("t", StepDelta(2, values={"b": {"y": 2}, "c": None}))
    loaded = cp.load("t")
    assert loaded is not None
    assert loaded.values == {"a": 1, "b": {"y": 2}, "c": None}
    assert loaded.messages == []


def test_a_value_that_is_not_json_fails_and_writes_nothing(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, upserts=(human("a"),), values={"k": 1}))
    with pytest.raises(StoreError, match=r"^state key 'k' cannot be saved as JSON"):
        cp.save("t", StepDelta(2, upserts=(human("b"),), values={"k": object()}))
    assert cp.load("t") == Checkpoint(1, [human("a")], {"k": 1})


def test_random_deltas_match_the_reference_semantics(cp: Checkpointer) -> None:
    rng = random.Random(4)
    expected: list[AnyMessage] = []
    values: dict[str, Any] = {}
    pool = [f"id{i}" for i in range(12)]
    for step in range(1, 41):
        delta = StepDelta(
            step,
            reset=rng.random() < 0.08,
            removed=tuple(rng.sample(pool, rng.randint(0, 3))),
            upserts=tuple(
                HumanMessage(f"s{step}-{k}", id=rng.choice(pool)) for k in range(rng.randint(0, 4))
            ),
            values={rng.choice("abc"): [step, rng.random()] for _ in range(rng.randint(0, 2))},
        )
        expected = apply_delta(expected, delta)
        values.update(delta.values)
        cp.save("t", delta)
        assert cp.load("t") == Checkpoint(step, expected, values), f"after step {step}"


def test_compare_and_set_rejects_a_stale_writer(cp: Checkpointer) -> None:
    cp.save("t", StepDelta(1, upserts=(human("a"),), values={"k": 1}))
    with pytest.raises(ThreadBusyError, match=r"'t' is at step 1, not 0"):
        cp.save("t", StepDelta(1, upserts=(human("stale"),), values={"k": 2}))
    with pytest.raises(ThreadBusyError, match=r"at step 1, not 2"):
        cp.save("t", StepDelta(3, reset=True))
    # The rejected writes left nothing behind.
    assert cp.load("t") == Checkpoint(1, [human("a")], {"k": 1})
    cp.save("t", StepDelta(2, upserts=(human("b"),)))
    assert ids(cp.load("t")) == ["m-a", "m-b"]


def test_a_new_thread_must_start_at_step_one(cp: Checkpointer) -> None:
    with pytest.raises(ThreadBusyError):
        cp.save("t", StepDelta(2, upserts=(human("a"),)))
    assert cp.load("t") is None
    assert cp.list_threads() == []


def test_list_and_delete_threads(cp: Checkpointer) -> None:
    for name in ("first", "second", "third"):
        cp.save(name, StepDelta(1, upserts=(human(name),), values={"name": name}))
    cp.save("first", StepDelta(2, upserts=(human("more"),)))
    assert cp.list_threads() == ["first", "second", "third"]

    cp.delete_thread("second")
    cp.delete_thread("never-existed")
    assert cp.list_threads() == ["first", "third"]
    assert cp.load("second") is None
    assert cp.step("second") == 0
    assert cp.load("first") == Checkpoint(2, [human("first"), human("more")], {"name": "first"})

    # A deleted thread starts over, empty, and is now the newest.
    cp.save("second", StepDelta(1, upserts=(human("again"),)))
    assert cp.load("second") == Checkpoint(1, [human("again")], {})
    assert cp.list_threads() == ["first", "third", "second"]


def test_threads_are_independent(cp: Checkpointer) -> None:
    shared = HumanMessage("one", id="same-id")
    cp.save("a", StepDelta(1, upserts=(shared,), values={"k": "a"}))
    cp.save("b", StepDelta(1, upserts=(HumanMessage("two", id="same-id"),), values={"k": "b"}))
    cp.save("a", StepDelta(2, reset=True))
    assert cp.load("a") == Checkpoint(2, [], {"k": "a"})
    loaded = cp.load("b")
    assert loaded is not None and [m.text for m in loaded.messages] == ["two"]


def test_only_one_of_many_simultaneous_first_writers_wins(checkpointer_backend: Any) -> None:
    clients = [checkpointer_backend.make() for _ in range(8)]
    barrier = threading.Barrier(len(clients))
    outcomes: dict[int, str] = {}

    def attempt(index: int) -> None:
        barrier.wait()
        try:
            clients[index].save("t", StepDelta(1, upserts=(human(f"w{index}"),)))
            outcomes[index] = "won"
        except ThreadBusyError:
            outcomes[index] = "busy"

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == len(clients)
    assert len(winners) == 1
    assert ids(clients[0].load("t")) == [f"m-w{winners[0]}"]


def _append_with_retries(cp: Checkpointer, thread_id: str, worker: str, count: int) -> None:
    done = 0
    while done < count:
        step = cp.step(thread_id)
        message = HumanMessage(f"{worker}:{done}", id=f"{worker}:{done}")
        try:
            cp.save(thread_id, StepDelta(step + 1, upserts=(message,), values={worker: done}))
        except ThreadBusyError:
            continue
        done += 1


def _assert_no_interleaving(cp: Checkpointer, workers: list[str], count: int) -> None:
    loaded = cp.load("shared")
    assert loaded is not None
    texts = [m.text for m in loaded.messages]
    assert loaded.step == len(workers) * count
    assert sorted(texts) == sorted(f"{w}:{i}" for w in workers for i in range(count))
    for worker in workers:
        mine = [int(t.split(":")[1]) for t in texts if t.startswith(worker + ":")]
        assert mine == list(range(count)), f"{worker}'s messages out of order"
    assert loaded.values == {w: count - 1 for w in workers}


def test_concurrent_writer_threads_never_interleave(checkpointer_backend: Any) -> None:
    workers = [f"w{i}" for i in range(6)]
    clients = {w: checkpointer_backend.make() for w in workers}
    threads = [
        threading.Thread(target=_append_with_retries, args=(clients[w], "shared", w, 15))
        for w in workers
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _assert_no_interleaving(clients["w0"], workers, 15)


WORKER_SCRIPT = textwrap.dedent(
    """
    import sys
    from plait.checkpoint import StepDelta
    from plait.errors import ThreadBusyError
    from plait.messages import HumanMessage

    kind, url, worker, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if kind == "sqlite":
        from plait.persistence.sqlite import SQLiteCheckpointer as Checkpointer
    else:
        from plait_postgres import PostgresCheckpointer as Checkpointer
    cp = Checkpointer.from_url(url)
    done = 0
    while done < count:
        step = cp.step("shared")
        message = HumanMessage(f"{worker}:{done}", id=f"{worker}:{done}")
        try:
            cp.save("shared", StepDelta(step + 1, upserts=(message,), values={worker: done}))
        except ThreadBusyError:
            continue
        done += 1
    """
)


def test_concurrent_writer_processes_never_interleave(
    checkpointer_backend: Any, tmp_path: Path
) -> None:
    if checkpointer_backend.url is None:
        pytest.skip("an in-memory checkpointer is not shared between processes")
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    cp = checkpointer_backend.make()  # creates the schema before the workers race
    workers = [f"p{i}" for i in range(4)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                checkpointer_backend.kind,
                checkpointer_backend.url,
                w,
                "25",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in workers
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    _assert_no_interleaving(cp, workers, 25)


def test_a_forked_child_uses_its_own_connections(checkpointer_backend: Any) -> None:
    """Servers that fork workers after building the agent (gunicorn --preload...)."""
    if not checkpointer_backend.durable:
        pytest.skip("a forked child gets a copy of an in-memory checkpointer, not a share")
    cp = checkpointer_backend.make()
    cp.save("t", StepDelta(1, upserts=(human("parent"),)))

    def child() -> None:
        cp.save("t", StepDelta(cp.step("t") + 1, upserts=(human("child"),)))

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    process.join()
    assert process.exitcode == 0
    cp.save("t", StepDelta(3, upserts=(human("parent again"),)))
    assert ids(cp.load("t")) == ["m-parent", "m-child", "m-parent again"]


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
MESSAGE_IDS = st.sampled_from([f"id{i}" for i in range(8)])
MESSAGES = st.builds(
    lambda cls, text, mid, meta: cls(text, id=mid, metadata=meta),
    st.sampled_from([HumanMessage, AIMessage, SystemMessage]),
    st.text(),
    MESSAGE_IDS,
    st.dictionaries(st.text(max_size=5), JSON, max_size=2),
)
DELTAS = st.lists(
    st.tuples(
        st.sampled_from([False] * 9 + [True]),  # reset: now and then
        st.lists(MESSAGE_IDS, max_size=3),
        st.lists(MESSAGES, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "c", "ü"]), JSON, max_size=2),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=DELTAS)
def test_any_delta_sequence_matches_the_reference(
    cp: Checkpointer, steps: list[tuple[bool, list[str], list[AnyMessage], dict[str, Any]]]
) -> None:
    thread = uuid.uuid4().hex  # one fixture serves every example: keep them apart
    expected: list[AnyMessage] = []
    values: dict[str, Any] = {}
    for number, (reset, removed, upserts, written) in enumerate(steps, start=1):
        delta = StepDelta(number, reset, tuple(removed), tuple(upserts), written)
        expected = apply_delta(expected, delta)
        values.update(written)
        cp.save(thread, delta)
    assert cp.load(thread) == Checkpoint(len(steps), expected, values)


# -- what JSON can and cannot hold: the same answer from every checkpointer ---------------

SURROGATES = "r\udce9sum\udcc3\udca9.txt"  # a Latin-1 file name read with surrogateescape


def test_lone_surrogates_round_trip(cp: Checkpointer) -> None:
    messages = [
        HumanMessage(f"open {SURROGATES}", id="h"),
        AIMessage("", tool_calls=[ToolCall("read", {"path": SURROGATES}, "c1")], id="a"),
        ToolMessage(f"{SURROGATES}: \ud800 half", tool_call_id="c1", name="read", id="t"),
    ]
    values = {"files": {SURROGATES: {"content": "\udcff"}}}
    cp.save("t", StepDelta(1, upserts=tuple(messages), values=values))
    assert cp.load("t") == Checkpoint(1, messages, values)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (
            StepDelta(
                1,
                upserts=(AIMessage("", tool_calls=[ToolCall("t", _nested(5000), "c")], id="deep"),),
            ),
            "message 'deep' (ai) is nested too deeply to be saved as JSON",
        ),
        (
            StepDelta(1, upserts=(HumanMessage([{"type": "image", "data": b"\x89PNG"}], id="b"),)),
            "message 'b' (human) cannot be saved as JSON: Object of type bytes",
        ),
        (
            StepDelta(1, values={"ok": 1, "when": object()}),
            "state key 'when' cannot be saved as JSON: Object of type object",
        ),
        (
            StepDelta(1, values={"deep": _nested(5000)}),
            "state key 'deep' is nested too deeply to be saved as JSON",
        ),
    ],
)
def test_what_json_cannot_hold_is_one_clear_error(
    cp: Checkpointer, delta: StepDelta, expected: str
) -> None:
    with pytest.raises(StoreError) as info:
        cp.save("t", delta)
    assert str(info.value).startswith(expected)
    assert cp.load("t") is None  # nothing half-saved
