"""``messages`` mode shows every answer: a model call that streamed no chunk (a hook that
answered it, a cached answer, a nested agent answering it) gives its AI message once,
whole, as LangGraph's messages mode does for a node's message it saw no token of."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.messages import AIMessage, AIMessageChunk
from plait.nesting import nest
from plait.testing import ai, call


@plait.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def _answering(text: str) -> Any:
    """A ``wrap_model_call`` hook answering every call itself, the model never asked."""

    @plait.wrap_model_call
    def answer(request: plait.ModelRequest, handler: Any) -> Any:
        return AIMessage(text)

    return answer


def _collect(agent: plait.Agent, *, use_async: bool, **kwargs: Any) -> list[plait.StreamEvent]:
    if not use_async:
        return list(agent.stream("hi", mode="messages", **kwargs))

    async def run() -> list[plait.StreamEvent]:
        return [event async for event in agent.astream("hi", mode="messages", **kwargs)]

    return asyncio.run(run())


def _whole(events: list[plait.StreamEvent]) -> list[tuple[tuple[str, ...], str, str]]:
    return [(e.path, e.source, e.data.text) for e in events if isinstance(e.data, AIMessage)]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_an_answer_a_hook_gave_streams_once_whole(make_agent: Any, use_async: bool) -> None:
    agent = make_agent(["never asked"], middleware=[_answering("from the hook")])
    events = _collect(agent, use_async=use_async, thread_id="t")

    assert _whole(events) == [((), "model", "from the hook")]
    assert not [e for e in events if isinstance(e.data, AIMessageChunk)]
    # the message streamed is the one the thread keeps
    assert events[0].data.id == agent.get_state("t")["messages"][-1].id


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_streamed_answer_is_not_sent_again_whole(make_agent: Any, use_async: bool) -> None:
    @plait.wrap_model_call
    def passes(request: plait.ModelRequest, handler: Any) -> Any:
        return handler(request)

    agent = make_agent([ai("", call("add", a=1)), "two it is"], tools=[add], middleware=[passes])
    events = _collect(agent, use_async=use_async)

    assert _whole(events) == []
    chunks = [e.data.content for e in events if isinstance(e.data, AIMessageChunk)]
    assert "".join(chunks) == "two it is"


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_each_unstreamed_call_of_a_run_gives_its_message(make_agent: Any, use_async: bool) -> None:
    """A hook that answers the second call only: the first streams its chunks, the second
    (after the tool) arrives whole, between the tool's message and the end."""
    calls = 0

    @plait.wrap_model_call
    def second(request: plait.ModelRequest, handler: Any) -> Any:
        nonlocal calls
        calls += 1
        return handler(request) if calls == 1 else AIMessage("answered by the hook")

    agent = make_agent([ai("", call("add", a=1))], tools=[add], middleware=[second])
    events = _collect(agent, use_async=use_async)

    kinds = [type(e.data).__name__ for e in events]
    assert kinds[-2:] == ["ToolMessage", "AIMessage"]
    assert _whole(events) == [((), "model", "answered by the hook")]


def test_no_stream_and_other_modes_get_no_whole_message(make_agent: Any) -> None:
    agent = make_agent(["x"], middleware=[_answering("hooked")])
    events = list(agent.stream("hi", mode=["updates", "values"]))
    assert all(e.mode != "messages" for e in events)
    assert agent.invoke("hi").messages[-1].text == "hooked"


def test_langgraph_shape_names_the_model_node(make_agent: Any) -> None:
    agent = make_agent(["x"], middleware=[_answering("hooked")])
    items = list(agent.stream("hi", stream_mode="messages"))
    assert [(type(m).__name__, m.text, meta["langgraph_node"]) for m, meta in items] == [
        ("AIMessage", "hooked", "model")
    ]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_nested_agent_answering_the_call_shows_at_both_paths(
    make_agent: Any, use_async: bool
) -> None:
    """A handoff-style hook: another agent answers the model call inside ``nest``. Its
    chunks stream below the name; the outer run's path gets the answer whole, once."""
    receiver = make_agent(["the receiver speaks"], checkpointer=None)

    @plait.wrap_model_call
    def hand_off(request: plait.ModelRequest, handler: Any) -> Any:
        with nest("receiver"):
            result = receiver.invoke(list(request.messages))
        return result.messages[-1]

    @plait.wrap_model_call
    async def ahand_off(request: plait.ModelRequest, handler: Any) -> Any:
        with nest("receiver"):
            result = await receiver.ainvoke(list(request.messages))
        return result.messages[-1]

    agent = make_agent(["never asked"], middleware=[ahand_off if use_async else hand_off])
    events = _collect(agent, use_async=use_async)

    inner = [e.data.content for e in events if e.path == ("receiver",)]
    assert "".join(inner) == "the receiver speaks"
    assert all(isinstance(e.data, AIMessageChunk) for e in events if e.path)
    assert _whole(events) == [((), "model", "the receiver speaks")]
