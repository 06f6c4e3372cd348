"""Two processes, one thread: new input for a thread whose run is live in another process
is refused before anything is written, so the live run never loses the thread after
some of its steps were committed (a client retrying that run's ``ThreadBusyError``
would have duplicated the turn). A run that failed, or whose process went quiet for
longer than the lease, does not block the thread."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import fresh_postgres_schema

import plait
from plait import checkpoint
from plait.errors import ThreadBusyError
from plait.testing import ScriptedChatModel, transcript

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    import plait
    from plait.messages import AIMessage, ToolCall
    from plait.models import ScriptedChatModel

    url, work, fail = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "fail"

    def slow() -> str:
        \"\"\"Take a while.\"\"\"
        (work / "in-tool").touch()
        while not (work / "go").exists():
            time.sleep(0.05)
        if fail:
            raise SystemExit(3)
        return "slow done"

    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[ToolCall("slow", {}, "c1")]), "A's answer"]
    )
    agent = plait.create_agent(model, tools=[slow], checkpointer=url)
    result = agent.invoke("A's question", thread_id="t")
    print(json.dumps({"text": result.text}))
    """
)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'agent.db'}"
    else:
        with fresh_postgres_schema() as found:
            yield found


def _start(url: str, work: Path, mode: str = "ok") -> subprocess.Popen[str]:
    script = work / "a.py"
    script.write_text(SCRIPT)
    process = subprocess.Popen(
        [sys.executable, str(script), url, str(work), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (work / "in-tool").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "process A never reached its tool"
        time.sleep(0.05)
    return process


def test_new_input_for_a_run_live_in_another_process_is_refused_and_that_run_ends_well(
    url: str, tmp_path: Path
) -> None:
    a = _start(url, tmp_path)
    b = plait.create_agent(ScriptedChatModel(["B's answer"]), checkpointer=url)
    before = b.get_state("t")["messages"]  # A's question and tool call are committed
    with pytest.raises(ThreadBusyError, match="run in progress in another process"):
        b.invoke("B's question", thread_id="t")
    assert b.get_state("t")["messages"] == before  # B wrote nothing
    (tmp_path / "go").touch()
    out, err = a.communicate(timeout=60)
    assert a.returncode == 0, err
    assert json.loads(out) == {"text": "A's answer"}
    assert transcript(b.get_state("t")["messages"]) == [
        ("human", "A's question"),
        ("ai", ""),
        ("tool", "slow done"),
        ("ai", "A's answer"),
    ]
    assert b.invoke("B's question", thread_id="t").text == "B's answer"  # A's run ended


def test_a_run_whose_process_went_quiet_past_the_lease_is_taken_over(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _start(url, tmp_path)
    try:
        monkeypatch.setattr(checkpoint, "RUN_LEASE", 0.0)
        b = plait.create_agent(ScriptedChatModel(["B's answer"]), checkpointer=url)
        result = b.invoke("B's question", thread_id="t")
        assert result.text == "B's answer"
        assert "Not run: this call was not finished" in result.messages[2].text
    finally:
        (tmp_path / "go").touch()
        a.communicate(timeout=60)
    assert a.returncode != 0  # A's save after the takeover lost: it wrote nothing more


def test_a_run_that_failed_leaves_the_thread_free_for_another_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    script = tmp_path / "fail.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import plait
            from plait.models import ScriptedChatModel

            def broken() -> str:
                \"\"\"Fail.\"\"\"
                return "never"

            agent = plait.create_agent(ScriptedChatModel([]), checkpointer=sys.argv[1])
            try:
                agent.invoke("A's question", thread_id="t")
            except Exception as exc:
                print(type(exc).__name__)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script), url], capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "ScriptExhaustedError", out.stderr
    b = plait.create_agent(ScriptedChatModel(["B's answer"]), checkpointer=url)
    assert b.invoke("B's question", thread_id="t").text == "B's answer"
