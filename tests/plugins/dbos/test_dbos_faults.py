"""Workers SIGKILLed at random while dozens of queued runs call a slow tool: every run
still completes, no tool call whose step was recorded runs again, each side effect is
made once, and every thread holds each run's four messages exactly once, its runs in
the order they were submitted.

Real PostgreSQL (a database of its own) and real worker processes.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import durable_app  # noqa: E402

THREADS = 8
RUNS_PER_THREAD = 6
WORKERS = 3
MAX_KILLS = 15
MIN_KILLS = 8


def _worker(worker_id: str, url: str, log: Path) -> subprocess.Popen[bytes]:
    with (log.parent / f"{worker_id}.err").open("ab") as err:
        return subprocess.Popen(
            [sys.executable, str(HERE / "durable_app.py"), worker_id, url, str(log)],
            env={**os.environ, "DURABLE_TOOL_SECONDS": "0.6"},
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def test_sigkilled_workers_finish_every_run_once(database_url: str, tmp_path: Path) -> None:
    from plait_dbos import submit
    from plait_dbos._submit import _client

    log = tmp_path / "tool.log"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("create table effects (key text primary key, item text)")
    agent = durable_app.build_agent(database_url, str(log))
    queued = [
        submit(agent, f"item-{thread}-{run}", thread_id=f"thread-{thread}")
        for run in range(RUNS_PER_THREAD)
        for thread in range(THREADS)
    ]
    workers = {f"w{i}": _worker(f"w{i}", database_url, log) for i in range(WORKERS)}
    rng = random.Random(20261204)
    kills = 0
    client = _client(database_url)
    deadline = time.monotonic() + 120

    def statuses() -> list[str]:
        return [client.retrieve_workflow(q.workflow_id).get_status().status for q in queued]

    try:
        while time.monotonic() < deadline:
            # The first kills come before any status check (48 queries, slow on a loaded
            # machine), so they always land while the runs are in flight.
            if kills >= MIN_KILLS and all(s in ("SUCCESS", "ERROR") for s in statuses()):
                break
            time.sleep(rng.uniform(0.15, 0.45))
            if kills == MAX_KILLS:
                continue
            victim = rng.choice(sorted(workers))
            workers[victim].send_signal(signal.SIGKILL)
            workers[victim].wait()
            kills += 1
            workers[victim] = _worker(victim, database_url, log)
        ended = statuses()
    finally:
        for process in workers.values():
            process.send_signal(signal.SIGKILL)
            process.wait()

    results = [q.result() for q in queued] if all(s == "SUCCESS" for s in ended) else []

    lines = [line.split() for line in log.read_text().splitlines()]
    starts = collections.Counter(parts[1] for parts in lines if parts[0] == "start")
    dones = collections.defaultdict(list)
    reruns_after_done = 0
    for parts in lines:
        if parts[0] == "done":
            dones[parts[1]].append(parts[3])
        elif parts[1] in dones:
            reruns_after_done += 1
    # a worker that could not record its heartbeat in time (a loaded machine) stops
    # itself: one more crash, like a kill
    fences = sum(
        path.read_text().count("stopping this process") for path in tmp_path.glob("w*.err")
    )
    with psycopg.connect(database_url) as conn:
        effects = conn.execute("select key, item from effects").fetchall()

    checkpointer = agent.checkpointer
    assert checkpointer is not None
    threads = {f"thread-{t}": checkpointer.load(f"thread-{t}") for t in range(THREADS)}
    total_messages = sum(len(c.messages) for c in threads.values() if c is not None)
    print(
        f"\nruns {len(queued)} completed {ended.count('SUCCESS')} workers {WORKERS} "
        f"kills {kills} self-stopped {fences} "
        f"tool executions {sum(starts.values())} (calls {len(starts)}) "
        f"re-run after finishing {reruns_after_done} effects {len(effects)} "
        f"messages {total_messages}"
    )
    assert kills >= MIN_KILLS
    assert ended.count("SUCCESS") == len(queued), collections.Counter(ended)
    assert sorted(r["text"] for r in results) == sorted(
        f"done: recorded item-{t}-{r}" for t in range(THREADS) for r in range(RUNS_PER_THREAD)
    )
    # one tool call per run, its side effect made once
    assert len(starts) == len(queued)
    assert sorted(item for _, item in effects) == sorted(
        f"item-{t}-{r}" for t in range(THREADS) for r in range(RUNS_PER_THREAD)
    )
    # a finished call runs again only if its worker died between the tool returning and
    # DBOS recording the step — at most once per crash, and its effect was not repeated
    assert reruns_after_done <= kills + fences
    for thread_id, checkpoint in threads.items():
        assert checkpoint is not None
        messages = checkpoint.messages
        assert len(messages) == 4 * RUNS_PER_THREAD, thread_id
        assert len({m.id for m in messages}) == len(messages)
        kinds = [type(m).__name__ for m in messages]
        assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"] * RUNS_PER_THREAD
        # in the order they were submitted, kills and takeovers notwithstanding
        prompts = [m.text for m in messages if type(m).__name__ == "HumanMessage"]
        assert prompts == [f"item-{thread_id[7:]}-{r}" for r in range(RUNS_PER_THREAD)]
