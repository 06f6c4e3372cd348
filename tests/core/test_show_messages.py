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
    modes = "messages"
    if use_async:

        async def consume() -> list[Any]:
            return [e async for e in agent.astream("go", thread_id="t", stream_mode=modes)]

        events = asyncio.run(consume())
    else:
        events = list(agent.stream("go", thread_id="t", stream_mode=modes))
    whole = [d[0].text for d in events if not isinstance(d[0], AIMessageChunk)]
    assert whole == ["hi+a+b"]  # the tool's answer; the model's answers streamed tokens
    assert seen == [3, 3]  # the state holds the message shown
    assert agent.get_state("t")["messages"][2].text == "hi"


def test_an_updates_event_carries_its_messages_shown_beside_its_data() -> None:
    """``data`` is the update as the thread keeps it; ``shown`` its messages as the caller
    reads them (what ``plait serve``'s run log records)."""
    seen: list[Any] = []
    agent = agent_with(Marks("+a", seen), runs=2)
    assert agent.invoke("go", thread_id="t").messages[2].text == "hi"
    assert seen == []  # nothing streamed: never called
    events = list(agent.stream("go", thread_id="u", mode="updates"))
    tools = next(e for e in events if e.source == "echo")
    assert tools.data["echo"]["messages"][0].text == "hi"
    assert tools.shown is not None
    assert [m.text for m in tools.shown] == ["hi+a"]
    assert {e.source for e in events if e.shown is not None} == {"model", "echo"}


def test_an_unchanged_update_shows_nothing_beside_it() -> None:
    class Leaves(plait.Middleware):
        def show_messages(self, messages: list[Message], state: Mapping[str, Any]) -> list[Message]:
            return messages

    events = list(agent_with(Leaves()).stream("go", mode="updates"))
    assert [e.shown for e in events] == [None] * len(events)


def test_a_hook_that_returns_another_number_of_messages_is_a_type_error() -> None:
    class Drops(plait.Middleware):
        def show_messages(self, messages: list[Message], state: Mapping[str, Any]) -> list[Message]:
            return []

    with pytest.raises(TypeError, match="show_messages returned 0 messages for 1"):
        list(agent_with(Drops()).stream("go", mode="messages"))
