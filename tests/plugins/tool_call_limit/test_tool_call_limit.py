"""``tool_call_limit``: per-tool and global limits, the three exits, counts, valid history."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, ToolCallLimitExceededError
from plait.messages import AIMessage, ToolMessage
from plait.testing import ai, call, transcript
from plait_tool_call_limit import ToolCallLimitMiddleware

THREAD = "tool_call_limit_thread"
RUN = "tool_call_limit_run"

ran: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


@plait.tool
def search(q: str) -> str:
    """Search the web.

    Args:
        q: the query.
    """
    ran.append(f"search:{q}")
    return f"results for {q}"


@plait.tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the page.
    """
    ran.append(f"fetch:{url}")
    return f"page {url}"


TOOLS = [search, fetch]


def assert_every_call_answered_once(messages: Sequence[Any]) -> None:
    """The Better promise: each tool call has exactly one ToolMessage."""
    calls = [c.id for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answers = Counter(m.tool_call_id for m in messages if isinstance(m, ToolMessage))
    assert answers == Counter(calls)


def tool_texts(messages: Sequence[Any]) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)}


# -- continue -----------------------------------------------------------------------------


def test_continue_blocks_calls_over_the_run_limit_and_carries_on(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("search", "c1", q="a"), call("search", "c2", q="b")), "done"],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(tool_name="search", run_limit=1)],
    )
    result = agent.invoke("go")
    assert ran == ["search:a"]
    texts = tool_texts(result.messages)
    assert texts["c1"] == "results for a"
    assert texts["c2"] == (
        "Error: tool call limit exceeded: run limit (2/1 calls). This call to 'search' was not "
        "run. Do not call 'search' again; continue with the results you already have."
    )
    blocked = next(m for m in result.messages if getattr(m, "tool_call_id", None) == "c2")
    assert blocked.status == "error"
    assert result.text == "done"
    assert result.state[THREAD] == {"search": 1}  # the blocked call does not count here
    assert result.state[RUN]["calls"] == {"search": 2}  # every attempt counts here
    assert_every_call_answered_once(result.messages)


def test_when_every_call_is_blocked_the_model_is_asked_again(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", call("search", "c1", q="a")),
            ai("", call("search", "c2", q="b")),
            "answer from what I have",
        ],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(run_limit=1)],
    )
    result = agent.invoke("go")
    assert ran == ["search:a"]
    assert agent.model.calls == 3
    assert transcript(result.messages)[-1] == ("ai", "answer from what I have")
    assert "Do not call any tool again" in tool_texts(result.messages)["c2"]
    # the model saw the error before answering
    last_request = agent.model.requests[-1]
    assert last_request.messages[-1].tool_call_id == "c2"


def test_other_tools_run_while_one_is_blocked(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai(
                "",
                call("search", "c1", q="a"),
                call("fetch", "c2", url="x"),
                call("search", "c3", q="b"),
            ),
            "done",
        ],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(tool_name="search", run_limit=1)],
    )
    result = agent.invoke("go")
    assert ran == ["search:a", "fetch:x"]
    assert tool_texts(result.messages)["c3"].startswith(
        "Error: tool call limit exceeded: run limit (2/1 calls)."
    )
    assert_every_call_answered_once(result.messages)


def test_thread_limit_spans_runs_and_blocked_calls_do_not_count(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", call("search", "c1", q="a"), call("search", "c2", q="b")),
            "first answer",
            ai("", call("search", "c3", q="c")),
            "second answer",
        ],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(tool_name="search", thread_limit=2)],
    )
    first = agent.invoke("one", thread_id="t")
    assert ran == ["search:a", "search:b"]
    assert first.state[THREAD] == {"search": 2}
    second = agent.invoke("two", thread_id="t")
    assert ran == ["search:a", "search:b"]
    assert tool_texts(second.messages)["c3"] == (
        "Error: tool call limit exceeded: thread limit (3/2 calls). This call to 'search' was "
        "not run. Do not call 'search' again in this conversation; continue with the results "
        "you already have."
    )
    assert second.state[THREAD] == {"search": 2}
    assert second.state[RUN]["calls"] == {"search": 1}  # the run count restarted
    assert second.text == "second answer"


