"""Runs of one thread run one at a time, in the order they were submitted, whichever
workers take them (real PostgreSQL, two worker processes, a burst of submissions)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import durable_app  # noqa: E402

RUNS = 16


def test_a_threads_runs_keep_their_submission_order(database_url: str, tmp_path: Path) -> None:
    from plait_dbos import submit
    from plait_dbos._submit import _client

    log = tmp_path / "tool.log"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("create table effects (key text primary key, item text)")
    agent = durable_app.build_agent(database_url, str(log))
    # all runs are queued before any worker exists, as fast as one process can
    queued = [submit(agent, f"item-{n:02d}", thread_id="one") for n in range(RUNS)]
    env = {**os.environ, "DURABLE_TOOL_SECONDS": "0.05", "DURABLE_MODEL_SECONDS": "0"}
    workers = [
        subprocess.Popen(
            [sys.executable, str(HERE / "durable_app.py"), f"w{i}", database_url, str(log)],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for i in range(2)
    ]
    try:
        results = [q.result() for q in queued]
    finally:
        for process in workers:
            process.send_signal(signal.SIGKILL)
            process.wait()
    checkpointer = agent.checkpointer
    assert checkpointer is not None
    checkpoint = checkpointer.load("one")
    assert checkpoint is not None
    prompts = [m.text for m in checkpoint.messages if type(m).__name__ == "HumanMessage"]
    assert prompts == [f"item-{n:02d}" for n in range(RUNS)]
    # each run saw exactly the runs before it: one at a time, nothing interleaved
    for n, result in enumerate(results):
        assert len(result["messages"]) == 4 * (n + 1)
    started = [line.split()[2] for line in log.read_text().splitlines() if line.startswith("start")]
    assert started == [f"item-{n:02d}" for n in range(RUNS)]
    client = _client(database_url)
    executors = [client.retrieve_workflow(q.workflow_id).get_status().executor_id for q in queued]
    handovers = sum(a != b for a, b in itertools.pairwise(executors))
    print(
        f"\nruns {RUNS} on one thread, in order; workers used {len(set(executors))}, "
        f"changes of worker between consecutive runs {handovers}"
    )
