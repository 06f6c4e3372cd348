"""An AI message with several tool calls, its process SIGKILLed during the last call: on
resume in a new process only that call runs again — the finished ones are not repeated,
on the sync and the async path, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import fresh_postgres_schema

from plait.persistence import SQLiteCheckpointer
from plait.testing import transcript

SCRIPT = textwrap.dedent(
    '''
    import asyncio, json, sys, time
    from pathlib import Path

    import plait
    from plait.messages import AIMessage, ToolCall
    from plait.models import ScriptedChatModel

    mode, path, url, thread_id, work = sys.argv[1:6]
    work = Path(work)

    def log(line):
        with open(work / "log", "a") as out:
            out.write(line + "\\n")

    def job(n: int) -> str:
        """Do job n (a side effect the test counts)."""
        log(f"start {n}")
        if n == 3 and not (work / "resumed").exists():
            (work / "blocked").touch()
            time.sleep(120)  # the test kills the process here
        log(f"done {n}")
        return f"job {n} done"

    async def ajob(n: int) -> str:
        """Do job n (a side effect the test counts)."""
        if n == 3:
            await asyncio.sleep(1.0)  # the others finish (and are saved) first
        return job(n)

    tool = plait.tool(job if path == "sync" else ajob, name="job")
    calls = [ToolCall("job", {"n": n}, f"call_{n}") for n in (1, 2, 3)]
    responses = [AIMessage("", tool_calls=calls), "all jobs done"]
    if mode == "resume":
        responses = responses[1:]  # the first model call was saved before the crash
    agent = plait.create_agent(ScriptedChatModel(responses), tools=[tool], checkpointer=url)
    text = None if mode == "resume" else "run three jobs"
    if path == "sync":
        result = agent.invoke(text, thread_id=thread_id)
    else:
        result = asyncio.run(agent.ainvoke(text, thread_id=thread_id))
    print(json.dumps({"text": result.text}))
    '''
)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'agent.db'}"
    else:
        with fresh_postgres_schema() as found:
            yield found


def _checkpointer(url: str) -> object:
    if url.startswith("sqlite"):
        return SQLiteCheckpointer.from_url(url)
    from plait_postgres import PostgresCheckpointer

    return PostgresCheckpointer.from_url(url)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_finished_calls_of_a_batch_do_not_run_again_after_a_crash(
    path: str, url: str, tmp_path: Path
) -> None:
    script = tmp_path / "batch.py"
    script.write_text(SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    child = subprocess.Popen(
        [sys.executable, str(script), "start", path, url, "t", str(work)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (work / "blocked").exists():
        if child.poll() is not None:
            pytest.fail(f"the child exited early ({child.returncode}): {child.stderr.read()}")
        assert time.monotonic() < deadline, "the child never reached the third call"
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL

    (work / "resumed").touch()
    resumed = subprocess.run(
        [sys.executable, str(script), "resume", path, url, "t", str(work)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"text": "all jobs done"}

    log = (work / "log").read_text().split("\n")[:-1]
    # Calls 1 and 2 ran once; only call 3, in flight at the kill, ran again.
    assert log == ["start 1", "done 1", "start 2", "done 2", "start 3", "start 3", "done 3"]
    saved = _checkpointer(url).load("t")  # type: ignore[attr-defined]
    assert transcript(saved.messages) == [
        ("human", "run three jobs"),
        ("ai", ""),
        ("tool", "job 1 done"),
        ("tool", "job 2 done"),
        ("tool", "job 3 done"),
        ("ai", "all jobs done"),
    ]
