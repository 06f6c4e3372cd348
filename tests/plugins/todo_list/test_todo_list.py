"""``todo_list``: the write_todos tool, its validated items, the list in state across turns
and in stream updates, the system-prompt section, and one write per message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ai, call, tool_answers, transcript
from plait_todo_list import DEFAULT_SYSTEM_PROMPT, DEFAULT_TOOL_DESCRIPTION, TodoListMiddleware

PLAN = [
    {"content": "Find the vendors", "status": "completed"},
    {"content": "Compare prices", "status": "in_progress"},
    {"content": "Write the summary", "status": "pending"},
]

searched: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    searched.clear()


@plait.tool
def search(q: str) -> str:
    """Search the web.

    Args:
        q: the query.
    """
    searched.append(q)
    return f"results for {q}"


def write(call_id: str, todos: list[dict[str, Any]]) -> Any:
    return call("write_todos", call_id, todos=todos)


def test_write_todos_is_offered_with_a_validated_item_schema(make_agent: Any) -> None:
    agent = make_agent(["hi"], tools=[search], middleware=[TodoListMiddleware()])
    agent.invoke("hello")
    offered = {tool.name: tool for tool in agent.model.requests[0].tools}
    assert set(offered) == {"search", "write_todos"}
    tool = offered["write_todos"]
    assert tool.description == DEFAULT_TOOL_DESCRIPTION
    items = tool.parameters["properties"]["todos"]["items"]
    assert items["required"] == ["content", "status"]
    assert items["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert items["additionalProperties"] is False


def test_the_section_is_appended_to_the_system_prompt(make_agent: Any) -> None:
    agent = make_agent(["hi"], system_prompt="You are terse.", middleware=[TodoListMiddleware()])
    agent.invoke("hello")
    assert agent.model.requests[0].system_prompt == f"You are terse.\n\n{DEFAULT_SYSTEM_PROMPT}"
    assert "one item `in_progress` at" in DEFAULT_SYSTEM_PROMPT
    assert "three or more distinct steps" in DEFAULT_SYSTEM_PROMPT


def test_custom_prompt_and_description_by_name(make_agent: Any) -> None:
    agent = make_agent(
        ["hi"],
        middleware=[
            ("todo_list", {"system_prompt": "Plan with write_todos.", "tool_description": "Plan."})
        ],
    )
    agent.invoke("hello")
    request = agent.model.requests[0]
    assert request.system_prompt == "Plan with write_todos."
    assert [t.description for t in request.tools if t.name == "write_todos"] == ["Plan."]


def test_empty_options_fail_at_create_agent(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("todo_list", {"system_prompt": "  "})])
    assert "plugin 'todo_list'" in str(info.value)
    assert "option 'system_prompt': expected a non-empty string, got '  '" in str(info.value)


def test_the_list_is_in_state_and_survives_across_turns(make_agent: Any) -> None:
    agent = make_agent(
        ["hello", ai("", write("w1", PLAN)), "planned", "still here"],
        middleware=[TodoListMiddleware()],
    )
    before = agent.invoke("hi", thread_id="t")
    assert before.state["todos"] == []
    result = agent.invoke("compare vendors", thread_id="t")
    assert result.state["todos"] == PLAN
    assert tool_answers(result.messages)["w1"].text == (
        "Updated the todo list (3 items):\n"
        "1. [completed] Find the vendors\n"
        "2. [in_progress] Compare prices\n"
        "3. [pending] Write the summary"
    )
    later = agent.invoke("anything else?", thread_id="t")
    assert later.state["todos"] == PLAN
    assert agent.get_state("t")["todos"] == PLAN


def test_each_write_replaces_the_whole_list(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", write("w1", PLAN)),
            ai("", write("w2", [{"content": "Only this", "status": "pending"}])),
            "done",
        ],
        middleware=[TodoListMiddleware()],
    )
    result = agent.invoke("go", thread_id="t")
    assert result.state["todos"] == [{"content": "Only this", "status": "pending"}]
    assert tool_answers(result.messages)["w2"].text == (
        "Updated the todo list (1 item):\n1. [pending] Only this"
    )


@pytest.mark.parametrize(
    ("todos", "problem"),
    [
        (
            [{"content": "x", "status": "started"}],
            "argument 'todos[0].status': expected one of 'pending', 'in_progress', "
            "'completed', got 'started'",
        ),
        ([{"content": "x"}], "todos[0]"),
        (
            [{"content": "", "status": "pending"}],
            "argument 'todos[0].content': expected a non-empty string, got ''",
        ),
        ("not a list", "argument 'todos'"),
    ],
)
def test_bad_items_are_an_error_message_and_leave_the_list(
    make_agent: Any, todos: Any, problem: str
) -> None:
    agent = make_agent(
        [ai("", write("w1", PLAN)), ai("", write("w2", todos)), "ok"],
        middleware=[TodoListMiddleware()],
    )
    result = agent.invoke("go", thread_id="t")
    bad = tool_answers(result.messages)["w2"]
    assert bad.status == "error"
    assert problem in bad.text
    assert result.state["todos"] == PLAN


def test_several_writes_in_one_message_are_all_refused(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", write("w1", PLAN), call("search", "s1", q="vendors"), write("w2", [])),
            "ok",
        ],
        middleware=[TodoListMiddleware()],
        tools=[search],
    )
    result = agent.invoke("go", thread_id="t")
    got = tool_answers(result.messages)
    for call_id in ("w1", "w2"):
        assert got[call_id].status == "error"
        assert got[call_id].text == (
            "Error: write_todos was called 2 times in one message. Each call replaces the "
            "whole list, so none of them was applied. Call write_todos once, with the "
            "complete list."
        )
    assert got["s1"].text == "results for vendors"  # the other call still ran
    assert result.state["todos"] == []
    assert result.text == "ok"


def test_only_duplicate_writes_go_straight_back_to_the_model(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", write("w1", PLAN), write("w2", PLAN)), ai("", write("w3", PLAN)), "ok"],
        middleware=[TodoListMiddleware()],
    )
    result = agent.invoke("go", thread_id="t")
    assert [kind for kind, _ in transcript(result.messages)] == [
        "human",
        "ai",
        "tool",
        "tool",
        "ai",
        "tool",
        "ai",
    ]
    assert result.state["todos"] == PLAN
    assert len(agent.model.requests) == 3


def test_the_list_shows_in_stream_updates(make_agent: Any) -> None:
    agent = make_agent([ai("", write("w1", PLAN)), "ok"], middleware=[TodoListMiddleware()])
    updates = [
        event.data
        for event in agent.stream("plan it", thread_id="t", mode="updates")
        if any("todos" in part for part in event.data.values())
    ]
    assert updates == [
        {
            "write_todos": {
                "todos": PLAN,
                "messages": updates[0]["write_todos"]["messages"],
            }
        }
    ]


def test_no_section_when_the_tool_is_not_offered(make_agent: Any) -> None:
    @plait.wrap_model_call
    def no_tools(request: plait.ModelRequest, handler: Callable[..., Any]) -> Any:
        return handler(request.override(tools=[]))

    agent = make_agent(["hi"], system_prompt="Base.", middleware=[no_tools, TodoListMiddleware()])
    agent.invoke("hello")
    assert agent.model.requests[0].system_prompt == "Base."


def test_async_path(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", write("w1", PLAN)), ai("", write("w2", PLAN), write("w3", PLAN)), "ok"],
        middleware=[TodoListMiddleware()],
    )
    result = asyncio.run(agent.ainvoke("plan", thread_id="t"))
    assert result.state["todos"] == PLAN
    assert tool_answers(result.messages)["w3"].status == "error"
    assert all(r.system_prompt == DEFAULT_SYSTEM_PROMPT for r in agent.model.requests)
