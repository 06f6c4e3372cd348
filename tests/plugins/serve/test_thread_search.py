"""``POST /threads/search`` finds a thread made with ``POST /threads`` before it has run
(as LangGraph's server does), on memory, SQLite and PostgreSQL, with langgraph-sdk: its
metadata filters it, another key never sees it, a run on it keeps it found once, and a
deleted one is gone; the server's list of such threads forgets each row once its thread
saved a step or was deleted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from langgraph_sdk import get_sync_client
from serve_helpers import Served

import plait
from plait.checkpoint import EventLog
from plait_serve._runlog import CREATED

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef"


def ids(found: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return [t["thread_id"] for t in found]


def test_threads_made_before_any_run_are_found_by_metadata_and_only_by_their_key(
    serve: Callable[..., Served], checkpointer_url: str
) -> None:
    agent = plait.create_agent(
        plait.ScriptedChatModel(["one", "two"]), checkpointer=checkpointer_url, name="helper"
    )
    served = serve(agent, keys=[ALICE, BOB])
    alice = get_sync_client(url=served.url, api_key=ALICE)
    bob = get_sync_client(url=served.url, api_key=BOB)

    first = alice.threads.create(metadata={"user": "ann", "tier": "gold"})["thread_id"]
    second = alice.threads.create(metadata={"user": "ann", "tier": "free"})["thread_id"]
    # Bob's thread of the same id and metadata is his own: each key sees only its own
    same = bob.threads.create(thread_id=first, metadata={"user": "ann", "tier": "gold"})
    assert same["thread_id"] == first
    bobs = bob.threads.create(metadata={"user": "bo"})["thread_id"]

    assert agent.list_threads() == []  # none has saved a step
    assert ids(alice.threads.search()) == [second, first]  # newest first
    found = alice.threads.search(metadata={"user": "ann", "tier": "gold"})
    assert ids(found) == [first]
    assert found[0]["metadata"] == {"user": "ann", "tier": "gold"}
    assert found[0]["status"] == "idle"
    assert ids(alice.threads.search(metadata={"tier": "free"})) == [second]
    assert alice.threads.search(metadata={"user": "bo"}) == []
    assert ids(alice.threads.search(ids=[first])) == [first]
    assert ids(alice.threads.search(status="idle", limit=1, offset=1)) == [first]
    assert ids(bob.threads.search()) == [bobs, first]
    assert ids(bob.threads.search(metadata={"tier": "gold"})) == [first]

    # A run on one: found once (it is saved now), with its state
    alice.runs.wait(first, "helper", input={"messages": [{"role": "user", "content": "hi"}]})
    assert len(agent.list_threads()) == 1
    found = alice.threads.search(metadata={"tier": "gold"})
    assert ids(found) == [first]
    assert found[0]["values"]["messages"][-1]["content"] == "one"
    assert ids(alice.threads.search()) == [second, first]
    assert ids(bob.threads.search(metadata={"tier": "gold"})) == [first]
    assert bob.threads.get_state(first)["values"] == {"messages": []}  # his has not run

    alice.threads.delete(second)
    assert ids(alice.threads.search()) == [first]
    bob.threads.delete(bobs)
    assert ids(bob.threads.search()) == [first]

    # The list keeps only threads not saved yet and not deleted: Bob's ``first`` (the
    # newest row, ``bobs``'s, is kept until a newer one: its number must not be reused)
    log = agent.checkpointer
    assert isinstance(log, EventLog)
    listed = [event["thread"] for _, event in log.read_events(CREATED)]
    assert len(listed) == 2
    assert listed[0].endswith(first) and listed[0] != first  # Bob's scoped id
    bob.threads.create(metadata={"user": "cy"})
    bob.threads.search()
    listed = [event["thread"] for _, event in log.read_events(CREATED)]
    assert len(listed) == 2 and listed[0].endswith(first)


def test_a_restarted_server_finds_the_threads_made_before_it(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"

    def agent() -> plait.Agent:
        return plait.create_agent(plait.ScriptedChatModel([]), checkpointer=url, name="helper")

    first = get_sync_client(url=serve(agent(), keys=[ALICE]).url, api_key=ALICE)
    made = first.threads.create(metadata={"user": "ann"})["thread_id"]
    again = get_sync_client(url=serve(agent(), keys=[ALICE]).url, api_key=ALICE)
    assert ids(again.threads.search(metadata={"user": "ann"})) == [made]
    other = get_sync_client(url=serve(agent(), keys=[BOB]).url, api_key=BOB)
    assert other.threads.search() == []
