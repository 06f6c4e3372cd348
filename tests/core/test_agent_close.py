"""``agent.close()``: middleware holding resources (sessions, processes) release them."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from typing import Any

import attrs

import plait
from plait.testing import ai, call, scripted


@attrs.define
class Holder(plait.Middleware):
    log: list[str]
    label: str

    def before_model(self) -> None:
        return None

    def close(self) -> None:
        self.log.append(f"close {self.label}")


@attrs.define
class AsyncHolder(Holder):
    async def aclose(self) -> None:
        self.log.append(f"aclose {self.label}")


def test_close_calls_each_middleware_close_last_first() -> None:
    log: list[str] = []
    agent = plait.create_agent(
        model=scripted("hi"), middleware=[Holder(log, "a"), Holder(log, "b")]
    )
    with agent:
        assert agent.invoke("x").text == "hi"
        assert log == []
    assert log == ["close b", "close a"]


def test_aclose_prefers_aclose_and_runs_close_otherwise() -> None:
    log: list[str] = []
    agent = plait.create_agent(
        model=scripted("hi"), middleware=[AsyncHolder(log, "a"), Holder(log, "b")]
    )
    asyncio.run(agent.aclose())
    assert log == ["close b", "aclose a"]


async def _fetch(url: str) -> str:
    """An async tool: under sync ``invoke`` it runs on the agent's event-loop thread."""
    await asyncio.sleep(0)
    return f"fetched {url}"


def _loop_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "plait-event-loop")


def _run_async_tool(agent: plait.Agent) -> None:
    result = agent.invoke("go")
    assert result.messages[2].text == "fetched a"


def _agent() -> plait.Agent:
    return plait.create_agent(
        model=scripted(ai("", call("_fetch", url="a")), "done"), tools=[_fetch]
    )


def test_close_stops_the_event_loop_thread_of_every_agent_built() -> None:
    before = _loop_threads()
    for _ in range(50):
        agent = _agent()
        _run_async_tool(agent)
        assert _loop_threads() == before + 1
        agent.close()
    assert _loop_threads() == before


def test_an_agent_dropped_without_close_leaves_no_loop_thread() -> None:
    before = _loop_threads()
    for _ in range(20):
        _run_async_tool(_agent())
    gc.collect()
    deadline = time.monotonic() + 10
    while _loop_threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _loop_threads() == before


def test_a_closed_agent_runs_again_and_aclose_stops_its_thread_too() -> None:
    before = _loop_threads()
    agent = _agent()
    _run_async_tool(agent)
    agent.close()
    agent.compiled.model.responses.extend(  # type: ignore[attr-defined]
        [ai("", call("_fetch", url="a")), "again"]
    )
    _run_async_tool(agent)
    assert _loop_threads() == before + 1
    asyncio.run(agent.aclose())
    assert _loop_threads() == before


def test_close_during_a_run_cancels_its_async_tool_instead_of_hanging_it() -> None:
    """The run goes on: the model is told the call was cancelled."""
    started = threading.Event()

    async def wait_forever() -> str:
        """Never answers."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    agent = plait.create_agent(
        model=scripted(ai("", call("wait_forever")), "done"), tools=[wait_forever]
    )
    outcome: list[Any] = []

    def run() -> None:
        outcome.append(agent.invoke("go"))

    runner = threading.Thread(target=run)
    runner.start()
    assert started.wait(10)
    agent.close()
    runner.join(10)
    assert not runner.is_alive()
    (result,) = outcome
    assert result.messages[2].text.startswith("Error: tool 'wait_forever' raised CancelledError")
    assert result.text == "done"
