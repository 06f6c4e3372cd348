"""``plait.effects``: every model call and tool run goes through the installed performers,
which may watch them or answer them from a record; ``id_source`` makes ids repeatable."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

import plait
from plait import effects
from plait.testing import ai, call, scripted, transcript

T = TypeVar("T")


@plait.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Watcher:
    """Logs each effect it performs, then lets it happen."""

    def __init__(self, label: str = "w", log: list[Any] | None = None) -> None:
        self.label = label
        self.log: list[Any] = [] if log is None else log

    def _entry(self, effect: effects.Effect) -> Any:
        if isinstance(effect, effects.ModelCall):
            return (self.label, "model", effect.streaming, len(effect.messages))
        return (self.label, "tool", effect.request.tool_call.name)

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        self.log.append(self._entry(effect))
        return proceed()

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        self.log.append(self._entry(effect))
        return await proceed()


def _agent(*responses: Any, **kwargs: Any) -> plait.Agent:
    return plait.create_agent(scripted(*responses), tools=[add], **kwargs)


RESPONSES = (ai("", call("add", a=1, b=2)), "3")


def test_invoke_performs_each_model_call_and_tool_run() -> None:
    watcher = Watcher()
    agent = _agent(*RESPONSES)
    with effects.performing(watcher):
        assert agent.invoke("1+2?").text == "3"
    assert watcher.log == [("w", "model", False, 1), ("w", "tool", "add"), ("w", "model", False, 3)]


@pytest.mark.parametrize("how", ["ainvoke", "stream", "astream"])
def test_every_path_performs_the_same_effects(how: str) -> None:
    watcher = Watcher()
    agent = _agent(*RESPONSES)
    streaming = how != "ainvoke"

    async def run_async() -> None:
        if how == "ainvoke":
            await agent.ainvoke("1+2?")
        else:
            async for _ in agent.astream("1+2?", mode="messages"):
                pass

    with effects.performing(watcher):
        if how == "stream":
            list(agent.stream("1+2?", mode="messages"))
        else:
            asyncio.run(run_async())
    # The scripted model's stream is built on its invoke: one effect, not two.
    assert watcher.log == [
        ("w", "model", streaming, 1),
        ("w", "tool", "add"),
        ("w", "model", streaming, 3),
    ]


def test_model_calls_made_by_middleware_are_effects_too() -> None:
    @plait.wrap_model_call
    def twice(request: plait.ModelRequest, handler: Any) -> Any:
        handler(request)  # a first attempt, thrown away (as a retry would)
        return handler(request)

    watcher = Watcher()
    agent = _agent("first", "second", middleware=[twice])
    with effects.performing(watcher):
        assert agent.invoke("hi").text == "second"
    assert watcher.log == [("w", "model", False, 1), ("w", "model", False, 1)]


def test_performers_nest_first_installed_outermost() -> None:
    log: list[Any] = []
    agent = _agent("done")
    with effects.performing(Watcher("outer", log)), effects.performing(Watcher("inner", log)):
        agent.invoke("hi")
    assert log == [("outer", "model", False, 1), ("inner", "model", False, 1)]


class Recording:
    """Answers each effect from a record when it has one — what a durable engine does on
    replay — and counts how often the real call happened."""

    def __init__(self) -> None:
        self.record: dict[int, Any] = {}
        self.position = 0
        self.real = 0

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        index, self.position = self.position, self.position + 1
        if index not in self.record:
            self.real += 1
            result = proceed()
            if isinstance(effect, effects.ModelCall) and effect.streaming:
                result = list(result)  # type: ignore[call-overload]
            self.record[index] = result
        return self.record[index]  # type: ignore[no-any-return]

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        raise NotImplementedError


def test_a_performer_can_answer_from_a_record_without_calling_anything() -> None:
    recording = Recording()
    first = _agent(*RESPONSES)
    with effects.performing(recording), effects.id_source(map(str, itertools.count()).__next__):
        original = first.invoke("1+2?")
    assert recording.real == 3

    # Replay: a fresh agent whose model has no answers at all, and a tool that must not run.
    calls: list[int] = []

    @plait.tool(name="add")
    def counting_add(a: int, b: int) -> int:
        """Add."""
        calls.append(a)
        return a + b

    replayed_agent = plait.create_agent(scripted(), tools=[counting_add])
    recording.position = 0
    with effects.performing(recording), effects.id_source(map(str, itertools.count()).__next__):
        replayed = replayed_agent.invoke("1+2?")
    assert recording.real == 3 and calls == []
    assert transcript(replayed.messages) == transcript(original.messages)
    assert [m.id for m in replayed.messages] == [m.id for m in original.messages]
    assert replayed.run_id == original.run_id


def test_recorded_stream_chunks_are_replayed() -> None:
    recording = Recording()
    agent = _agent("streamed words here")
    with effects.performing(recording):
        live = [e.data.content for e in agent.stream("go", mode="messages")]
    recording.position = 0
    with effects.performing(recording):
        replay = [e.data.content for e in _agent().stream("go", mode="messages")]
    assert replay == live
    assert "".join(live) == "streamed words here"


def test_id_source_gives_run_thread_and_message_ids() -> None:
    ids = (f"id{n}" for n in itertools.count())
    agent = plait.create_agent(scripted("hi"), checkpointer="memory")
    with effects.id_source(ids.__next__):
        result = agent.invoke("hello")
    assert result.thread_id == "id0" and result.run_id == "id1"
    assert [m.id for m in result.messages] == ["id2", "id3"]


def test_no_performer_means_no_effect_objects() -> None:
    assert not effects.active()
    with effects.performing(Watcher()):
        assert effects.active()
    assert not effects.active()


def test_tools_see_a_stable_idempotency_key() -> None:
    keys: list[str] = []

    @plait.tool
    def pay(amount: int, runtime: plait.ToolRuntime) -> str:
        """Pay."""
        keys.append(runtime.idempotency_key)
        return "paid"

    agent = plait.create_agent(
        scripted(ai("", call("pay", id="call_9", amount=5)), "ok"), tools=[pay]
    )
    result = agent.invoke("pay 5")
    assert keys == [f"{result.run_id}:call_9"]


def test_a_sync_tool_raising_stop_iteration_does_not_hang_ainvoke() -> None:
    @plait.tool
    def empty() -> str:
        """Reads from an exhausted iterator."""
        return next(iter([]))

    agent = plait.create_agent(scripted(ai("", call("empty")), "recovered"), tools=[empty])

    async def main() -> plait.AgentResult:
        return await asyncio.wait_for(agent.ainvoke("go"), timeout=10)

    result = asyncio.run(main())
    error = result.messages[2]
    assert error.status == "error"
    assert "RuntimeError: the tool raised StopIteration" in error.text
    assert result.text == "recovered"