def test_run_limit_resets_each_run(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("search", "c1", q="a")), "one", ai("", call("search", "c2", q="b")), "two"],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(run_limit=1)],
    )
    agent.invoke("first", thread_id="t")
    result = agent.invoke("second", thread_id="t")
    assert ran == ["search:a", "search:b"]
    assert result.state[THREAD] == {"__all__": 2}


def test_global_and_per_tool_instances_compose(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", call("search", "c1", q="a"), call("search", "c2", q="b")),
            ai("", call("fetch", "c3", url="x"), call("fetch", "c4", url="y")),
            "done",
        ],
        tools=TOOLS,
        middleware=[
            ToolCallLimitMiddleware(run_limit=2),
            ToolCallLimitMiddleware(tool_name="search", run_limit=1),
        ],
    )
    result = agent.invoke("go")
    # search allows one; the global limiter counts only what reached it (c1) and then
    # allows one fetch before its limit of 2 is used up
    assert ran == ["search:a", "fetch:x"]
    texts = tool_texts(result.messages)
    assert "run limit (2/1 calls)" in texts["c2"] and "'search'" in texts["c2"]
    assert "run limit (3/2 calls)" in texts["c4"] and "any tool" in texts["c4"]
    assert result.state[RUN]["calls"] == {"search": 2, "__all__": 3}
    assert result.state[THREAD] == {"search": 1, "__all__": 2}
    assert_every_call_answered_once(result.messages)


# -- error --------------------------------------------------------------------------------


def test_error_raises_before_any_call_runs_and_keeps_history_valid(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai(
                "",
                call("search", "c1", q="a"),
                call("search", "c2", q="b"),
                call("fetch", "c3", url="x"),
            )
        ],
        tools=TOOLS,
        middleware=[
            ToolCallLimitMiddleware(tool_name="search", run_limit=1, exit_behavior="error")
        ],
    )
    with pytest.raises(ToolCallLimitExceededError) as raised:
        agent.invoke("go", thread_id="t")
    assert str(raised.value) == "Tool call limit exceeded: run limit (2/1 calls) for tool 'search'."
    assert ran == []  # not even the allowed call, nor the other tool's
    messages = agent.get_state("t")["messages"]
    assert_every_call_answered_once(messages)
    texts = tool_texts(messages)
    assert texts["c2"].startswith("Error: tool call limit exceeded: run limit (2/1 calls).")
    assert texts["c1"].startswith("Not run: the tool calls of this turn were stopped")
    assert texts["c3"].startswith("Not run: the tool calls of this turn were stopped")


def test_error_under_the_limit_changes_nothing(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("search", "c1", q="a")), "done"],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(run_limit=1, exit_behavior="error")],
    )
    assert agent.invoke("go").text == "done"
    assert ran == ["search:a"]


def test_thread_can_continue_after_an_error_exit(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("search", "c1", q="a")), ai("", call("search", "c2", q="b")), "fine"],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(thread_limit=1, exit_behavior="error")],
    )
    with pytest.raises(ToolCallLimitExceededError, match=r"thread limit \(2/1 calls\)"):
        agent.invoke("go", thread_id="t")
    # a new message on the same thread starts a new run on a valid history
    assert agent.invoke("just answer", thread_id="t").text == "fine"
    assert agent.model.requests[-1].messages[-1].text == "just answer"


# -- end ----------------------------------------------------------------------------------


def test_end_stops_with_a_tool_message_and_a_final_ai_message(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", call("search", "c1", q="a")),
            ai("", call("search", "c2", q="b"), call("search", "c3", q="c")),
            "never",
        ],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(tool_name="search", run_limit=2, exit_behavior="end")],
    )
    result = agent.invoke("go")
    assert ran == ["search:a"]  # c2 was under the limit, but the batch was stopped
    assert agent.model.calls == 2
    texts = tool_texts(result.messages)
    assert texts["c2"].startswith("Not run: the tool calls of this turn were stopped")
    assert texts["c3"] == (
        "Error: tool call limit exceeded: run limit (3/2 calls). This call to 'search' was "
        "not run, and the agent is stopping."
    )
    assert result.text == (
        "Tool call limit reached: run limit (3/2 calls) for tool 'search'. The agent stopped "
        "before running more tools; start a new conversation or raise the limit to continue."
    )
    assert result.state[THREAD] == {"search": 1}
    assert result.state[RUN]["calls"] == {"search": 3}
    assert_every_call_answered_once(result.messages)


