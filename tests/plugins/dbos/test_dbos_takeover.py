"""A dead worker's runs are finished by the other workers — without restarting it.

Four workers serve 32 queued runs (a slow tool per run) on real PostgreSQL. One worker
is SIGKILLed while it runs some of them and never comes back; another is frozen
(SIGSTOP) mid-run for longer than ``takeover_after`` and then continued. The live
workers see their heartbeats go stale and put their runs back on the queue: every run
completes, elsewhere, each side effect is made once, the frozen worker stops itself as
soon as it runs again (it starts no further tool call), and each thread's messages are
there once, in order. Counts are printed.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import durable_app  # noqa: E402
from worker_process import start_worker  # noqa: E402

THREADS = 8
RUNS_PER_THREAD = 4
WORKERS = 4
FROZEN_SECONDS = 6 * durable_app.HEARTBEAT + 3  # past takeover_after


def _worker(url: str, log: Path, index: int) -> tuple[subprocess.Popen[str], str]:
    return start_worker(
        HERE / "durable_app.py",
        "-",
        url,
        str(log),
        errors=log.parent / f"worker{index}.err",
        env={"DURABLE_TOOL_SECONDS": "0.6"},
    )


def _running_on(client: Any, executor_id: str) -> list[str]:
    rows = client.list_workflows(status="PENDING", executor_id=executor_id, load_input=False)
    return [row.workflow_id for row in rows]


def _wait_for_runs(client: Any, executor_id: str, deadline: float) -> list[str]:
    while time.monotonic() < deadline:
        running = _running_on(client, executor_id)
        if running:
            return running
        time.sleep(0.05)
    raise AssertionError(f"worker {executor_id} never ran anything")


def test_a_dead_workers_runs_are_finished_by_the_others(database_url: str, tmp_path: Path) -> None:
    from plait_dbos import submit
    from plait_dbos._submit import _client

    log = tmp_path / "tool.log"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("create table effects (key text primary key, item text)")
    agent = durable_app.build_agent(database_url, str(log))
    client = _client(database_url)
    # The two workers that fail serve the queue alone until each holds runs (4 slots each
    # for 8 threads: both get some); the others start once they have, so on a loaded
    # machine a late worker is never left with nothing to be killed in.
    workers = [_worker(database_url, log, i) for i in range(2)]
    (killed, killed_id), (frozen, frozen_id) = workers[0], workers[1]
    queued = [
        submit(agent, f"item-{thread}-{run}", thread_id=f"thread-{thread}")
        for run in range(RUNS_PER_THREAD)
        for thread in range(THREADS)
    ]
    deadline = time.monotonic() + 150
    try:
        killed_runs = _wait_for_runs(client, killed_id, deadline)
        killed.send_signal(signal.SIGKILL)  # for good: never restarted
        killed.wait()
        killed_at = time.monotonic()

        frozen_runs = _wait_for_runs(client, frozen_id, deadline)
        frozen.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        workers += [_worker(database_url, log, i) for i in range(2, WORKERS)]
        time.sleep(max(0.0, FROZEN_SECONDS - (time.monotonic() - frozen_at)))
        # on a loaded machine no tool may have run yet (the other workers can be starting)
        lines_before_continue = len(log.read_text().splitlines()) if log.exists() else 0
        frozen.send_signal(signal.SIGCONT)
        frozen_exit = frozen.wait(timeout=30)

        def statuses() -> list[str]:
            return [client.retrieve_workflow(q.workflow_id).get_status().status for q in queued]

        restarts = 0
        while time.monotonic() < deadline and not all(
            s in ("SUCCESS", "ERROR") for s in statuses()
        ):
            # a live worker that could not record its heartbeat in time (a loaded
            # machine) stops itself: its supervisor would start it again
            for i in range(2, WORKERS):
                if workers[i][0].poll() is not None:
                    workers[i] = _worker(database_url, log, i)
                    restarts += 1
            time.sleep(0.2)
        ended = statuses()
        killed_runs_done = time.monotonic() - killed_at
    finally:
        for process, _ in workers:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.communicate()

    by_id = {q.workflow_id: client.retrieve_workflow(q.workflow_id).get_status() for q in queued}
    taken = killed_runs + frozen_runs
    lines = [line.split() for line in log.read_text().splitlines()]
    starts = collections.Counter(parts[1] for parts in lines if parts[0] == "start")
    done: set[str] = set()
    reruns_after_done = 0
    for parts in lines:
        if parts[0] == "done":
            done.add(parts[1])
        elif parts[1] in done:
            reruns_after_done += 1
    frozen_err = (tmp_path / "worker1.err").read_text()
    fences = sum(
        (tmp_path / f"worker{i}.err").read_text().count("stopping this process")
        for i in range(2, WORKERS)
    )
    with psycopg.connect(database_url) as conn:
        effects = conn.execute("select key, item from effects").fetchall()
    checkpointer = agent.checkpointer
    assert checkpointer is not None
    threads = {f"thread-{t}": checkpointer.load(f"thread-{t}") for t in range(THREADS)}
    elsewhere = sum(
        by_id[w].status == "SUCCESS" and by_id[w].executor_id not in (killed_id, frozen_id)
        for w in taken
    )
    print(
        f"\nruns {len(queued)} completed {ended.count('SUCCESS')} workers {WORKERS} "
        f"killed for good 1 (running {len(killed_runs)}) frozen 1 (running {len(frozen_runs)}, "
        f"exit {frozen_exit}) taken-over runs completed elsewhere "
        f"{elsewhere}"
        f"/{len(taken)} tool executions {sum(starts.values())} (calls {len(starts)}) "
        f"re-run after finishing {reruns_after_done} "
        f"other self-stopped {fences} (restarted {restarts}) "
        f"effects {len(effects)} "
        f"all done {killed_runs_done:.1f} s after the kill"
    )
    assert ended.count("SUCCESS") == len(queued), collections.Counter(ended)
    for workflow_id in taken:
        assert by_id[workflow_id].executor_id not in (killed_id, frozen_id)
    # the frozen worker noticed its lapsed heartbeat and stopped without starting a call
    assert frozen_exit == 75, frozen_err
    assert "stopping this process so that another worker can take its runs over" in frozen_err
    assert not [
        parts
        for parts in lines[lines_before_continue:]
        if parts[0] == "start" and int(parts[3]) == frozen.pid
    ]
    # one tool call per run, its side effect made once
    assert len(starts) == len(queued)
    assert sorted(item for _, item in effects) == sorted(
        f"item-{t}-{r}" for t in range(THREADS) for r in range(RUNS_PER_THREAD)
    )
    assert reruns_after_done <= 2 + fences
    for thread_id, checkpoint in threads.items():
        assert checkpoint is not None
        messages = checkpoint.messages
        assert len({m.id for m in messages}) == len(messages) == 4 * RUNS_PER_THREAD, thread_id
        kinds = [type(m).__name__ for m in messages]
        assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"] * RUNS_PER_THREAD


def test_takeover_on_the_embedded_sqlite_database(tmp_path: Path) -> None:
    """The same on one machine without a server: a worker killed for good, its runs
    finished by the other (heartbeats in the SQLite system database, its clock)."""
    from plait_dbos import submit
    from plait_dbos._submit import _client

    url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    log = tmp_path / "tool.log"
    agent = durable_app.build_agent(url, str(log))
    client = _client(url)
    (killed, killed_id), (other, other_id) = _worker(url, log, 0), _worker(url, log, 1)
    try:
        queued = [submit(agent, f"item-{n}", thread_id=f"t{n}") for n in range(6)]
        running = _wait_for_runs(client, killed_id, time.monotonic() + 60)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        results = [q.result() for q in queued]
    finally:
        for process in (killed, other):
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.communicate()
    assert sorted(r["text"] for r in results) == sorted(
        f"done: recorded item-{n}" for n in range(6)
    )
    for workflow_id in running:
        assert client.retrieve_workflow(workflow_id).get_status().executor_id == other_id
    assert (
        f"took over {len(running)} run(s) of worker '{killed_id}'"
        in (tmp_path / "worker1.err").read_text()
    )
