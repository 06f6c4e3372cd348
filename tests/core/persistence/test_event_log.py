"""Every built-in checkpointer is a run log (``plait.checkpoint.EventLog``): events
numbered per thread from 1, read back exactly from any number, appended only by the
writer that knows the last number, forgotten with the thread."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from plait.checkpoint import EventLog, StepDelta
from plait.errors import StoreError, ThreadBusyError
from plait.messages import HumanMessage


@pytest.fixture
def log(checkpointer_backend: Any) -> EventLog:
    made = checkpointer_backend.make()
    assert isinstance(made, EventLog)
    return made


EVENTS = [
    {"type": "run_started", "run_id": "r1"},
    {"type": "text", "message_id": "m1", "delta": "héllo ✓ 🧵"},
    {"type": "state", "values": {"todos": [{"content": "a", "done": False}], "n": 1.5}},
    {"type": "run_finished", "status": "success"},
]


def test_events_are_numbered_per_thread_and_read_back_exactly(log: EventLog) -> None:
    assert log.read_events("t1") == []
    assert log.last_event("t1") == 0
    assert log.append_events("t1", EVENTS[:2], after=0) == 2
    assert log.append_events("t2", [{"type": "other"}], after=0) == 1
    assert log.append_events("t1", EVENTS[2:], after=2) == 4
    assert log.read_events("t1") == list(enumerate(EVENTS, start=1))
    assert log.read_events("t2") == [(1, {"type": "other"})]
    assert log.last_event("t1") == 4


def test_reading_from_a_number_gives_exactly_the_later_events(log: EventLog) -> None:
    log.append_events("t", EVENTS, after=0)
    assert [n for n, _ in log.read_events("t", after=2)] == [3, 4]
    assert log.read_events("t", after=1, limit=2) == [(2, EVENTS[1]), (3, EVENTS[2])]
    assert log.read_events("t", after=4) == []
    assert log.read_events("t", after=0, limit=0) == []


def test_an_append_after_the_wrong_number_writes_nothing(log: EventLog) -> None:
    log.append_events("t", EVENTS[:1], after=0)
    with pytest.raises(ThreadBusyError, match="has 1 events, not 0"):
        log.append_events("t", EVENTS[1:], after=0)
    with pytest.raises(ThreadBusyError, match="has 1 events, not 3"):
        log.append_events("t", EVENTS[1:], after=3)
    assert log.read_events("t") == [(1, EVENTS[0])]


def test_an_event_json_cannot_hold_is_refused_before_anything_is_written(
    log: EventLog,
) -> None:
    with pytest.raises(StoreError, match="run-log event cannot be saved as JSON"):
        log.append_events("t", [{"ok": 1}, {"bad": object()}], after=0)
    assert log.last_event("t") == 0


def test_deleting_a_thread_forgets_its_events(log: EventLog, checkpointer_backend: Any) -> None:
    checkpointer = checkpointer_backend.make()
    checkpointer.save("t", StepDelta(1, upserts=(HumanMessage("hi", id="h"),)))
    log.append_events("t", EVENTS, after=0)
    log.append_events("other", EVENTS[:1], after=0)
    checkpointer.delete_thread("t")
    assert log.read_events("t") == []
    assert log.last_event("t") == 0
    assert log.read_events("other") == [(1, EVENTS[0])]
    assert log.append_events("t", EVENTS[:1], after=0) == 1


def test_a_second_client_of_the_same_location_reads_what_the_first_wrote(
    checkpointer_backend: Any,
) -> None:
    writer = checkpointer_backend.make()
    writer.append_events("t", EVENTS, after=0)
    reader = checkpointer_backend.make()
    assert reader.read_events("t", after=3) == [(4, EVENTS[3])]


def test_concurrent_writers_never_share_a_number(checkpointer_backend: Any) -> None:
    """Eight writers race to append 10 events each, retrying on a conflict: every event
    lands exactly once, numbered 1..80 with no gap."""
    clients = [checkpointer_backend.make() for _ in range(8)]
    conflicts: list[int] = []

    def write(index: int) -> None:
        client = clients[index]
        for n in range(10):
            while True:
                after = client.last_event("race")
                try:
                    client.append_events("race", [{"w": index, "n": n}], after=after)
                    break
                except ThreadBusyError:
                    conflicts.append(index)

    workers = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    events = clients[0].read_events("race")
    assert [n for n, _ in events] == list(range(1, 81))
    assert sorted((e["w"], e["n"]) for _, e in events) == [
        (w, n) for w in range(8) for n in range(10)
    ]
