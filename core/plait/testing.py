"""Test kit for plait and for plugin authors: a pytest plugin (entry point ``pytest11``).

Fixtures: ``make_agent`` (an agent on a scripted model, memory checkpointer by default),
``scripted_model`` (a factory), ``checkpointer`` (a fresh ``MemoryCheckpointer``),
``hook_recorder``, ``replay_server`` (a loopback HTTP server replaying a provider's wire
answers, for testing a provider plugin end to end). Helpers: ``scripted``, ``ai``,
``call``, ``transcript``, ``FakeSleeper``, ``HookRecorder``, ``ReplayServer``/``Reply``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import pytest

from plait.agent import Agent, create_agent
from plait.checkpoint import MemoryCheckpointer
from plait.hookspecs import NODE_HOOKS
from plait.lazy import define
from plait.messages import AIMessage, Message, ToolCall, ToolMessage
from plait.middleware import Middleware
from plait.models.base import ChatModel
from plait.models.scripted import ScriptedChatModel
from plait.replay import Received, ReplayServer, Reply, split_bytes

__all__ = [
    "FakeSleeper",
    "HookRecorder",
    "Received",
    "ReplayServer",
    "Reply",
    "ai",
    "call",
    "scripted",
    "split_bytes",
    "tool_answers",
    "transcript",
]


def scripted(*responses: Any, **kwargs: Any) -> ScriptedChatModel:
    """A ``ScriptedChatModel`` answering with ``responses`` in order."""
    return ScriptedChatModel(list(responses), **kwargs)


def call(name: str, /, id: str | None = None, **args: Any) -> ToolCall:
    """A tool call for a scripted answer: ``call("get_weather", city="Paris")``
    (``id=`` sets the call id; every other keyword is an argument)."""
    return ToolCall(name, args, id or f"call_{uuid.uuid4().hex[:12]}")


def ai(text: str = "", *tool_calls: ToolCall, **kwargs: Any) -> AIMessage:
    """An AI answer with optional tool calls: ``ai("", call("search", q="x"))``."""
    return AIMessage(text, tool_calls=tool_calls, **kwargs)


def transcript(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """``(type, text)`` per message, for asserting a conversation's shape."""
    return [(m.type, m.text) for m in messages]


def tool_answers(messages: Sequence[Message]) -> dict[str, ToolMessage]:
    """The tool messages of a conversation by the id of the call each answers:
    ``tool_answers(result.messages)["call_1"].content``."""
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


class FakeSleeper:
    """Records delays instead of sleeping: pass it as a retry middleware's ``sleep`` (and
    ``asleep=sleeper.asleep``)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.delays.append(seconds)


@define(eq=False)
class HookRecorder(Middleware):
    """A middleware recording every node hook call as ``(label, hook)`` in ``calls``;
    wrap hooks are recorded around the handler as ``wrap_model_call:enter``/``:exit``."""

    label: str = "recorder"
    calls: list[tuple[str, str]] = attrs.field(factory=list)

    def before_agent(self) -> None:
        self.calls.append((self.label, "before_agent"))

    def before_model(self) -> None:
        self.calls.append((self.label, "before_model"))

    def after_model(self) -> None:
        self.calls.append((self.label, "after_model"))

    def after_agent(self) -> None:
        self.calls.append((self.label, "after_agent"))

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.calls.append((self.label, "wrap_model_call:enter"))
        try:
            return handler(request)
        finally:
            self.calls.append((self.label, "wrap_model_call:exit"))

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.calls.append((self.label, "wrap_tool_call:enter"))
        try:
            return handler(request)
        finally:
            self.calls.append((self.label, "wrap_tool_call:exit"))

    def hooks(self) -> list[str]:
        return [hook for _, hook in self.calls]


assert set(NODE_HOOKS) <= set(dir(HookRecorder))


@pytest.fixture
def scripted_model() -> Callable[..., ScriptedChatModel]:
    """A factory: ``scripted_model("hi", ai("", call("f")))``."""
    return scripted


@pytest.fixture
def replay_server() -> Iterator[ReplayServer]:
    """A loopback HTTP server that answers a provider's requests with the replies the test
    queues and records what it was sent (``plait.replay``); closed after the test. Point a
    provider at ``replay_server.url`` to test it end to end over httpx."""
    server = ReplayServer()
    yield server
    server.close()


@pytest.fixture
def checkpointer() -> MemoryCheckpointer:
    """A fresh in-memory checkpointer."""
    return MemoryCheckpointer()


@pytest.fixture
def hook_recorder() -> HookRecorder:
    return HookRecorder()


@pytest.fixture
def make_agent() -> Iterator[Callable[..., Agent]]:
    """A factory building agents for a test: ``make_agent(["hi"], tools=[...],
    middleware=[...])``. The first argument is a ``ChatModel`` or a list of scripted
    responses; the checkpointer is ``"memory"`` unless given (``None`` for none)."""

    def factory(
        model: ChatModel | Sequence[Any] | str = (),
        *,
        tools: Sequence[Any] = (),
        middleware: Sequence[Any] = (),
        checkpointer: Any = "memory",
        **kwargs: Any,
    ) -> Agent:
        if not isinstance(model, (ChatModel, str)):
            model = scripted(*model)
        return create_agent(
            model, tools, middleware=middleware, checkpointer=checkpointer, **kwargs
        )

    yield factory
