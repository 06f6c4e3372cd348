"""``plait serve`` with a durable (dbos) agent: each run goes on the queue, a worker
process runs it and appends its events to the run log in PostgreSQL, and the server
streams them — also when the worker is SIGKILLed mid-run and another takes the run over,
and when the server itself restarts meanwhile.

Real parts throughout: PostgreSQL, worker subprocesses, uvicorn on loopback, and the
clients users have (SSE over httpx with ``Last-Event-ID``, langgraph-sdk).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "serve"))

import served_app  # noqa: E402
from serve_helpers import Served, run_input  # noqa: E402
from worker_process import start_worker  # noqa: E402

import plait_serve  # noqa: E402
from plait.runlog import event_log  # noqa: E402
from plait_serve.ag_ui import project  # noqa: E402


def _worker(url: str, log: Path, index: int) -> tuple[subprocess.Popen[str], str]:
    return start_worker(
        HERE / "served_app.py", url, str(log), errors=log.parent / f"worker{index}.err"
    )


@pytest.fixture
def workers(database_url: str, tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[str]]]:
    log = tmp_path / "tool.log"
    started = dict(_worker(database_url, log, i)[::-1] for i in range(2))
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
        process.communicate()


def _sse(lines: Iterator[str]) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """``(id, data)`` per server-sent event as it arrives."""
    seq: int | None = None
    data: list[str] = []
    for line in lines:
        if line.startswith("id: "):
            seq = int(line[4:])
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and data:
            yield seq, json.loads("\n".join(data))
            seq, data = None, []


def _executor_of(database_url: str, thread: str, deadline: float) -> str:
    from plait_dbos._submit import _client

    client = _client(database_url)
    while time.monotonic() < deadline:
        for row in client.list_workflows(status="PENDING", load_input=False):
            if f":{thread}:" in row.workflow_id and row.executor_id:
                return str(row.executor_id)
        time.sleep(0.05)
    rows = client.list_workflows(load_input=False)
    raise AssertionError(
        f"no worker runs thread {thread}: {[(r.workflow_id, r.status) for r in rows]}"
    )


def test_a_reconnect_after_a_worker_died_mid_run_gets_every_event_once(
    database_url: str, tmp_path: Path, workers: dict[str, subprocess.Popen[str]]
) -> None:
    agent = served_app.build_agent(database_url, str(tmp_path / "tool.log"))
    served = Served(plait_serve.app(agent))
    thread = "order-7"
    got: list[tuple[int | None, dict[str, Any]]] = []
    try:
        with httpx.Client(base_url=served.url, timeout=60) as client:
            body = run_input(thread, "run-1", "blue-mug")
            with client.stream("POST", "/ag-ui", json=body) as response:
                assert response.status_code == 200
                for seq, event in _sse(response.iter_lines()):
                    got.append((seq, event))
                    if event["type"] == "CUSTOM":  # the tool is running: kill its worker
                        executor = _executor_of(database_url, thread, time.monotonic() + 10)
                        killed = workers[executor]
                        killed.send_signal(signal.SIGKILL)
                        killed.wait()
                        break  # and the client goes away too
    finally:
        served.stop()  # the server restarts too: it holds no run
    restarted_server = Served(plait_serve.app(served_app.build_agent(database_url, "-")))
    try:
        with httpx.Client(base_url=restarted_server.url, timeout=60) as client:
            runs = client.get(f"/threads/{thread}/runs").json()
            assert [(r["run_id"], r["status"]) for r in runs] == [("run-1", "running")]
            last = max(seq for seq, _ in got if seq is not None)
            headers = {"Last-Event-ID": str(last)}
            path = f"/ag-ui/threads/{thread}/stream"
            with client.stream("GET", path, headers=headers, timeout=120) as response:
                assert response.status_code == 200
                again = list(_sse(response.iter_lines()))
            runs = client.get(f"/threads/{thread}/runs").json()
            assert [(r["run_id"], r["status"]) for r in runs] == [("run-1", "success")]
    finally:
        restarted_server.stop()
    # The events before the disconnect up to the last full one, then the reconnect's.
    kept = got[: max(i for i, (seq, _) in enumerate(got) if seq is not None) + 1]
    received = kept + again
    logged = event_log(agent).read_events(thread)
    projected = [e for seq, event in logged for e in project(thread, event)]
    kinds = [event["type"] for _, event in received]
    ids = [seq for seq, _ in received if seq is not None]
    restarted = [e for _, e in received if e.get("name") == "plait.step_restarted"]
    finished = [e for _, e in received if e["type"] == "RUN_FINISHED"]
    print(
        f"\nevents received {len(received)} (before the kill {len(kept)}, after the "
        f"reconnect {len(again)}) logged {len(logged)} projected {len(projected)} "
        f"restarted {len(restarted)}"
    )
    # every event exactly once: as many as the log projects, each log number once, in order
    assert len(received) == len(projected)
    assert [e for _, e in received] == [
        json.loads(e.model_dump_json(by_alias=True, exclude_none=True)) for e in projected
    ]
    assert ids == sorted(set(ids))
    assert kinds.count("RUN_STARTED") == 1 and len(finished) == 1
    assert kinds.count("TOOL_CALL_START") == 1 and kinds.count("TOOL_CALL_RESULT") == 1
    # the tool call in flight was made again by the other worker: its progress report
    # from the dead worker is void, the rest of the run stands
    (killed_pid,) = [p.pid for p in workers.values() if p.returncode == -signal.SIGKILL]
    (other_pid,) = {p.pid for p in workers.values()} - {killed_pid}
    progress = [e["value"] for _, e in received if e["type"] == "CUSTOM" and e["name"] == "plait"]
    assert progress == [
        {"looking_up": "blue-mug", "worker": killed_pid},
        {"looking_up": "blue-mug", "worker": other_pid},
    ]
    (marker,) = restarted
    assert marker["value"]["voided"] == 1 and marker["value"]["message_id"] is None
    assert kinds.index("CUSTOM") < kinds.index("TOOL_CALL_RESULT")
    assert finished[0]["result"] == "blue-mug is in stock and it ships tomorrow"
    lines = (tmp_path / "tool.log").read_text().split("\n")
    tool_runs = [line.split() for line in lines if line]
    assert [(kind, int(pid)) for kind, _, pid in tool_runs] == [
        ("start", killed_pid),
        ("start", other_pid),
        ("done", other_pid),
    ]


def _docs_snippet() -> str:
    """The client block docs/middleware/dbos.md says this test runs."""
    page = (HERE.parents[2] / "docs" / "middleware" / "dbos.md").read_text()
    mark = "docs-test: not run: tests/plugins/dbos/test_dbos_serve.py"
    after = page[page.index(mark) :]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def _workflow_status(database_url: str, thread: str) -> list[str]:
    from plait_dbos._submit import _client

    rows = _client(database_url).list_workflows(load_input=False)
    return [str(r.status) for r in rows if f":{thread}:" in r.workflow_id]


def _settled_status(database_url: str, thread: str) -> list[str]:
    """The thread's workflows once none is pending: the worker writes the run's last event
    to the log before its workflow returns, so a stream can end a moment before DBOS
    records the outcome."""
    deadline = time.monotonic() + 30
    while "PENDING" in (found := _workflow_status(database_url, thread)):
        assert time.monotonic() < deadline, found
        time.sleep(0.05)
    return found


def test_langgraph_sdk_streams_a_durable_run_and_cancels_one(
    database_url: str, tmp_path: Path, workers: dict[str, subprocess.Popen[str]]
) -> None:
    from langgraph_sdk import get_sync_client

    agent = served_app.build_agent(database_url, str(tmp_path / "tool.log"))
    served = Served(plait_serve.app(agent))
    log = event_log(agent)
    try:
        # the page's client, as written, against this server
        code = _docs_snippet().replace("http://127.0.0.1:8000", served.url)
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "ai ",
            "tool blue-mug is in stock",
            "ai blue-mug is in stock and it ships tomorrow",
        ]

        lg = get_sync_client(url=served.url)
        thread = lg.threads.create()["thread_id"]
        parts = list(
            lg.runs.stream(
                thread,
                "shop",
                input={"messages": [{"role": "user", "content": "green-pot"}]},
                stream_mode=["updates", "custom"],
            )
        )
        events = [(p.event, p.data) for p in parts]
        pids = {p.pid for p in workers.values()}
        custom = [data for kind, data in events if kind == "custom"]
        assert len(custom) == 1 and custom[0]["looking_up"] == "green-pot"
        assert custom[0]["worker"] in pids  # a worker process ran the tool
        messages = [
            m
            for kind, data in events
            if kind == "updates"
            for u in data.values()
            for m in u.get("messages", [])
        ]
        assert [m["type"] for m in messages] == ["ai", "tool", "ai"]
        assert messages[-1]["content"] == "green-pot is in stock and it ships tomorrow"
        assert _settled_status(database_url, thread) == ["SUCCESS"]

        # a cancel is an explicit request: the run's workflow is cancelled
        run = lg.runs.create(
            thread, "shop", input={"messages": [{"role": "user", "content": "red-cup"}]}
        )
        deadline = time.monotonic() + 60
        while not any(e.get("type") == "custom" for _, e in log.read_events(thread, after=10)):
            assert time.monotonic() < deadline, log.read_events(thread)
            time.sleep(0.05)
        cancelled_at = time.monotonic()
        lg.runs.cancel(thread, run["run_id"])
        lg.runs.join(thread, run["run_id"])
        print(f"\ncancel to end of run {time.monotonic() - cancelled_at:.1f} s")
        assert lg.runs.get(thread, run["run_id"])["status"] == "interrupted"  # LangGraph's word
    finally:
        served.stop()
    _, last = log.read_events(thread)[-1]
    assert last == {"type": "run_finished", "run_id": run["run_id"], "status": "cancelled"}
    assert sorted(_settled_status(database_url, thread)) == ["CANCELLED", "SUCCESS"]
    state = agent.get_state(thread)
    print([(m.type, m.text) for m in state["messages"]])
    assert "red-cup is in stock" not in state["messages"][-1].text  # never answered
