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
from lease_server import agent as waiter
from serve_helpers import Served
from test_served_run_lease import start_server
from test_served_run_lease import url as url  # SQLite and PostgreSQL

import plait
from plait.checkpoint import HEARTBEAT_LEASE
from plait.testing import ai, call

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
