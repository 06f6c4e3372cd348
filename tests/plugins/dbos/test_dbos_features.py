"""Model calls that are not the agent's own, inside a durable run, across a crash: a
summarization middleware's call (an async hook), a sub-agent behind the ``task`` tool (an
async tool) and the agent's streamed calls. The worker SIGKILLs itself half-way through
streaming the final answer; a worker restarted with its id takes the run over. Each
finished call ran once, the streamed text reaches the submitter with the interrupted
call marked, and the thread holds each message once (real PostgreSQL, real processes).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import features_app  # noqa: E402


def _worker(url: str, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "features_app.py"), "f1", url],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("f1#")
    return process


def test_middleware_sub_agent_and_streamed_calls_replay_once(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait_dbos import submit
    from plait_dbos._submit import _client

    log = tmp_path / "calls.log"
    monkeypatch.setenv("FEATURES_LOG", str(log))
    env = {**os.environ, "FEATURES_LOG": str(log), "CRASH_MARKER": str(tmp_path / "crashed")}
    agent = features_app.build_agent(database_url)
    first = _worker(database_url, env)
    second = None
    try:
        queued = submit(agent, "the question", thread_id="t", stream=True)
        pieces: list[tuple[str, bool]] = []
        reader = threading.Thread(
            target=lambda: pieces.extend((p.text, p.again) for p in queued.stream())
        )
        reader.start()
        assert first.wait(timeout=120) == -9  # killed itself mid-stream
        second = _worker(database_url, env)  # same id: takes the run over at once
        result = queued.result()
        reader.join(timeout=60)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.communicate()

    calls = collections.Counter(line.split()[1] for line in log.read_text().splitlines())
    steps = [
        s["function_name"] for s in _client(database_url).list_workflow_steps(queued.workflow_id)
    ]
    print(f"\nmodel calls {dict(calls)}\nsteps {collections.Counter(steps)}\npieces {pieces}")
    assert result["text"] == "the answer is 42"
    # each call ran once, but for the one the worker died in
    assert calls == {
        "main-first": 1,
        "researcher": 1,
        "summarizer": 1,
        "main-final-streamed": 2,
    }
    assert collections.Counter(steps)["plait.model:summarizer"] == 1
    assert collections.Counter(steps)["plait.tool:task"] == 1
    assert collections.Counter(steps)["plait.model:main"] == 2
    # the text as it came: the interrupted call's piece, then the call made again
    assert pieces == [
        ("Asking. ", False),
        ("the answer ", False),
        ("the answer ", True),
        ("is ", False),
        ("42", False),
    ]
    checkpointer = agent.checkpointer
    assert checkpointer is not None
    thread = checkpointer.load("t")
    assert thread is not None
    messages = thread.messages
    assert len({m.id for m in messages}) == len(messages)
    texts = [m.text for m in messages]
    assert texts.count("the answer is 42") == 1
    assert sum("SUMMARY of the research" in t for t in texts) == 1
    [sub_thread] = [t for t in checkpointer.list_threads() if t.startswith("t/task/")]
    sub = checkpointer.load(sub_thread)
    assert sub is not None
    assert [m.text for m in sub.messages] == ["look up the question", "found: 42"]
