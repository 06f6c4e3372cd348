"""Human approval across workers (embedded SQLite system database): a run paused at an
interrupt ends its workflow with the interrupt and no tool run; the resume is queued and
a different worker process continues the run, making the tool's side effect once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import durable_app  # noqa: E402


def _worker(worker_id: str, url: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "durable_app.py"), worker_id, url, str(log)],
        env={**os.environ, "DURABLE_APPROVAL": "1", "DURABLE_TOOL_SECONDS": "0"},
        stdout=subprocess.DEVNULL,
    )


def test_a_paused_run_is_resumed_by_another_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait_dbos import submit

    monkeypatch.setenv("DURABLE_APPROVAL", "1")
    url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    log = tmp_path / "tool.log"
    agent = durable_app.build_agent(url, str(log))

    first = _worker("first", url, log)
    try:
        paused = submit(agent, "the invoice", thread_id="t").result()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert paused["text"] == ""
    [pending] = paused["interrupts"]
    assert pending["value"]["action_requests"][0]["name"] == "record"
    assert not log.exists()  # nothing ran before the approval

    second = _worker("second", url, log)
    try:
        resumed = submit(agent, thread_id="t", resume={"decisions": [{"type": "approve"}]}).result()
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait()
    assert resumed["text"] == "done: recorded the invoice"
    assert resumed["interrupts"] == []
    assert resumed["run_id"] == paused["run_id"]
    assert [m["type"] for m in resumed["messages"]] == ["human", "ai", "tool", "ai"]
    lines = log.read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["start", "done"]
    assert lines[1].split()[-2] == "new"  # the effect was made by this call
