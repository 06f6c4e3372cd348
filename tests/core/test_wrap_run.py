"""``wrap_run``/``awrap_run``: around one whole run, once, seeing start, pause, resume,
failure and end."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, PlaitError, ThreadBusyError
from plait.testing import ai, call, scripted


@plait.tool
def ask(question: str) -> str:
    """Ask the user."""
    return str(plait.interrupt({"question": question}))


@plait.tool
def boom() -> str:
    """Fails the run."""
    raise KeyboardInterrupt


class Recorder(plait.Middleware):
    """Records what a tracer would: each run's request and how it ended."""

    def __init__(self, label: str = "r", log: list[Any] | None = None) -> None:
        self.label = label
        self.log: list[Any] = [] if log is None else log

    def wrap_run(
        self,
        request: plait.RunRequest,
        handler: Callable[[plait.RunRequest], plait.AgentResult],
    ) -> plait.AgentResult:
        self.log.append((self.label, "start", request.resumed, request.streaming))
        try:
            result = handler(request)
        except BaseException as exc:
            self.log.append((self.label, "error", type(exc).__name__))
            raise
        self.log.append((self.label, "paused" if result.interrupts else "done", result.text))
        return result

    async def awrap_run(
        self,
        request: plait.RunRequest,
        handler: Callable[[plait.RunRequest], Awaitable[plait.AgentResult]],
    ) -> plait.AgentResult:
        self.log.append((self.label, "astart", request.resumed, request.streaming))
        result = await handler(request)
        self.log.append((self.label, "adone", result.text))
        return result


def test_wraps_a_run_once_in_middleware_order() -> None:
    log: list[Any] = []
    agent = plait.create_agent(
        scripted("hi"), middleware=[Recorder("a", log), Recorder("b", log)], name="greeter"
    )
    result = agent.invoke("hello")
    assert result.text == "hi"
    assert log == [
        ("a", "start", False, False),
        ("b", "start", False, False),
        ("b", "done", "hi"),
        ("a", "done", "hi"),
    ]


def test_request_carries_the_run_the_thread_and_the_agent_name() -> None:
    seen: list[plait.RunRequest] = []

    @plait.wrap_run
    def spy(request: plait.RunRequest, handler: Any) -> Any:
        seen.append(request)
        return handler(request)

    agent = plait.create_agent(
        scripted("one"), middleware=[spy], checkpointer="memory", name="support"
    )
    result = agent.invoke("question", thread_id="t1", context={"user": 7})
    (request,) = seen
    assert request.input == "question"
    assert request.agent_name == "support"
    assert request.runtime.thread_id == "t1"
    assert request.runtime.run_id == result.run_id
    assert request.runtime.context == {"user": 7}


def test_pause_then_resume_is_two_wrapped_calls_of_one_run() -> None:
    recorder = Recorder()
    agent = plait.create_agent(
        scripted(ai("", call("ask", question="name?")), "hello Ann"),
        tools=[ask],
        middleware=[recorder],
        checkpointer="memory",
    )
    paused = agent.invoke("hi", thread_id="t")
    assert paused.interrupts
    done = agent.invoke(plait.Command(resume="Ann"), thread_id="t")
    assert done.run_id == paused.run_id
    assert recorder.log == [
        ("r", "start", False, False),
        ("r", "paused", ""),
        ("r", "start", True, False),
        ("r", "done", "hello Ann"),
    ]


def test_a_failing_run_is_seen_and_frees_its_thread() -> None:
    recorder = Recorder()
    agent = plait.create_agent(
        scripted(ai("", call("boom")), "never"),
        tools=[boom],
        middleware=[recorder],
        checkpointer="memory",
    )
    with pytest.raises(KeyboardInterrupt):
        agent.invoke("go", thread_id="t")
    assert recorder.log[-1] == ("r", "error", "KeyboardInterrupt")
    # The thread is free again (no ThreadBusyError): a new run on it goes on.
    assert agent.invoke("again", thread_id="t").text == "never"


def test_a_hook_that_raises_before_the_run_frees_the_thread() -> None:
    @plait.wrap_run
    def refuse(request: plait.RunRequest, handler: Any) -> Any:
        raise PermissionError("not today")

    agent = plait.create_agent(scripted("x"), middleware=[refuse], checkpointer="memory")
    for _ in range(2):  # a leaked thread lock would make the second a ThreadBusyError
        with pytest.raises(PermissionError, match="not today"):
            agent.invoke("go", thread_id="t")
    assert agent.model.calls == 0


def test_calling_the_handler_twice_is_refused() -> None:
    @plait.wrap_run
    def twice(request: plait.RunRequest, handler: Any) -> Any:
        handler(request)
        return handler(request)

    agent = plait.create_agent(scripted("a", "b"), middleware=[twice])
    with pytest.raises(PlaitError, match="called its handler a second time"):
        agent.invoke("go")
    assert agent.model.calls == 1


def test_returning_something_else_names_the_middleware() -> None:
    @plait.wrap_run(name="liar")
    def liar(request: plait.RunRequest, handler: Any) -> Any:
        handler(request)
        return "done"

    agent = plait.create_agent(scripted("a"), middleware=[liar])
    with pytest.raises(TypeError, match="middleware 'liar': wrap_run returned str"):
        agent.invoke("go")


def test_async_hook_wraps_ainvoke_and_astream() -> None:
    recorder = Recorder()
    agent = plait.create_agent(scripted("a", "b"), middleware=[recorder])

    async def main() -> None:
        await agent.ainvoke("one")
        stream = agent.astream("two")
        async for _ in stream:
            pass

    asyncio.run(main())
    assert recorder.log == [
        ("r", "astart", False, False),
        ("r", "adone", "a"),
        ("r", "astart", False, True),
        ("r", "adone", "b"),
    ]


def test_sync_stream_is_wrapped_and_says_it_streams() -> None:
    recorder = Recorder()
    agent = plait.create_agent(scripted("streamed"), middleware=[recorder])
    stream = agent.stream("go", mode="messages")
    list(stream)
    assert stream.result is not None and stream.result.text == "streamed"
    assert recorder.log == [("r", "start", False, True), ("r", "done", "streamed")]


def test_an_async_only_hook_is_bridged_on_the_sync_path() -> None:
    log: list[str] = []

    @plait.wrap_run
    async def only_async(request: plait.RunRequest, handler: Any) -> Any:
        log.append("before")
        result = await handler(request)
        log.append(f"after {result.text}")
        return result

    agent = plait.create_agent(scripted("ok"), middleware=[only_async])
    assert agent.invoke("go").text == "ok"
    assert log == ["before", "after ok"]


def test_a_second_call_on_a_busy_thread_is_not_wrapped() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    recorder = Recorder()

    @plait.tool
    async def slow() -> str:
        """Waits."""
        started.set()
        await release.wait()
        return "done"

    agent = plait.create_agent(
        scripted(ai("", call("slow")), "fin"),
        tools=[slow],
        middleware=[recorder],
        checkpointer="memory",
    )

    async def main() -> None:
        first = asyncio.ensure_future(agent.ainvoke("a", thread_id="t"))
        await started.wait()
        with pytest.raises(ThreadBusyError):
            await agent.ainvoke("b", thread_id="t")
        release.set()
        await first

    asyncio.run(main())
    assert [entry[1] for entry in recorder.log] == ["astart", "adone"]


def test_agent_name_is_checked() -> None:
    with pytest.raises(ConfigError) as info:
        plait.create_agent(scripted("x"), name="  ")
    assert str(info.value) == "name: expected a non-empty string, got '  '"
    assert plait.create_agent(scripted("x")).name == "agent"