def test_end_for_a_global_limiter(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("search", "c1", q="a"), call("fetch", "c2", url="x"))],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(run_limit=1, exit_behavior="end")],
    )
    result = agent.invoke("go")
    assert ran == []
    assert result.text.startswith("Tool call limit reached: run limit (2/1 calls) for any tool.")
    assert_every_call_answered_once(result.messages)


def test_end_with_other_tools_calls_pending_ends_cleanly(make_agent: Any) -> None:
    # As LangChain 1.5's "end": the other tools' calls are answered as not run and the run
    # ends with the limit's message (it used to raise ToolCallLimitExceededError).
    agent = make_agent(
        [ai("", call("search", "c1", q="a"), call("fetch", "c2", url="x")), "never"],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(tool_name="search", run_limit=0, exit_behavior="end")],
    )
    result = agent.invoke("go", thread_id="t")
    assert ran == []
    assert agent.model.calls == 1
    assert transcript(result.messages) == [
        ("human", "go"),
        ("ai", ""),
        (
            "tool",
            "Error: tool call limit exceeded: run limit (1/0 calls). This call to 'search' was "
            "not run, and the agent is stopping.",
        ),
        (
            "tool",
            "Not run: the tool calls of this turn were stopped because the tool call limit for "
            "tool 'search' was reached (run limit (1/0 calls)).",
        ),
        (
            "ai",
            "Tool call limit reached: run limit (1/0 calls) for tool 'search'. The agent stopped "
            "before running more tools; start a new conversation or raise the limit to continue.",
        ),
    ]
    assert result.state[RUN]["stop"] is None
    assert_every_call_answered_once(agent.get_state("t")["messages"])
    assert agent.get_state("t")["messages"][-1].text == result.text


# -- async --------------------------------------------------------------------------------


def test_async_path(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("search", "c1", q="a"), call("search", "c2", q="b")), "done"],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(run_limit=1)],
    )
    result = asyncio.run(agent.ainvoke("go"))
    assert ran == ["search:a"]
    assert result.text == "done"
    failing = make_agent(
        [ai("", call("search", "c3", q="c"), call("search", "c4", q="d"))],
        tools=TOOLS,
        middleware=[ToolCallLimitMiddleware(run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(ToolCallLimitExceededError):
        asyncio.run(failing.ainvoke("go"))
    assert ran == ["search:a"]


# -- options at create_agent --------------------------------------------------------------


def test_by_name(make_agent: Any) -> None:
    (limiter,) = make_agent(
        [],
        tools=TOOLS,
        middleware=[("tool_call_limit", {"tool_name": "search", "thread_limit": 3})],
    ).middleware
    assert isinstance(limiter, ToolCallLimitMiddleware)
    assert (limiter.tool_name, limiter.thread_limit, limiter.run_limit, limiter.exit_behavior) == (
        "search",
        3,
        None,
        "continue",
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "thread_limit and run_limit are both None: set at least one"),
        ({"thread_limit": 1, "run_limit": 2}, "run_limit (2) may not exceed thread_limit (1)"),
        ({"run_limit": -1}, "option 'run_limit': expected an int >= 0 or None, got -1"),
        ({"run_limit": "3"}, "option 'run_limit': expected an int or None, got '3'"),
        (
            {"run_limit": 1, "exit_behavior": "stop"},
            "option 'exit_behavior': expected one of 'continue', 'error', 'end'",
        ),
        (
            {"run_limit": 1, "tool_name": ""},
            "option 'tool_name': expected a non-empty string or None, got ''",
        ),
        (
            {"run_limit": 1, "tool_name": "serch"},
            "option 'tool_name' names a tool the agent does not have: 'serch' (did you mean "
            "'search'?); the agent's tools are: fetch, search",
        ),
        ({"run_limit": 1, "tools": ["search"]}, "unknown option 'tools'"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent([], tools=TOOLS, middleware=[("tool_call_limit", options)])
    assert str(raised.value).startswith("plugin 'tool_call_limit': ")
    assert message in str(raised.value)


def test_two_instances_for_the_same_tool_are_refused(make_agent: Any) -> None:
    with pytest.raises(
        ConfigError, match="two instances limit tool 'search'; give one instance both"
    ):
        make_agent(
            [],
            tools=TOOLS,
            middleware=[
                ToolCallLimitMiddleware(tool_name="search", run_limit=1),
                ToolCallLimitMiddleware(tool_name="search", thread_limit=5),
            ],
        )
