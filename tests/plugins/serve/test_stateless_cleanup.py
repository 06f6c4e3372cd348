"""A stateless run's thread (``POST /runs/...``, deleted when its run ends) does not
outlive a server that stops mid-run: a server that stops gracefully deletes it as it
stops, and one killed mid-run (SIGKILL, a real process on SQLite or PostgreSQL) leaves
it to the next server to start on the database, which deletes it once the dead server's
lease on it has run out — never one whose server still lives (its lease is renewed while
the thread is kept, so a second server's start leaves it)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from lease_server import agent as waiter
from serve_helpers import Served
from test_served_run_lease import start_server
from test_served_run_lease import url as url  # SQLite and PostgreSQL

import plait
import plait_serve
from plait.checkpoint import HEARTBEAT_LEASE, EventLog, MemoryCheckpointer
from plait.errors import ConfigError
from plait.testing import ai, call
from plait_serve._runlog import REGISTRY

pytestmark = pytest.mark.waits  # a lease running out: started early (conftest)

ASK = {"assistant_id": "waiter", "input": {"messages": ["wait for ever"]}}


def tool_running(base: str) -> None:
    """Start a stateless run at ``base`` and return once its tool runs (mid-run)."""
    body = {**ASK, "stream_mode": ["updates"]}
    with httpx.Client(base_url=base, timeout=30) as client:
        with client.stream("POST", "/runs/stream", json=body) as response:
            assert response.status_code == 200
            buffer = ""
            for text in response.iter_text():
                buffer += text
                if '"tool_calls":[{' in buffer:
                    return
    raise AssertionError("the run's tool never started")


def test_a_graceful_stop_deletes_the_thread_of_a_stateless_run_going_on(
    serve: Callable[..., Served],
) -> None:
    started = threading.Event()

    def wait(reason: str) -> str:
        """Waits (until the server stops)."""
        started.set()
        time.sleep(3)
        return reason

    agent = plait.create_agent(
        plait.ScriptedChatModel([ai("", call("wait", reason="r")), "done"]),
        tools=[wait],
        checkpointer="memory",
        name="waiter",
    )
    served = serve(agent)
    with httpx.Client(base_url=served.url, timeout=30) as client:
        run = client.post("/runs", json=ASK).json()
        assert run["status"] == "running"
        assert started.wait(10)
        (thread,) = agent.list_threads()
        assert thread == run["thread_id"]
        kept = client.post("/runs", json={**ASK, "on_completion": "keep"})
        assert kept.status_code == 200
    served.stop()
    assert agent.list_threads() == [kept.json()["thread_id"]]  # kept: not a stateless run's


def test_a_killed_servers_stateless_thread_is_deleted_by_the_next_server_to_start(
    url: str, serve: Callable[..., Served]
) -> None:
    first, base = start_server(url)
    second: Any = None
    try:
        tool_running(base)
        (thread,) = waiter(url).list_threads()
        # A server starting beside a live one leaves that one's thread alone, past the
        # time a dead server's lease would have run out.
        second = serve(waiter(url))
        time.sleep(HEARTBEAT_LEASE + 3)
        assert waiter(url).list_threads() == [thread]
        second.stop()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    killed = time.monotonic()
    assert waiter(url).list_threads() == [thread]  # the dead server could not delete it

    third = serve(waiter(url))
    deadline = killed + HEARTBEAT_LEASE + 15
    while waiter(url).list_threads():
        assert time.monotonic() < deadline, "the dead server's stateless thread was kept"
        time.sleep(0.2)
    assert waiter(url).list_threads() == []
    with third.client() as client:  # the server goes on serving stateless runs
        lost = client.get(f"/threads/{thread}")
        assert lost.status_code == 404


def stateless(base: str, prompt: str) -> str:
    """Start a stateless run (``POST /runs``) at ``base`` asking ``prompt``; its thread."""
    with httpx.Client(base_url=base, timeout=30) as client:
        run = client.post("/runs", json={**ASK, "input": {"messages": [prompt]}})
        assert run.status_code == 200, run.text
        return str(run.json()["thread_id"])


def listed(log: Any) -> set[str]:
    """The threads the registry of stateless runs' threads lists."""
    return {event["thread"] for _, event in log.read_events(REGISTRY)}


def test_a_running_server_sweeps_what_a_killed_one_left_even_before_its_first_save(
    url: str, serve: Callable[..., Served]
) -> None:
    """A server sweeps every ``sweep_every`` s while it runs, not only as it starts: the
    threads of a server killed mid-run go once its lease has run out — one whose run was
    killed before its first save (its model never answered: no saved thread to list) as
    well as one killed in a tool — and the registry forgets them; the thread of a
    server that lives is left, however often the sweep passes."""
    store = waiter(url)
    log = store.checkpointer
    survivor = serve(waiter(url), sweep_every=1)  # its start's sweep found nothing
    killed, killed_base = start_server(url)
    alive, alive_base = start_server(url)
    try:
        hung = stateless(killed_base, "hang")
        in_tool = stateless(killed_base, "wait")
        kept = stateless(alive_base, "hang")
        deadline = time.monotonic() + 30
        while in_tool not in store.list_threads():  # its model's step saved: in the tool
            assert time.monotonic() < deadline, "the run never reached its tool"
            time.sleep(0.1)
        assert hung not in store.list_threads() and kept not in store.list_threads()
        assert log.read_events(hung, limit=1)[0][1]["temporary"] is True
        assert listed(log) == {hung, in_tool, kept}
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        gone = time.monotonic() + HEARTBEAT_LEASE + 15
        while log.read_events(hung) or log.read_events(in_tool):
            assert time.monotonic() < gone, "the killed server's stateless threads were kept"
            time.sleep(0.2)
        assert store.list_threads() == []
        assert log.run_lease(hung) is None and log.run_lease(in_tool) is None
        assert listed(log) == {kept}
        # The live server's thread outlasts its lease time (over by now: the killed
        # server's, taken after it, ran out) and a few more sweeps.
        time.sleep(3)
        assert log.read_events(kept, limit=1)[0][1]["temporary"] is True
        assert listed(log) == {kept}
        with survivor.client() as client:
            assert client.get(f"/threads/{hung}").status_code == 404
            assert stateless(survivor.url, "again").startswith("stateless-")
    finally:
        for process in (killed, alive):
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        store.close()


