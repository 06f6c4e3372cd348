"""A server that dies mid-run (SIGKILL) is seen dead within seconds by another server on
the same database: the run's lease, renewed by a heartbeat while the run lives, runs out
(``plait.checkpoint.HEARTBEAT_LEASE``), a follower's stream ends with one ``run_error``
(``run_lost``) that the log keeps, and the thread takes new input at once — on SQLite and
on PostgreSQL, the dead server a real process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client
from lease_server import agent
from postgres_server import fresh_postgres_schema
from serve_helpers import Served, parse_sse, run_input

from plait.checkpoint import HEARTBEAT_LEASE, EventLog

pytestmark = pytest.mark.waits  # a lease running out: started early (conftest)

HERE = Path(__file__).resolve().parent


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'agent.db'}"
    else:
        with fresh_postgres_schema() as schema_url:
            yield schema_url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(url: str, *more: str) -> tuple[subprocess.Popen[bytes], str]:
    """``lease_server.py`` serving ``url`` (``more``: its further arguments)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parents[1])])}
    process = subprocess.Popen(
        [sys.executable, str(HERE / "lease_server.py"), url, str(port), *more],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        try:
            if httpx.get(base + "/.well-known/agent-card.json", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start")


def tool_running(base: str, prompt: str = "wait") -> None:
    """Start run r1 of thread t1 on the server at ``base`` and return once its tool is
    running (the run is mid-step), leaving the run going on there."""
    with httpx.Client(base_url=base, timeout=30) as client:
        with client.stream("POST", "/ag-ui", json=run_input("t1", "r1", prompt)) as response:
            assert response.status_code == 200
            buffer = ""
            for text in response.iter_text():
                buffer += text
                if "TOOL_CALL_END" in buffer:
                    return
    raise AssertionError("the run's tool never started")


def logged(url: str, kind: str) -> None:
    """Wait until thread t1's log on ``url`` holds an event of type ``kind``."""
    log = agent(url).checkpointer
    assert isinstance(log, EventLog)
    deadline = time.monotonic() + 20
    while not any(e.get("type") == kind for _, e in log.read_events("t1")):
        assert time.monotonic() < deadline, f"no {kind} event was logged"
        time.sleep(0.05)


def test_a_killed_servers_run_ends_for_its_followers_within_seconds(
    url: str, serve: Callable[..., Served]
) -> None:
    process, base = start_server(url)
    try:
        tool_running(base, "wait for ever")
        logged(url, "tool_call")  # written through (the server writes in batches)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    killed = time.monotonic()

    other = serve(agent(url))
    with other.client() as client:
        events = parse_sse(client.get("/ag-ui/threads/t1/stream?since=0").text)
        noticed = time.monotonic() - killed
        kinds = [e["type"] for _, e in events]
        assert kinds[0] == "RUN_STARTED" and "TOOL_CALL_END" in kinds
        assert kinds[-1] == "RUN_ERROR"
        assert events[-1][1]["code"] == "run_lost"
        assert "stopped: its lease ran out" in events[-1][1]["message"]
        assert noticed < HEARTBEAT_LEASE + 10  # not RUN_LEASE's 300 s
        assert client.get("/threads/t1/runs/r1").json()["status"] == "error"
        # the log keeps the end: a later reader gets it at once, from the log
        again = parse_sse(client.get("/ag-ui/threads/t1/stream?since=0").text)
        assert again == events
        # and the thread takes new input now (no 409 while a dead run holds it)
        answer = parse_sse(client.post("/ag-ui", json=run_input("t1", "r2", "again")).text)
        text = "".join(e["delta"] for _, e in answer if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "A fresh answer.", answer
        assert answer[-1][1]["type"] == "RUN_FINISHED"


def test_a_live_run_in_another_process_is_not_taken_for_dead(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    """Its heartbeat outlasts the lease: a follower keeps following, and new input for
    the thread is refused while it lives."""
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    process, base = start_server(url)
    try:
        tool_running(base)
        other = serve(agent(url))
        with httpx.Client(base_url=other.url, timeout=HEARTBEAT_LEASE + 5) as client:
            with pytest.raises(httpx.ReadTimeout):  # still following when the lease would end
                client.get("/ag-ui/threads/t1/stream?since=0")
            busy = client.post("/ag-ui", json=run_input("t1", "r2", "again"))
            assert busy.status_code == 409, busy.text
            # the Agent Protocol reads it running there, not lost
            assert client.get("/threads/t1/runs/r1").json()["status"] == "running"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)


def test_new_input_after_a_killed_server_ends_the_dead_runs_log_first(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    """No follower noticed the death: the next run on another server closes the dead
    run's log (its run_error, then the new run) once the lease has run out, and refuses
    with 409 before."""
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    process, base = start_server(url)
    try:
        tool_running(base)
        logged(url, "tool_call")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    other = serve(agent(url))
    with other.client() as client:
        deadline = time.monotonic() + HEARTBEAT_LEASE + 10
        while (posted := client.post("/ag-ui", json=run_input("t1", "r2", "again"))).status_code:
            if posted.status_code != 409:
                break
            assert time.monotonic() < deadline, "the dead run held the thread"
            time.sleep(0.5)
        assert posted.status_code == 200, posted.text
        answer = parse_sse(posted.text)
        text = "".join(e["delta"] for _, e in answer if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "A fresh answer."
    log = agent(url).checkpointer
    assert isinstance(log, EventLog)
    kinds = [(e["type"], e.get("run_id")) for _, e in log.read_events("t1")]
    lost = kinds.index(("run_error", "r1"))
    assert kinds[lost + 1] == ("run_started", "r2")


def test_a_thread_whose_run_goes_on_in_another_process_reads_busy(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    """LangGraph's SDK polls a thread's status: on a second server sharing the database,
    the thread of a run the first server runs is ``busy``, as its run is ``running``."""
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    process, base = start_server(url)
    try:
        tool_running(base)
        other = get_sync_client(url=serve(agent(url)).url)
        assert other.runs.get("t1", "r1")["status"] == "running"
        assert other.threads.get("t1")["status"] == "busy"
        assert [t["thread_id"] for t in other.threads.search(status="busy")] == ["t1"]
        assert other.threads.search(status="idle") == []
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
