"""Messages round-trip exactly through JSON; chunks assemble into the message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plait.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    Usage,
    from_json,
    pending_tool_calls,
    to_json,
)
from plait.tokens import count_tokens

json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
json_object = st.dictionaries(st.text(max_size=8), json_value, max_size=4)
content = st.text(max_size=40) | st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)})
    | st.fixed_dictionaries({"type": st.just("image"), "url": st.text(max_size=20)}),
    max_size=3,
)
ids = st.text(alphabet="abcdef0123456789", min_size=1, max_size=12)
usage = st.builds(Usage, *(st.integers(0, 10_000) for _ in range(4)))
tool_calls = st.lists(
    st.builds(
        ToolCall,
        st.text(min_size=1, max_size=10),
        json_object,
        ids,
        st.none() | st.text(max_size=10),
    ),
    max_size=3,
)
messages = st.one_of(
    st.builds(SystemMessage, content, id=ids, metadata=json_object),
    st.builds(HumanMessage, content, id=ids, metadata=json_object),
    st.builds(
        AIMessage,
        content,
        id=ids,
        metadata=json_object,
        tool_calls=tool_calls,
        usage=st.none() | usage,
        response_metadata=json_object,
    ),
    st.builds(
        ToolMessage,
        content,
        id=ids,
        metadata=json_object,
        tool_call_id=ids,
        name=st.none() | st.text(max_size=10),
        status=st.sampled_from(["success", "error"]),
    ),
)


@given(st.lists(messages, max_size=6))
def test_any_message_list_round_trips_exactly(items: list[Any]) -> None:
    text = to_json(items)
    assert from_json(text) == items
    json.loads(text)  # plain JSON, readable by anything


@given(st.text(max_size=60), json_object, st.integers(1, 5))
def test_streamed_chunks_assemble_into_the_message(
    text: str, args: dict[str, Any], cut: int
) -> None:
    raw = json.dumps(args)
    pieces = [raw[i : i + cut] for i in range(0, len(raw), cut)] or [""]
    chunks = [AIMessageChunk(text[: len(text) // 2]), AIMessageChunk(text[len(text) // 2 :])]
    chunks += [
        AIMessageChunk(
            tool_call_chunks=[
                ToolCallChunk(0, "c1" if i == 0 else None, "f" if i == 0 else None, p)
            ]
        )
        for i, p in enumerate(pieces)
    ]
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    message = total.to_message()
    assert message.text == text
    assert message.tool_calls == (ToolCall("f", args, "c1"),)


def test_truncated_arguments_set_the_call_error() -> None:
    chunk = AIMessageChunk(tool_call_chunks=[ToolCallChunk(0, "c1", "search", '{"q": "par')])
    (call,) = chunk.to_message().tool_calls
    assert call.args == {}
    assert call.error is not None and "not valid JSON" in call.error


def test_approximate_token_count_grows_with_text() -> None:
    short = count_tokens([HumanMessage("hi")])
    long = count_tokens([HumanMessage("hi " * 400)])
    assert short < long
    assert long == -(-len("hi " * 400) // 4) + 4


def test_token_estimate_counts_arguments_about_as_json_writes_them_at_any_depth() -> None:
    args = {"to": "jane@example.com", "items": [1, "two", {"three": None}]}
    call = AIMessage("", tool_calls=[{"name": "send", "args": args, "id": "c1"}])
    assert abs(count_tokens([call]) - count_tokens([AIMessage("x" * len(json.dumps(args)))])) <= 2
    deep: dict[str, Any] = {}
    for _ in range(5_000):  # legal, though too deep for json.dumps: estimated, not a crash
        deep = {"a": deep}
    deep_call = AIMessage("", tool_calls=[{"name": "f", "args": deep, "id": "c2"}])
    assert count_tokens([deep_call]) > 5_000


def test_tool_calls_given_as_dicts_are_converted_when_the_message_is_built() -> None:
    from plait.messages import AIMessage, ToolCall

    message = AIMessage(
        "", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]
    )
    assert message.tool_calls == (ToolCall("f", {"x": 1}, "c1"),)
    (generated,) = AIMessage("", tool_calls=[{"name": "g"}]).tool_calls
    assert generated.name == "g" and generated.args == {} and generated.id.startswith("call_")


@pytest.mark.parametrize(
    "bad",
    [
        [{"args": {}}],
        [{"name": "f", "arguments": "{}"}],
        [{"name": "f", "args": "x=1"}],
        ["f"],
    ],
)
def test_malformed_tool_calls_are_refused_when_the_message_is_built(bad: Any) -> None:
    from plait.messages import AIMessage
    from plait.options import show

    with pytest.raises(TypeError) as info:
        AIMessage("", tool_calls=bad)
    assert str(info.value) == (
        "tool_calls[0]: expected a plait.ToolCall or a dict {'name': str, 'args': dict, 'id': "
        f"str (optional)}}, got {show(bad[0])}"
    )


def test_role_content_dicts_are_accepted_as_input() -> None:
    import plait

    agent = plait.create_agent(plait.ScriptedChatModel(["Hello Ada."]))
    result = agent.invoke(
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "I am Ada."},
            ]
        }
    )
    assert [(m.type, m.text) for m in result.messages] == [
        ("system", "Be brief."),
        ("human", "I am Ada."),
        ("ai", "Hello Ada."),
    ]
    listed = plait.create_agent(plait.ScriptedChatModel(["ok"])).invoke(
        [{"role": "user", "content": "hi"}]
    )
    assert [m.type for m in listed.messages] == ["human", "ai"]
    with pytest.raises(TypeError, match="a message dict needs a 'role'"):
        plait.create_agent(plait.ScriptedChatModel(["x"])).invoke(
            {"messages": [{"role": "robot", "content": "hi"}]}
        )


def test_pending_tool_calls_are_the_last_ai_messages_unanswered_calls() -> None:
    first = AIMessage("", tool_calls=[ToolCall("a", {}, "c1")])
    last = AIMessage("", tool_calls=[ToolCall("b", {}, "c2"), ToolCall("c", {}, "c3")])
    answered = ToolMessage("ok", tool_call_id="c2")
    assert pending_tool_calls([]) == []
    assert pending_tool_calls([HumanMessage("hi")]) == []
    assert pending_tool_calls([first]) == [first.tool_calls[0]]
    # only the last AI message counts; an earlier one's calls are never pending again
    assert pending_tool_calls([first, last, answered]) == [last.tool_calls[1]]
    assert pending_tool_calls([first, last, answered, ToolMessage("", tool_call_id="c3")]) == []
    assert pending_tool_calls([last, answered, AIMessage("done")]) == []


def test_an_error_answer_names_its_call_and_keeps_the_text_as_given() -> None:
    from plait.messages import ToolCall, ToolMessage

    call = ToolCall("search", {"q": "x"}, "call_7")
    message = ToolMessage.error(call, "Not run: stopped.", metadata={"why": "limit"})
    assert (message.text, message.tool_call_id, message.name, message.status) == (
        "Not run: stopped.",
        "call_7",
        "search",
        "error",
    )
    assert message.metadata == {"why": "limit"}
    assert ToolMessage.error(call, "Error: no.", name="find").name == "find"


@pytest.mark.parametrize("cls", [SystemMessage, HumanMessage])
def test_system_and_human_messages_are_frozen_attrs_values_of_their_own_class(cls: Any) -> None:
    """They keep ``Message``'s generated methods (no field of their own): each still shows
    and compares as its own class, is frozen, takes no new attribute, is read by attrs
    (fields, evolve), pickles and round-trips through JSON."""
    import pickle

    import attrs

    message = cls("hi", id="m1", metadata={"k": 1})
    assert repr(message) == f"{cls.__name__}(content='hi', id='m1', metadata={{'k': 1}})"
    assert message == cls("hi", id="m1", metadata={"k": 1})
    other = HumanMessage if cls is SystemMessage else SystemMessage
    assert message != other("hi", id="m1", metadata={"k": 1})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.content = "changed"
    with pytest.raises((attrs.exceptions.FrozenInstanceError, AttributeError)):
        message.extra = 1
    assert attrs.has(cls) and [f.name for f in attrs.fields(cls)] == ["content", "id", "metadata"]
    changed = attrs.evolve(message, content="yo")
    assert type(changed) is cls and changed.text == "yo" and changed.id == "m1"
    assert pickle.loads(pickle.dumps(message)) == message
    assert from_json(to_json([message])) == [message]
    assert json.loads(to_json([message]))[0]["type"] == cls.type
