"""plait-dbos: the cost of a durable run beside the plain PostgreSQL checkpointer, and
throughput with 1, 2 and 4 worker processes on I/O-bound runs.

Needs PostgreSQL: ``PLAIT_TEST_POSTGRES_URL`` (a database of its own is created and
dropped for each part). Each run is one model call asking for a tool, the tool, and a
second model call; the model is fake.

1. Durable ÷ plain: runs with a model that answers at once, in this process, in turn
   with ``agent.invoke`` on the PostgreSQL checkpointer and as DBOS workflows (started
   directly, without the queue); the median per run of each (wall time, and this
   process's CPU) and their ratio, and the difference per DBOS step a run records (thread
   load, two model calls, the tool; the thread's saves are not steps).
2. Throughput: the model waits ``MODEL_SECONDS`` a call, as a provider's network round
   trip would, so a run is I/O-bound. 1, 2 or 4 worker processes (``worker_concurrency``
   4 each) are started and warmed up, then ``RUNS`` runs on as many threads are queued;
   runs per second from the first submission to the last result, the ratio to one
   worker, and the workers' CPU per run (from /proc, where there is one).

The load average is printed before and after each part: on a machine others use, the
throughput ratios are only as good as the cores were free. Figures are printed, never
asserted. One command, unattended, about a minute on a quiet 2-core machine:

    PLAIT_TEST_POSTGRES_URL=postgresql://... python benchmarks/dbos_throughput.py
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import plait
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from plait.models.base import ChatModel

RUNS = 128
MODEL_SECONDS = 0.2
COST_RUNS = 60
GIVE_UP = 600
"""Seconds after which the script stops (a worker that never came up would leave it
waiting for results): the workers are stopped and the databases dropped on the way out."""
POLL = 0.1
"""Seconds between a worker's looks at the queue: a freed slot waits half of it on average.
A look with room for a run costs a worker ~5 ms of CPU (DBOS claims runs across the
threads' partitions), so at 0.05 s four workers spend up to 0.4 of a core looking."""


class WaitingModel(ChatModel):
    """Asks for ``note`` with the prompt, then answers with the tool's text."""

    provider = "waiting"
    model_name = "waiting"
    seconds: float = MODEL_SECONDS

    def invoke(self, messages: Sequence[AnyMessage], **_: Any) -> AIMessage:
        if self.seconds:
            time.sleep(self.seconds)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(f"noted: {last.text}")
        assert isinstance(last, HumanMessage)
        return AIMessage("", tool_calls=[ToolCall("note", {"text": last.text}, id=plait.new_id())])


class InstantModel(WaitingModel):
    seconds = 0.0


def note(text: str) -> str:
    """Note ``text``."""
    return f"noted {text}"


def build(url: str, *, model: ChatModel | None = None, durable: bool = True) -> plait.Agent:
    middleware: list[Any] = (
        [("dbos", {"database_url": url, "worker_concurrency": 4, "poll_interval": POLL})]
        if durable
        else []
    )
    return plait.create_agent(
        model=model or WaitingModel(),
        tools=[note],
        middleware=middleware,
        checkpointer=url,
        name="bench",
    )


@contextmanager
def fresh_database(base: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f"plait_dbos_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    head, _, tail = base.rpartition("/")
    query = tail.partition("?")[2]
    try:
        yield f"{head}/{name}" + (f"?{query}" if query else "")
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(drop.format(sql.Identifier(name)))


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process so far (Linux /proc), ``None`` elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def throughput(base: str, workers: int) -> tuple[float, float | None]:
    """Runs per second, and the workers' CPU seconds per run (``None`` without /proc)."""
    from plait_dbos import submit

    with fresh_database(base) as url:
        agent = build(url)
        processes = [
            subprocess.Popen([sys.executable, __file__, "--worker", f"w{i}", url])
            for i in range(workers)
        ]
        try:
            # every worker up and serving before the clock starts
            warm = [submit(agent, f"warm {i}", thread_id=f"warm{i}") for i in range(4 * workers)]
            for run in warm:
                run.result()
            cpu_before = [_cpu_seconds(p.pid) for p in processes]
            started = time.perf_counter()
            queued = [submit(agent, f"item {i}", thread_id=f"t{i}") for i in range(RUNS)]
            for run in queued:
                run.result()
            elapsed = time.perf_counter() - started
            cpu_after = [_cpu_seconds(p.pid) for p in processes]
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait()
        spent = [
            after - before
            for before, after in zip(cpu_before, cpu_after, strict=True)
            if before is not None and after is not None
        ]
        cpu = sum(spent) / RUNS if len(spent) == workers else None
        return RUNS / elapsed, cpu


def step_cost(base: str) -> tuple[list[float], list[float], list[float], list[float], int]:
    """Per run, plain and durable taken in turn (so both see the same load): wall seconds
    of each, this process's CPU seconds of each, and DBOS steps per durable run."""
    from dbos import DBOS

    from plait_dbos import Worker
    from plait_dbos._worker import _run_workflow

    with fresh_database(base) as url:
        plain = build(url, model=InstantModel(), durable=False)
        durable = build(url, model=InstantModel())
        worker = Worker(durable, executor_id="bench")
        worker.start()
        try:
            walls: tuple[list[float], list[float]] = ([], [])
            cpus: tuple[list[float], list[float]] = ([], [])
            last = ""
            for i in range(-3, COST_RUNS):  # three of each to warm up
                cpu, wall = time.process_time(), time.perf_counter()
                plain.invoke(f"item {i}", thread_id=f"plain-{i}")
                plain_cpu, plain_wall = time.process_time() - cpu, time.perf_counter() - wall
                cpu, wall = time.process_time(), time.perf_counter()
                handle = DBOS.start_workflow(
                    _run_workflow, "bench", f"durable-{i}", {"prompt": f"item {i}"}
                )
                handle.get_result()
                durable_cpu, durable_wall = time.process_time() - cpu, time.perf_counter() - wall
                if i >= 0:
                    walls[0].append(plain_wall)
                    walls[1].append(durable_wall)
                    cpus[0].append(plain_cpu)
                    cpus[1].append(durable_cpu)
                last = handle.get_workflow_id()
            steps = len(DBOS.list_workflow_steps(last))
        finally:
            worker.stop()
        return walls[0], walls[1], cpus[0], cpus[1], steps


def main() -> None:
    base = os.environ.get("PLAIT_TEST_POSTGRES_URL")
    if not base:
        sys.exit("set PLAIT_TEST_POSTGRES_URL to a PostgreSQL server")
    print(_load())
    plain_walls, durable_walls, plain_cpus, durable_cpus, steps = step_cost(base)
    plain, durable = statistics.median(plain_walls), statistics.median(durable_walls)
    plain_cpu, durable_cpu = statistics.median(plain_cpus), statistics.median(durable_cpus)
    per_step = (durable - plain) / steps
    print(f"durable vs plain ({COST_RUNS} runs each, in turn, model answers at once, medians):")
    for label, wall, spent in (
        ("plain PostgreSQL checkpointer:", plain, plain_cpu),
        (f"DBOS workflow ({steps} steps):    ", durable, durable_cpu),
    ):
        print(f"  {label} {wall * 1000:6.2f} ms per run (CPU here {spent * 1000:.2f} ms)")
    print(f"  durable / plain: {durable / plain:.2f}x  ({per_step * 1000:.2f} ms per step)")
    print(_load())
    print(f"throughput: {RUNS} runs, model waits {MODEL_SECONDS * 1000:.0f} ms per call")
    one = 0.0
    for workers in (1, 2, 4):
        rate, cpu = throughput(base, workers)
        one = one or rate
        used = "" if cpu is None else f", workers' CPU {cpu * 1000:.1f} ms per run"
        print(f"  {workers} worker(s): {rate:6.1f} runs/s  ({rate / one:.2f}x one worker{used})")
    print(_load())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        from plait_dbos import Worker

        worker_id, url = sys.argv[2:4]
        Worker(build(url), executor_id=worker_id).run()
    else:

        def give_up(*_: object) -> None:
            raise TimeoutError(f"dbos_throughput: no result after {GIVE_UP} s")

        signal.signal(signal.SIGALRM, give_up)
        signal.alarm(GIVE_UP)
        main()
