"""Tool timeouts: per tool (``plait.tool(timeout=...)``) and a default for the agent
(``create_agent(tool_timeout=...)``, ``[agent] tool_timeout``). A call past its limit
becomes an error tool message naming the limit, and the run goes on."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.agentfile import AgentFileError, read_agent_file
from plait.errors import ConfigError
from plait.testing import ai, call, scripted

release = threading.Event()


@plait.tool(timeout=0.2)
def hangs() -> str:
    """Never answers in time."""
    release.wait(30)
    return "late"


@plait.tool(timeout=0.2)
async def ahangs() -> str:
    """Never answers in time."""
    await asyncio.sleep(30)
    return "late"


@plait.tool
def quick() -> str:
    """Answers at once."""
    return "quick answer"


@pytest.fixture(autouse=True)
def _release_abandoned_threads() -> Any:
    release.clear()
    yield
    release.set()


def _run(agent: plait.Agent, path: str) -> plait.AgentResult:
    if path == "sync":
        return agent.invoke("go")
    return asyncio.run(agent.ainvoke("go"))


@pytest.mark.parametrize("path", ["sync", "async"])
@pytest.mark.parametrize("tool", [hangs, ahangs], ids=["sync-tool", "async-tool"])
def test_a_timed_out_call_is_an_error_message_and_the_run_goes_on(
    tool: plait.Tool, path: str
) -> None:
    agent = plait.create_agent(
        scripted(ai("", call(tool.name), call("quick")), "carried on"), tools=[tool, quick]
    )
    started = time.monotonic()
    result = _run(agent, path)
    assert time.monotonic() - started < 10
    timed_out, answered = result.messages[2], result.messages[3]
    assert timed_out.status == "error"
    assert f"tool {tool.name!r} did not finish within its timeout of 0.2 s" in timed_out.text
    assert "ToolTimeoutError" in timed_out.text
    assert answered.text == "quick answer"
    assert result.text == "carried on"


@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_agents_default_applies_to_tools_without_their_own(path: str) -> None:
    @plait.tool
    def slow() -> str:
        """Slow."""
        release.wait(30)
        return "late"

    agent = plait.create_agent(scripted(ai("", call("slow")), "ok"), tools=[slow], tool_timeout=0.1)
    result = _run(agent, path)
    assert "within its timeout of 0.1 s" in result.messages[2].text


def test_a_tools_own_timeout_wins_over_the_default() -> None:
    @plait.tool(timeout=5)
    def sleeps() -> str:
        """Takes a moment."""
        time.sleep(0.3)
        return "made it"

    agent = plait.create_agent(
        scripted(ai("", call("sleeps")), "ok"), tools=[sleeps], tool_timeout=0.05
    )
    assert agent.invoke("go").messages[2].text == "made it"


def test_a_timeout_is_retried_by_tool_retry_like_any_timeout() -> None:
    attempts: list[int] = []

    @plait.tool(timeout=0.2)
    def flaky() -> str:
        """Hangs the first time."""
        attempts.append(1)
        if len(attempts) == 1:
            release.wait(30)
        return "second time lucky"

    agent = plait.create_agent(
        scripted(ai("", call("flaky")), "ok"),
        tools=[flaky],
        middleware=[("tool_retry", {"max_retries": 1, "initial_delay": 0, "jitter": False})],
    )
    result = agent.invoke("go")
    assert result.messages[2].text == "second time lucky"
    assert len(attempts) == 2


@pytest.mark.parametrize("bad", [0, -1, "5", True])
def test_bad_timeouts_are_refused_where_they_are_given(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"timeout: expected a number (> 0 )?or None, got "):
        plait.tool(timeout=bad)(lambda: "x")
    with pytest.raises(ConfigError, match=r"^tool_timeout: expected a number (> 0 )?or None, got "):
        plait.create_agent(scripted("x"), tool_timeout=bad)


def test_agent_files_set_the_default(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('[agent]\nmodel = "scripted:x"\ntool_timeout = 2.5\n')
    assert read_agent_file(path).build().tool_timeout == 2.5
    bad = tmp_path / "bad.toml"
    bad.write_text('[agent]\nmodel = "scripted:x"\ntool_timeout = 0\n')
    with pytest.raises(AgentFileError, match=r"\[agent\] tool_timeout: expected a number > 0 or"):
        read_agent_file(bad)
