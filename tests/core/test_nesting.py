"""``plait.nesting.nest``: a run started in a model call hook, or under a name inside a tool
call, is nested in the run in progress: usage, per-path usage and stream events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import plait
from plait import usage
from plait.messages import AIMessageChunk, Usage
from plait.middleware import Middleware
from plait.nesting import count, emit, nest, stream_modes
from plait.testing import ai, call, scripted
from plait.types import ModelRequest, ModelResponse

seen: dict[str, Any] = {}


class AnswerWithAnother(Middleware):
    """Answers each model call by running ``other`` nested under ``name``."""

    def __init__(self, other: plait.Agent, name: str) -> None:
        self.other, self.name = other, name

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        with nest(self.name) as path:
            seen["path"] = path
            result = self.other.invoke(list(request.messages))
        ledger = usage.current()
        assert ledger is not None
        seen["nested"] = ledger.nested
        return ModelResponse([plait.AIMessage(result.text)])


def test_a_run_started_in_a_model_call_hook_nests_under_the_name(make_agent: Any) -> None:
    answer = ai("inner", usage=Usage(30, 3))
    other = plait.create_agent(scripted(answer, answer), name="other")
    agent = make_agent(["unused"], middleware=[AnswerWithAnother(other, "helper")])
    events = list(agent.stream("go", mode=["updates", "messages"]))
    assert seen["path"] == ("helper",)
    assert seen["nested"] == {("helper",): Usage(30, 3)}
    nested = [e for e in events if e.path]
    assert {e.path for e in nested} == {("helper",)}
    chunks = [e.data.content for e in nested if e.mode == "messages"]
    assert "".join(chunks) == "inner"
    assert events[-1].path == () and events[-1].data["model"]["messages"][0].text == "inner"
    assert agent.invoke("again").usage == Usage(30, 3)


def test_inside_a_tool_call_the_name_goes_below_the_call(make_agent: Any) -> None:
    other = plait.create_agent(scripted("one", "two"), name="other")

    async def both(runtime: plait.ToolRuntime) -> str:
        """Ask two helpers."""
        answers = []
        for name in ("first", "second"):
            with nest(name):
                answers.append((await other.ainvoke("q")).text)
        return " ".join(answers)

    agent = make_agent([ai("", call("both", "c1")), "done"], tools=[both])

    async def scenario() -> list[plait.StreamEvent]:
        return [e async for e in agent.astream("go", mode="updates")]

    paths = {e.path for e in asyncio.run(scenario())}
    assert paths == {(), ("c1", "first"), ("c1", "second")}


def test_outside_a_run_nest_changes_nothing() -> None:
    other = plait.create_agent(scripted("x"), name="other")
    with nest("anything") as path:
        assert path == ()
        assert other.invoke("q").text == "x"


def test_emit_puts_an_event_below_the_tool_call_in_the_modes_streamed(make_agent: Any) -> None:
    modes_seen: list[frozenset[str]] = []

    def relay(runtime: plait.ToolRuntime) -> str:
        """Relay a remote run's events."""
        modes_seen.append(stream_modes())
        emit(plait.StreamEvent("messages", AIMessageChunk("far "), "model"))
        emit(plait.StreamEvent("custom", {"step": 1}, "custom"))
        with nest("inner"):
            emit(plait.StreamEvent("custom", {"step": 2}, "custom", path=("deep",)))
        return "relayed"

    agent = make_agent([ai("", call("relay", "c1")), "done"] * 3, tools=[relay])
    events = [e for e in agent.stream("go", mode=["custom"]) if e.path]
    assert modes_seen == [frozenset({"custom"})]
    assert [(e.path, e.data) for e in events] == [
        (("c1",), {"step": 1}),
        (("c1", "inner", "deep"), {"step": 2}),
    ]

    async def scenario() -> list[plait.StreamEvent]:
        return [e async for e in agent.astream("go", mode="messages") if e.path]

    chunks = asyncio.run(scenario())
    assert [(e.path, e.data.content) for e in chunks] == [(("c1",), "far ")]
    # Not streamed: nothing to emit to, and emit is a no-op.
    assert agent.invoke("go").text == "done"
    assert modes_seen[-1] == frozenset()


def test_outside_a_run_emit_does_nothing() -> None:
    assert stream_modes() == frozenset()
    emit(plait.StreamEvent("custom", {"lost": True}, "custom"))


def test_count_adds_usage_below_the_tool_call_as_a_nested_run_would(make_agent: Any) -> None:
    ledgers: list[usage.RunUsage] = []

    def remote_work(runtime: plait.ToolRuntime) -> str:
        """Work done elsewhere."""
        ledger = usage.current()
        assert ledger is not None
        ledgers.append(ledger)
        count(Usage(40, 4), calls=2)
        return "done elsewhere"

    agent = make_agent(
        [ai("", call("remote_work", "c1"), usage=Usage(10, 1)), ai("ok", usage=Usage(10, 1))],
        tools=[remote_work],
    )
    result = agent.invoke("go")
    assert result.usage == Usage(60, 6)
    assert ledgers[0].nested == {("c1",): Usage(40, 4)}
    assert ledgers[0].calls == 4
    count(Usage(1, 1))  # outside a run: nothing to count in


def test_a_usage_limit_refuses_the_calls_after_counted_usage(make_agent: Any) -> None:
    def remote_work(runtime: plait.ToolRuntime) -> str:
        """Work done elsewhere."""
        count(Usage(5000, 0))
        return "done elsewhere"

    agent = make_agent(
        [ai("", call("remote_work", "c1")), "never asked"],
        tools=[remote_work],
        middleware=[("usage_limit", {"run_limit": {"total_tokens": 1000}})],
    )
    result = agent.invoke("go")
    assert agent.model.requests[1:] == []  # type: ignore[attr-defined]
    assert result.usage.total_tokens >= 5000
