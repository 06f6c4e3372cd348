"""context_editing: what the model receives and what the thread keeps."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.messages import AIMessage, HumanMessage, ToolMessage
from plait.testing import ai, call
from plait.tokens import count_tokens
from plait_context_editing import ClearToolUsesEdit, ContextEditingMiddleware


@plait.tool
def fetch(page: int) -> str:
    """Fetch one page of a long document.

    Args:
        page: the page number.
    """
    return f"page {page}: " + "lorem ipsum " * 40


@plait.tool
def note(text: str) -> str:
    """Keep a short note.

    Args:
        text: the note.
    """
    return "noted " + text


def tool_script(pages: int) -> list[AIMessage]:
    calls = [ai("", call("fetch", id=f"c{i}", page=i)) for i in range(1, pages + 1)]
    return [*calls, ai("done")]


def tool_contents(messages: Any) -> list[str]:
    return [m.text for m in messages if isinstance(m, ToolMessage)]


def test_clears_oldest_results_in_request_only(make_agent: Any) -> None:
    mw = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger_tokens=200, keep=2)])
    agent = make_agent(tool_script(4), tools=[fetch], middleware=[mw])
    agent.invoke("read the document", thread_id="t")

    last = agent.model.requests[-1].messages
    contents = tool_contents(last)
    assert contents[:2] == ["[cleared]", "[cleared]"]
    assert contents[2].startswith("page 3:") and contents[3].startswith("page 4:")
    cleared = [m for m in last if isinstance(m, ToolMessage) and m.text == "[cleared]"]
    assert all(m.metadata["context_editing"] == {"cleared": True} for m in cleared)
    # the thread keeps every result in full (persist=False)
    stored = tool_contents(agent.get_state("t")["messages"])
    assert [c.split(":")[0] for c in stored] == ["page 1", "page 2", "page 3", "page 4"]


def test_below_trigger_nothing_is_cleared(make_agent: Any) -> None:
    mw = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger_tokens=100_000, keep=0)])
    agent = make_agent(tool_script(3), tools=[fetch], middleware=[mw])
    agent.invoke("read")
    assert "[cleared]" not in tool_contents(agent.model.requests[-1].messages)


def test_trigger_counts_the_system_prompt(make_agent: Any) -> None:
    history_only = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger_tokens=10_000)])
    messages = [
        HumanMessage("read"),
        ai("", call("fetch", id="c1", page=1)),
        ToolMessage("x" * 400, tool_call_id="c1", name="fetch"),
    ]
    tokens = count_tokens(messages)
    edit = ClearToolUsesEdit(trigger_tokens=tokens + 5, keep=0)
    agent = make_agent(
        ["ok"], middleware=[ContextEditingMiddleware(edits=[edit])], system_prompt="s" * 200
    )
    agent.invoke(messages)
    assert tool_contents(agent.model.requests[0].messages) == ["[cleared]"]
    agent2 = make_agent(["ok"], middleware=[history_only], system_prompt="s" * 200)
    agent2.invoke(messages)
    assert tool_contents(agent2.model.requests[0].messages) == ["x" * 400]


def test_persist_writes_clearing_to_state(make_agent: Any) -> None:
    mw = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger_tokens=200, keep=1)], persist=True
    )
    agent = make_agent(tool_script(3), tools=[fetch], middleware=[mw])
    agent.invoke("read", thread_id="t")
    stored = agent.get_state("t")["messages"]
    assert tool_contents(stored)[:2] == ["[cleared]", "[cleared]"]
    assert tool_contents(stored)[2].startswith("page 3:")
    # the order of messages is unchanged: cleared messages were replaced in place
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai", "tool", "ai", "tool", "ai"]
    assert tool_contents(agent.model.requests[-1].messages)[:2] == ["[cleared]", "[cleared]"]


def test_clear_at_least_stops_once_enough_is_reclaimed(make_agent: Any) -> None:
    mw = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger_tokens=100, keep=0, clear_at_least=10)]
    )
    agent = make_agent(tool_script(4), tools=[fetch], middleware=[mw])
    agent.invoke("read")
    contents = tool_contents(agent.model.requests[-1].messages)
    assert contents[0] == "[cleared]"
    assert all(c.startswith("page") for c in contents[1:])


def test_exclude_and_include_tools(make_agent: Any) -> None:
    script = [
        ai("", call("note", id="n1", text="a" * 300)),
        ai("", call("fetch", id="f1", page=1)),
        ai("", call("note", id="n2", text="b" * 300)),
        ai("", call("fetch", id="f2", page=2)),
        ai("done"),
    ]
    exclude = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger_tokens=50, keep=0, exclude_tools=["note"])]
    )
    agent = make_agent(script, tools=[fetch, note], middleware=[exclude])
    agent.invoke("go")
    by_name = {
        m.tool_call_id: m.text
        for m in agent.model.requests[-1].messages
        if isinstance(m, ToolMessage)
    }
    assert by_name["f1"] == by_name["f2"] == "[cleared]"
    assert by_name["n1"].startswith("noted") and by_name["n2"].startswith("noted")

    include = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger_tokens=50, keep=0, include_tools=["note"])]
    )
    agent = make_agent(script, tools=[fetch, note], middleware=[include])
    agent.invoke("go")
    by_name = {
        m.tool_call_id: m.text
        for m in agent.model.requests[-1].messages
        if isinstance(m, ToolMessage)
    }
    assert by_name["n1"] == by_name["n2"] == "[cleared]"
    assert by_name["f1"].startswith("page") and by_name["f2"].startswith("page")


def test_clear_tool_inputs_empties_matching_call_args(make_agent: Any) -> None:
    mw = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger_tokens=50, keep=1, clear_tool_inputs=True)],
        persist=True,
    )
    agent = make_agent(tool_script(2), tools=[fetch], middleware=[mw])
    agent.invoke("read", thread_id="t")
    stored = agent.get_state("t")["messages"]
    calls = {c.id: c.args for m in stored if isinstance(m, AIMessage) for c in m.tool_calls}
    assert calls == {"c1": {}, "c2": {"page": 2}}


def test_custom_placeholder_and_idempotence() -> None:
    edit = ClearToolUsesEdit(trigger_tokens=0, keep=0, placeholder="(result removed)")
    messages = [
        HumanMessage("go"),
        ai("", call("fetch", id="c1", page=1)),
        ToolMessage("long " * 50, tool_call_id="c1", name="fetch"),
    ]
    once, changed = edit.apply(messages, count_tokens)
    assert changed == {messages[2].id}
    assert once[2].text == "(result removed)"
    twice, changed_again = edit.apply(once, count_tokens)
    assert changed_again == set()
    assert twice == once


def test_already_cleared_results_still_count_for_keep() -> None:
    # keep protects the newest results whether or not they were cleared before
    edit = ClearToolUsesEdit(trigger_tokens=0, keep=1)
    messages = [
        ai("", call("fetch", id="c1", page=1), call("fetch", id="c2", page=2)),
        ToolMessage("one " * 40, tool_call_id="c1", name="fetch"),
        ToolMessage("two " * 40, tool_call_id="c2", name="fetch"),
    ]
    edited, changed = edit.apply(messages, count_tokens)
    assert [m.text for m in edited[1:]] == ["[cleared]", "two " * 40]
    assert changed == {messages[1].id}


def test_async_path_edits_the_request(make_agent: Any) -> None:
    mw = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger_tokens=200, keep=1)])
    agent = make_agent(tool_script(3), tools=[fetch], middleware=[mw])
    asyncio.run(agent.ainvoke("read"))
    assert tool_contents(agent.model.requests[-1].messages)[:2] == ["[cleared]", "[cleared]"]


def test_stacked_instances_apply_in_order(make_agent: Any) -> None:
    first = ContextEditingMiddleware(
        edits=[
            ClearToolUsesEdit(
                trigger_tokens=50, keep=0, include_tools=["note"], placeholder="[note cleared]"
            )
        ]
    )
    second = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger_tokens=50, keep=0, placeholder="[other cleared]")]
    )
    script = [
        ai("", call("note", id="n1", text="a" * 300)),
        ai("", call("fetch", id="f1", page=1)),
        ai("done"),
    ]
    agent = make_agent(script, tools=[fetch, note], middleware=[first, second])
    agent.invoke("go")
    texts = tool_contents(agent.model.requests[-1].messages)
    assert texts == ["[note cleared]", "[other cleared]"]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"edits": [{"trigger_tokens": -1}]}, "trigger_tokens"),
        ({"edits": [{"keep": "three"}]}, "keep"),
        ({"edits": [{"clear_at_least": -5}]}, "clear_at_least"),
        ({"edits": [{"include_tools": ["a"], "exclude_tools": ["a"]}]}, "include_tools"),
        ({"edits": [{"trigger": 5}]}, "trigger"),
        ({"persist": "yes"}, "persist"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(plait.ConfigError) as info:
        make_agent(["x"], middleware=[("context_editing", options)])
    assert "context_editing" in str(info.value)
    assert fragment in str(info.value)


def test_negative_numbers_are_refused_in_the_house_wording(make_agent: Any) -> None:
    with pytest.raises(plait.ConfigError) as info:
        make_agent(["x"], middleware=[("context_editing", {"edits": [{"keep": -1}]})])
    assert str(info.value) == (
        "plugin 'context_editing': option 'edits[0].keep': expected an int >= 0, got -1"
    )
    with pytest.raises(ValueError, match=r"clear_at_least: expected an int >= 0, got -5"):
        ClearToolUsesEdit(clear_at_least=-5)


def test_options_by_name(make_agent: Any) -> None:
    options = {
        "edits": [{"trigger_tokens": 100, "keep": 1, "placeholder": "gone"}],
        "persist": True,
    }
    agent = make_agent(tool_script(2), tools=[fetch], middleware=[("context_editing", options)])
    agent.invoke("read", thread_id="t")
    assert tool_contents(agent.get_state("t")["messages"])[0] == "gone"
