"""``model_call_limit``: thread and run limits, both exits, counts in (checkpointed) state."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, ModelCallLimitExceededError
from plait.testing import ai, call, scripted, transcript
from plait_model_call_limit import ModelCallLimitMiddleware

THREAD = "model_call_limit_thread"
RUN = "model_call_limit_run"


@plait.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def looping(n: int) -> list[Any]:
    """A model that calls ``ping`` ``n`` times, then would answer "done"."""
    return [ai("", call("ping")) for _ in range(n)] + ["done"]


def test_run_limit_ends_with_a_message_naming_the_limit(make_agent: Any) -> None:
    agent = make_agent(looping(5), tools=[ping], middleware=[ModelCallLimitMiddleware(run_limit=2)])
    result = agent.invoke("go")
    assert agent.model.calls == 2
    assert transcript(result.messages) == [
        ("human", "go"),
        ("ai", ""),
        ("tool", "pong"),
        ("ai", ""),
        ("tool", "pong"),
        (
            "ai",
            "Model call limit reached: run limit (2/2). The agent stopped without calling the "
            "model again; start a new conversation or raise the limit to continue.",
        ),
    ]
    assert result.state[RUN]["calls"] == 2
    assert result.state[THREAD] == {"calls": 2}


def test_error_exit_raises_with_the_same_text(make_agent: Any) -> None:
    agent = make_agent(
        looping(5),
        tools=[ping],
        middleware=[ModelCallLimitMiddleware(run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(
        ModelCallLimitExceededError, match=r"^Model call limit reached: run limit \(1/1\)\.$"
    ):
        agent.invoke("go", thread_id="t")
    assert agent.model.calls == 1
    # the history the checkpoint holds is complete: the call was answered before the stop
    assert [m.type for m in agent.get_state("t")["messages"]] == ["human", "ai", "tool"]


def test_thread_limit_spans_runs(make_agent: Any) -> None:
    agent = make_agent(
        ["one", "two", "three"], middleware=[ModelCallLimitMiddleware(thread_limit=2)]
    )
    assert agent.invoke("a", thread_id="t").text == "one"
    assert agent.invoke("b", thread_id="t").text == "two"
    third = agent.invoke("c", thread_id="t")
    assert third.text.startswith("Model call limit reached: thread limit (2/2).")
    assert agent.model.calls == 2
    assert third.state[THREAD] == {"calls": 2}
    assert third.state[RUN]["calls"] == 0  # this run made no call
    # another thread has its own count
    assert agent.invoke("d", thread_id="other").text == "three"


def test_run_limit_resets_every_run(make_agent: Any) -> None:
    agent = make_agent(["one", "two", "three"], middleware=[ModelCallLimitMiddleware(run_limit=1)])
    assert [agent.invoke(q, thread_id="t").text for q in "abc"] == ["one", "two", "three"]
    assert agent.get_state("t")[THREAD] == {"calls": 3}


def test_both_limits_reached_are_both_named(make_agent: Any) -> None:
    agent = make_agent(
        looping(3),
        tools=[ping],
        middleware=[ModelCallLimitMiddleware(thread_limit=1, run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(ModelCallLimitExceededError) as raised:
        agent.invoke("go")
    assert str(raised.value) == (
        "Model call limit reached: thread limit (1/1) and run limit (1/1)."
    )


def test_limit_zero_never_calls_the_model(make_agent: Any) -> None:
    agent = make_agent([], middleware=[ModelCallLimitMiddleware(run_limit=0)])
    assert agent.invoke("go").text.startswith("Model call limit reached: run limit (0/0).")
    assert agent.model.calls == 0


def test_thread_count_survives_a_new_agent_on_the_same_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'threads.db'}"
    limiter = ModelCallLimitMiddleware(thread_limit=2)
    first = plait.create_agent(scripted("one", "two"), [], middleware=[limiter], checkpointer=url)
    first.invoke("a", thread_id="t")
    first.invoke("b", thread_id="t")
    # a new process would build a new agent: nothing is shared but the database
    model = scripted("never")
    second = plait.create_agent(
        model, [], middleware=[ModelCallLimitMiddleware(thread_limit=2)], checkpointer=url
    )
    result = second.invoke("c", thread_id="t")
    assert result.text.startswith("Model call limit reached: thread limit (2/2).")
    assert model.calls == 0
    assert second.get_state("t")[THREAD] == {"calls": 2}


def test_thread_count_survives_a_new_agent_on_a_shared_memory_checkpointer(
    checkpointer: Any,
) -> None:
    make = lambda model: plait.create_agent(  # noqa: E731
        model, [], middleware=[("model_call_limit", {"thread_limit": 1})], checkpointer=checkpointer
    )
    make(scripted("one")).invoke("a", thread_id="t")
    late = scripted("never")
    assert (
        make(late)
        .invoke("b", thread_id="t")
        .text.startswith("Model call limit reached: thread limit (1/1).")
    )
    assert late.calls == 0


def test_several_instances_share_one_count_without_double_counting(make_agent: Any) -> None:
    agent = make_agent(
        looping(6),
        tools=[ping],
        middleware=[
            ModelCallLimitMiddleware(thread_limit=10),
            ModelCallLimitMiddleware(run_limit=3),
            ModelCallLimitMiddleware(run_limit=3),
        ],
    )
    result = agent.invoke("go")
    assert agent.model.calls == 3
    assert result.state[THREAD] == {"calls": 3}
    assert result.text.startswith("Model call limit reached: run limit (3/3).")


def test_the_stricter_of_two_instances_stops_first(make_agent: Any) -> None:
    agent = make_agent(
        looping(6),
        tools=[ping],
        middleware=[
            ModelCallLimitMiddleware(run_limit=4, exit_behavior="error"),
            ModelCallLimitMiddleware(thread_limit=2),
        ],
    )
    assert agent.invoke("go", thread_id="t").text.startswith(
        "Model call limit reached: thread limit (2/2)."
    )
    assert agent.model.calls == 2


def test_without_a_checkpointer_each_run_starts_from_zero(make_agent: Any) -> None:
    agent = make_agent(
        ["one", "two"], middleware=[ModelCallLimitMiddleware(thread_limit=1)], checkpointer=None
    )
    assert agent.invoke("a").text == "one"
    assert agent.invoke("b").text == "two"


def test_async_path(make_agent: Any) -> None:
    agent = make_agent(looping(4), tools=[ping], middleware=[ModelCallLimitMiddleware(run_limit=2)])
    result = asyncio.run(agent.ainvoke("go"))
    assert result.text.startswith("Model call limit reached: run limit (2/2).")
    assert agent.model.calls == 2
    failing = make_agent(
        looping(4),
        tools=[ping],
        middleware=[ModelCallLimitMiddleware(run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(ModelCallLimitExceededError, match=r"run limit \(1/1\)"):
        asyncio.run(failing.ainvoke("go"))


# -- options at create_agent --------------------------------------------------------------


def test_by_name(make_agent: Any) -> None:
    (limiter,) = make_agent([], middleware=[("model_call_limit", {"run_limit": 3})]).middleware
    assert isinstance(limiter, ModelCallLimitMiddleware)
    assert (limiter.thread_limit, limiter.run_limit, limiter.exit_behavior) == (None, 3, "end")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "thread_limit and run_limit are both None: set at least one"),
        ({"run_limit": -1}, "option 'run_limit': expected an int >= 0 or None, got -1"),
        ({"thread_limit": "two"}, "option 'thread_limit': expected an int or None, got 'two'"),
        ({"thread_limit": True}, "option 'thread_limit'"),
        ({"run_limit": 1.5}, "option 'run_limit'"),
        (
            {"run_limit": 1, "exit_behavior": "stop"},
            "option 'exit_behavior': expected one of 'end', 'error', got 'stop'",
        ),
        ({"run_limit": 1, "limit": 2}, "unknown option 'limit'"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent([], middleware=[("model_call_limit", options)])
    assert str(raised.value).startswith("plugin 'model_call_limit': ")
    assert message in str(raised.value)


def test_a_limitless_instance_is_refused() -> None:
    with pytest.raises(ConfigError, match="thread_limit and run_limit are both None"):
        ModelCallLimitMiddleware()
    with pytest.raises(ValueError, match="exit_behavior"):
        ModelCallLimitMiddleware(run_limit=1, exit_behavior="continue")  # type: ignore[arg-type]


@pytest.mark.parametrize("tool_exit", ["continue", "end"])
def test_counts_every_call_beside_a_tool_call_limit_listed_first(
    make_agent: Any, tool_exit: str
) -> None:
    from plait_tool_call_limit import ToolCallLimitMiddleware

    agent = make_agent(
        [ai("", call("ping")), ai("", call("ping")), "done"],
        tools=[ping],
        middleware=[
            ToolCallLimitMiddleware(run_limit=1, exit_behavior=tool_exit),  # type: ignore[arg-type]
            ModelCallLimitMiddleware(thread_limit=10),
        ],
    )
    result = agent.invoke("go", thread_id="t")
    assert result.state[THREAD] == {"calls": agent.model.calls}
