"""A background task of a durable agent is a DBOS workflow of its own: a worker SIGKILLed
while it runs the task is replaced by another, which finishes it, and the task's result
still lands in the parent thread at its next run (real PostgreSQL, worker processes)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import plait
from plait.agent import AgentResult
from plait.messages import AIMessage, ToolCall, Usage
from plait.middleware import Middleware
from plait.models import ScriptedChatModel
from plait.types import RunRequest
from plait.usage import RunUsage

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import background_app  # noqa: E402
from worker_process import start_worker  # noqa: E402


def _worker(url: str, log: Path, index: int) -> tuple[subprocess.Popen[str], str]:
    return start_worker(
        HERE / "background_app.py", url, str(log), errors=log.parent / f"worker{index}.err"
    )


def _researcher_workflow(client: object, deadline: float) -> tuple[str, str]:
    while time.monotonic() < deadline:
        for row in client.list_workflows(status="PENDING", load_input=False):  # type: ignore[attr-defined]
            if row.workflow_id.startswith("plait:researcher:") and row.executor_id:
                return str(row.workflow_id), str(row.executor_id)
        time.sleep(0.05)
    raise AssertionError("no worker runs the background task")


def test_a_background_task_survives_its_workers_death(database_url: str, tmp_path: Path) -> None:
    from plait_dbos import submit
    from plait_dbos._submit import _client

    log = tmp_path / "dig.log"
    boss, _ = background_app.build_agents(database_url, str(log))
    client = _client(database_url)
    workers = dict(_worker(database_url, log, i)[::-1] for i in range(2))
    try:
        first = submit(boss, "research tides", thread_id="p1").result()
        assert first["text"] == "I started the research."
        deadline = time.monotonic() + 60
        while not (log.exists() and log.read_text().startswith("start")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        task_workflow, executor = _researcher_workflow(client, deadline)
        killed = workers[executor]
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        status = client.retrieve_workflow(task_workflow).get_status
        while status().status != "SUCCESS":
            assert time.monotonic() < deadline + 60, status().status
            time.sleep(0.2)
        second = submit(boss, "any news?", thread_id="p1").result()
    finally:
        for process in workers.values():
            if process.poll() is None:
                process.kill()
            process.communicate()
    (other,) = [p for p in workers.values() if p is not killed]
    assert status().executor_id != executor  # finished by the worker that took it over
    runs = [line.split() for line in log.read_text().splitlines()]
    boss_runs = [
        r
        for r in client.list_workflows(load_input=False)
        if r.workflow_id.startswith("plait:boss:")
    ]
    starter = min(boss_runs, key=lambda r: r.workflow_id).executor_id
    path = "another worker (from the log)" if starter == executor else "the worker that started it"
    print(f"\ndig executions {runs}; the result was delivered by {path}")
    # the call in flight when its worker died was made again, by the other worker
    assert runs == [
        ["start", "tides", str(killed.pid)],
        ["start", "tides", str(other.pid)],
        ["done", "tides", str(other.pid)],
    ]
    state = boss.get_state("p1")
    [task_id] = state["background_tasks"]
    assert state["background_tasks"][task_id]["status"] == "completed"
    assert state["background_tasks"][task_id]["result"] == "found: tides rise twice a day"
    delivered = [m for m in state["messages"] if m.metadata.get("subagents")]
    assert [m.text for m in delivered] == [
        f"[Background task {task_id} (researcher) completed]\nTask: tides\n"
        "Result:\nfound: tides rise twice a day"
    ]
    assert second["text"] == f"seen: {delivered[0].text}"


class KeepLedger(Middleware):
    """Keeps the ledger of each run, to read it once the run has ended."""

    def __init__(self) -> None:
        self.ledgers: list[RunUsage] = []

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        self.ledgers.append(request.usage)
        return handler(request)


def test_a_durable_tasks_logged_usage_counts_in_the_starting_run(database_url: str) -> None:
    """The task's run is a workflow of a worker (here in this process): its model calls
    are not in the starting run's ledger, so the usage its run log records is counted
    there once it ends, under the start_task call, as an in-memory task's is: the whole
    Usage, and its model call, which model_call_limit counts."""
    from plait_dbos import Worker
    from plait_subagents import SubAgent, SubAgentMiddleware

    spent = Usage(input_tokens=70, output_tokens=30, cache_read_tokens=40, cost=0.125)
    researcher = plait.create_agent(
        model=ScriptedChatModel([AIMessage("found: tides", usage=spent)] * 4),
        middleware=[("dbos", {"database_url": database_url, "poll_interval": 0.05})],
        checkpointer=database_url,
        name="researcher",
    )
    keep = KeepLedger()
    subagents = SubAgentMiddleware(
        subagents=[SubAgent(name="researcher", description="digs", agent=researcher)],
        background=True,
    )
    own = Usage(input_tokens=100, output_tokens=10)
    start = ToolCall("start_task", {"description": "tides", "subagent_type": "researcher"}, "s1")
    boss = plait.create_agent(
        model=ScriptedChatModel(
            [AIMessage("", tool_calls=[start], usage=own), AIMessage("Started.", usage=own), "ok"]
        ),
        middleware=[keep, subagents],
        checkpointer="memory",
        name="boss",
    )
    worker = Worker(researcher)
    worker.start()
    try:
        assert boss.invoke("research tides", thread_id="p1").text == "Started."
        assert subagents.wait_for_tasks("p1", timeout=60)
    finally:
        worker.stop()
    ledger = keep.ledgers[0]
    assert ledger.nested == {("s1",): spent}
    assert ledger.total == own + own + spent
    assert ledger.calls == 3  # the boss's two and the task's one
    delivered = boss.invoke("news?", thread_id="p1").messages[-2]
    assert delivered.metadata["subagents"]["usage"] == {
        "input_tokens": 70,
        "output_tokens": 30,
        "cache_read_tokens": 40,
        "cost": 0.125,
    }