class NoLeases:
    """A custom checkpointer keeping a run log but no run leases (nor history)."""

    def __init__(self) -> None:
        self.inner = MemoryCheckpointer()

    def load(self, thread_id: str) -> Any:
        return self.inner.load(thread_id)

    def step(self, thread_id: str) -> int:
        return self.inner.step(thread_id)

    def save(self, thread_id: str, delta: Any) -> None:
        self.inner.save(thread_id, delta)

    def list_threads(self) -> list[str]:
        return self.inner.list_threads()

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    def append_events(self, thread_id: str, events: Any, *, after: int) -> int:
        return self.inner.append_events(thread_id, events, after=after)

    def read_events(self, thread_id: str, *, after: int = 0, limit: int | None = None) -> Any:
        return self.inner.read_events(thread_id, after=after, limit=limit)

    def last_event(self, thread_id: str) -> int:
        return self.inner.last_event(thread_id)


def left_behind(agent: plait.Agent, thread: str) -> None:
    """``thread`` as a killed server leaves a stateless run's: made, saved, not deleted."""
    record = {"type": "thread", "owner": "local", "created": time.time(), "temporary": True}
    assert isinstance(agent.checkpointer, EventLog)
    agent.checkpointer.append_events(thread, [record], after=0)
    agent.update_state(thread, {"messages": [plait.HumanMessage("wait for ever")]})


def test_without_run_leases_the_sweep_deletes_nothing_and_stateless_runs_still_clean_up(
    serve: Callable[..., Served],
) -> None:
    """A custom checkpointer without run leases cannot tell a dead server's thread from
    a live one's: the sweeps (at start and every ``sweep_every`` s) leave every thread,
    and a stateless run still deletes its own when it ends."""
    agent = plait.create_agent(
        plait.ScriptedChatModel(["done"] * 5), checkpointer=NoLeases(), name="waiter"
    )
    left_behind(agent, "stateless-left")
    served = serve(agent, sweep_every=0.05)
    lg = get_sync_client(url=served.url)
    result = lg.runs.wait(None, "waiter", input={"messages": ["hello"]})
    assert result["messages"][-1]["content"] == "done"  # type: ignore[call-overload]
    time.sleep(0.5)  # many sweeps
    assert agent.list_threads() == ["stateless-left"]
    assert agent.checkpointer.read_events(REGISTRY) == []  # type: ignore[union-attr]


def test_a_sweep_waiting_on_a_live_lease_is_cancelled_when_the_server_stops(
    serve: Callable[..., Served],
) -> None:
    """A sweep waits for the lease of a thread another server holds to run out; a
    server stopping meanwhile stops at once, the thread left to its holder."""
    agent = plait.create_agent(plait.ScriptedChatModel([]), checkpointer="memory", name="waiter")
    left_behind(agent, "stateless-held")
    log = agent.checkpointer
    assert isinstance(log, MemoryCheckpointer)
    log.renew_lease("stateless-held", "another-servers-run", HEARTBEAT_LEASE)
    served = serve(agent)
    time.sleep(0.3)  # the start's sweep found it held: it waits for the lease
    started = time.monotonic()
    served.stop()
    assert not served.thread.is_alive()
    assert time.monotonic() - started < HEARTBEAT_LEASE / 2
    assert agent.list_threads() == ["stateless-held"]


def test_the_registry_is_no_clients_thread_and_sweep_every_is_checked(
    serve: Callable[..., Served],
) -> None:
    """No client names the registry; a memory checkpointer, which no other process
    shares, keeps none; ``sweep_every`` is a positive number of seconds or None."""
    agent = plait.create_agent(
        plait.ScriptedChatModel(["done"]), checkpointer="memory", name="waiter"
    )
    with serve(agent).client() as client:
        ran = client.post("/runs/wait", json={**ASK, "input": {"messages": ["hi"]}})
        assert ran.json()["messages"][-1]["content"] == "done"
        assert agent.list_threads() == []
        assert agent.checkpointer.read_events(REGISTRY) == []  # type: ignore[union-attr]
        refused = client.post("/threads", json={"thread_id": REGISTRY})
        assert refused.status_code == 422
        assert refused.json()["error"]["message"] == (
            f"thread_id: expected an id other than {REGISTRY!r}, one of the server's own "
            "lists of threads"
        )
        assert client.get(f"/threads/{REGISTRY}/state").status_code == 422
    for bad in (0, -1, True, "60", float("nan"), float("inf")):
        with pytest.raises(ConfigError) as info:
            plait_serve.app(agent, sweep_every=bad)  # type: ignore[arg-type]
        assert str(info.value) == (
            f"plait-serve: sweep_every: expected a positive number of seconds or None, got {bad!r}"
        )
