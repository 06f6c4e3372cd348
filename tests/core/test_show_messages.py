"""``show_messages``: the whole messages a ``messages`` stream sends (a tool's answer, an
answer that streamed no token) pass through it, in middleware order; the thread, the
``updates`` events and ``result`` keep them as written."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs
import pytest

import plait
from plait.messages import AIMessageChunk, Message


@plait.tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


class Marks(plait.Middleware):
    def __init__(self, mark: str, seen: list[Any]) -> None:
        self.mark = mark
        self.seen = seen

    def show_messages(self, messages: list[Message], state: Mapping[str, Any]) -> list[Message]:
        self.seen.append(len(state["messages"]))
        return [attrs.evolve(m, content=f"{m.text}{self.mark}") for m in messages]


def agent_with(*middleware: plait.Middleware, runs: int = 1) -> plait.Agent:
    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("echo", {"text": "hi"})]), "bye"] * runs
    )
    return plait.create_agent(model, tools=[echo], checkpointer="memory", middleware=middleware)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_streams_whole_messages_are_shown_in_middleware_order(use_async: bool) -> None:
    seen: list[Any] = []
    agent = agent_with(Marks("+a", seen), Marks("+b", seen))
    modes = ["messages", "updates"]
    if use_async:

        async def consume() -> list[Any]:
            return [e async for e in agent.astream("go", thread_id="t", stream_mode=modes)]

        events = asyncio.run(consume())
    else:
        events = list(agent.stream("go", thread_id="t", stream_mode=modes))
    whole = [
        d[0].text for m, d in events if m == "messages" and not isinstance(d[0], AIMessageChunk)
    ]
    assert whole == ["hi+a+b"]  # the tool's answer; the model's answers streamed tokens
    assert seen == [3, 3]  # the state holds the message shown
    tool_update = next(d["tools"] for m, d in events if m == "updates" and "tools" in d)
    assert tool_update["messages"][0].text == "hi"
    assert agent.get_state("t")["messages"][2].text == "hi"


def test_it_runs_only_while_messages_are_streamed() -> None:
    seen: list[Any] = []
    agent = agent_with(Marks("+a", seen), runs=2)
    assert agent.invoke("go", thread_id="t").messages[2].text == "hi"
    list(agent.stream("go", thread_id="u", mode="updates"))
    assert seen == []


def test_a_hook_that_returns_another_number_of_messages_is_a_type_error() -> None:
    class Drops(plait.Middleware):
        def show_messages(self, messages: list[Message], state: Mapping[str, Any]) -> list[Message]:
            return []

    with pytest.raises(TypeError, match="show_messages returned 0 messages for 1"):
        list(agent_with(Drops()).stream("go", mode="messages"))
