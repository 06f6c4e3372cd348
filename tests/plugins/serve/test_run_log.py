"""The run log lives in the database checkpointers (SQLite and a real PostgreSQL): a
restarted server replays a thread's log and its numbering goes on; a second server on
the same database streams a run the first one is making, event by event, to its end."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_server import fresh_postgres_schema
from serve_helpers import SUPPORT, Served, approve, parse_sse, post_sse, run_input

import plait
from plait.agentfile import load_agent
from plait.testing import ai, call


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'serve.db'}"
        return
    pytest.importorskip("plait_postgres")
    with fresh_postgres_schema() as url:
        yield url


def test_a_restarted_server_replays_the_log_and_numbering_goes_on(
    serve: Callable[..., Served], database: str
) -> None:
    first = serve(load_agent(SUPPORT, checkpointer=database))
    with first.client() as client:
        events = post_sse(client, "/ag-ui", run_input("kept", "r1", "Refund order 1042."))
    first.stop()
    second = serve(load_agent(SUPPORT, checkpointer=database))
    with second.client() as client:
        replay = parse_sse(client.get("/ag-ui/threads/kept/stream?since=0").text)
        interrupt = replay[-1][1]["outcome"]["interrupts"][0]
        resumed = post_sse(
            client, "/ag-ui", run_input("kept", "r2", resume=approve(interrupt["id"]))
        )
    assert replay == events
    assert resumed[-1][1]["result"] == "Refunded 25.00 EUR for order 1042."
    assert resumed[0][0] == events[-1][0] + 1


def gated_agent(gate: threading.Event, database: str) -> plait.Agent:
    def wait() -> str:
        """Wait for the gate."""
        gate.wait(20)
        return "open"

    model = plait.ScriptedChatModel(
        [ai("Waiting for the gate.", call("wait")), "Through the gate."]
    )
    return plait.create_agent(model, tools=[wait], checkpointer=database)


def test_a_second_server_on_the_same_database_streams_the_first_ones_run(
    serve: Callable[..., Served], database: str
) -> None:
    gate = threading.Event()
    runner = serve(gated_agent(gate, database))
    watcher = serve(gated_agent(threading.Event(), database))
    seen: list[Any] = []
    with runner.client() as client:
        with client.stream("POST", "/ag-ui", json=run_input("shared", "r1", "go")) as response:
            for text in response.iter_text():
                if "TOOL_CALL_END" in text:
                    break
        with watcher.client() as other:

            def watch() -> None:
                seen.extend(parse_sse(other.get("/ag-ui/threads/shared/stream?since=0").text))

            thread = threading.Thread(target=watch)
            thread.start()
            threading.Timer(0.5, gate.set).start()
            thread.join(timeout=30)
        full = parse_sse(client.get("/ag-ui/threads/shared/stream?since=0").text)
    assert not thread.is_alive()
    assert seen == full
    assert seen[-1][1]["type"] == "RUN_FINISHED" and seen[-1][1]["result"] == "Through the gate."
