"""``tool_retry``: attempts, delays, the tools filter and give-up variants, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, ProviderError, ToolCallFailedError
from plait.testing import FakeSleeper, ai, call, transcript
from plait_tool_retry import ToolRetryMiddleware


class Flaky:
    """A tool body failing with ``errors`` in order, then answering; counts calls."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "fetched"


def make_tool(name: str, body: Flaky) -> plait.Tool:
    def run() -> str:
        return body()

    run.__name__ = name
    run.__doc__ = f"The {name} tool."
    return plait.tool(run)


@pytest.fixture
def sleeper() -> FakeSleeper:
    return FakeSleeper()


def retry(sleeper: FakeSleeper, **options: Any) -> ToolRetryMiddleware:
    options.setdefault("jitter", False)
    return ToolRetryMiddleware(sleep=sleeper, asleep=sleeper.asleep, **options)


def script(name: str = "fetch") -> list[Any]:
    return [ai("", call(name, id="c1")), "done"]


def test_retries_a_failing_tool_until_it_answers(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(ConnectionError("reset"), ConnectionError("reset"))
    agent = make_agent(script(), tools=[make_tool("fetch", body)], middleware=[retry(sleeper)])
    result = agent.invoke("go")
    assert transcript(result.messages) == [
        ("human", "go"),
        ("ai", ""),
        ("tool", "fetched"),
        ("ai", "done"),
    ]
    assert body.calls == 3
    assert sleeper.delays == [1.0, 2.0]


def test_continue_gives_the_model_an_error_message(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(*(TimeoutError("boom") for _ in range(3)))
    agent = make_agent(script(), tools=[make_tool("fetch", body)], middleware=[retry(sleeper)])
    result = agent.invoke("go")
    answer = result.messages[2]
    assert answer.type == "tool"
    assert answer.status == "error"
    assert answer.tool_call_id == "c1"
    assert answer.text == (
        "Error: tool 'fetch' failed after 3 attempts with TimeoutError: boom. You may call it "
        "again (with different arguments if they could be the cause) or take another approach."
    )
    assert result.text == "done"  # the model carried on
    assert body.calls == 3
    assert sleeper.delays == [1.0, 2.0]


def test_error_stops_the_run_with_the_tool_error_as_cause(
    make_agent: Any, sleeper: FakeSleeper
) -> None:
    body = Flaky(TimeoutError("first"), TimeoutError("second"))
    agent = make_agent(
        script(),
        tools=[make_tool("fetch", body)],
        middleware=[retry(sleeper, max_retries=1, on_failure="error")],
    )
    with pytest.raises(ToolCallFailedError) as raised:
        agent.invoke("go", thread_id="t")
    assert str(raised.value) == "tool 'fetch' failed after 2 attempts with TimeoutError: second"
    assert isinstance(raised.value.__cause__, TimeoutError)
    assert str(raised.value.__cause__) == "second"
    assert agent.model.calls == 1  # the model is not asked again
    # the history stays valid: the call is answered
    state = agent.get_state("t")
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool"]


def test_a_formatter_writes_the_tool_message(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(ConnectionError("id"), ConnectionError("id"), ConnectionError("id"))
    agent = make_agent(
        script(),
        tools=[make_tool("fetch", body)],
        middleware=[retry(sleeper, on_failure=lambda exc: f"fetch is down: {exc!r}")],
    )
    answer = agent.invoke("go").messages[2]
    assert answer.text == "fetch is down: ConnectionError('id')"
    assert answer.status == "error"


@pytest.mark.parametrize(("old", "raises"), [("raise", True), ("return_message", False)])
def test_deprecated_on_failure_values_still_work(
    make_agent: Any, sleeper: FakeSleeper, old: str, raises: bool
) -> None:
    with pytest.warns(DeprecationWarning, match=f"on_failure='{old}' is deprecated"):
        middleware = retry(sleeper, max_retries=0, on_failure=old)
    agent = make_agent(
        script(), tools=[make_tool("fetch", Flaky(TimeoutError("x")))], middleware=[middleware]
    )
    if raises:
        with pytest.raises(ToolCallFailedError):
            agent.invoke("go")
    else:
        assert "failed after 1 attempt with TimeoutError: x" in agent.invoke("go").messages[2].text


def test_only_the_listed_tools_are_retried(make_agent: Any, sleeper: FakeSleeper) -> None:
    flaky, fragile = Flaky(TimeoutError("a")), Flaky(TimeoutError("b"))
    tools = [make_tool("flaky", flaky), make_tool("fragile", fragile)]
    agent = make_agent(
        [ai("", call("flaky", id="c1"), call("fragile", id="c2")), "done"],
        tools=tools,
        middleware=[retry(sleeper, tools=["flaky"])],
    )
    result = agent.invoke("go")
    by_call = {m.tool_call_id: m for m in result.messages if m.type == "tool"}
    assert by_call["c1"].text == "fetched"
    # not retried: the kernel turns the error into a message, as for any tool error
    assert by_call["c2"].status == "error"
    assert "TimeoutError: b" in by_call["c2"].text
    assert (flaky.calls, fragile.calls) == (2, 1)
    assert sleeper.delays == [1.0]


def test_tools_may_be_given_as_tool_objects(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(TimeoutError("a"))
    fetch = make_tool("fetch", body)
    middleware = retry(sleeper, tools=[fetch])
    assert middleware.tools == ("fetch",)
    make_agent(script(), tools=[fetch], middleware=[middleware]).invoke("go")
    assert body.calls == 2


def test_a_non_matching_error_is_not_retried(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(ValueError("bad input"))
    agent = make_agent(
        script(),
        tools=[make_tool("fetch", body)],
        middleware=[retry(sleeper, retry_on=(ConnectionError,))],
    )
    answer = agent.invoke("go").messages[2]
    assert body.calls == 1
    assert sleeper.delays == []
    assert answer.status == "error"
    assert "failed after" not in answer.text  # on_failure was not consulted


def test_non_retryable_provider_errors_are_not_retried_by_default(
    make_agent: Any, sleeper: FakeSleeper
) -> None:
    body = Flaky(ProviderError("unauthorized", status_code=401))
    agent = make_agent(script(), tools=[make_tool("fetch", body)], middleware=[retry(sleeper)])
    agent.invoke("go")
    assert body.calls == 1
    assert sleeper.delays == []


def test_retry_after_from_a_tool_error_is_honoured(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(ProviderError("rate limited", status_code=429, retry_after=20.0))
    agent = make_agent(script(), tools=[make_tool("fetch", body)], middleware=[retry(sleeper)])
    assert agent.invoke("go").messages[2].text == "fetched"
    assert sleeper.delays == [20.0]


def test_constant_and_capped_delays(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(*(TimeoutError() for _ in range(4)))
    middleware = retry(sleeper, max_retries=4, backoff_factor=0, initial_delay=0.5)
    make_agent(script(), tools=[make_tool("fetch", body)], middleware=[middleware]).invoke("go")
    assert sleeper.delays == [0.5, 0.5, 0.5, 0.5]
    capped, sleeper2 = Flaky(*(TimeoutError() for _ in range(4))), FakeSleeper()
    middleware = retry(sleeper2, max_retries=4, initial_delay=1.0, max_delay=3.0)
    make_agent(script(), tools=[make_tool("fetch", capped)], middleware=[middleware]).invoke("go")
    assert sleeper2.delays == [1.0, 2.0, 3.0, 3.0]


def test_parallel_calls_are_retried_independently(make_agent: Any, sleeper: FakeSleeper) -> None:
    first, second = Flaky(TimeoutError("x")), Flaky()
    agent = make_agent(
        [ai("", call("one", id="c1"), call("two", id="c2")), "done"],
        tools=[make_tool("one", first), make_tool("two", second)],
        middleware=[retry(sleeper)],
    )
    result = agent.invoke("go")
    assert [m.text for m in result.messages if m.type == "tool"] == ["fetched", "fetched"]
    assert (first.calls, second.calls) == (2, 1)


# -- async --------------------------------------------------------------------------------


def test_async_path_retries_an_async_tool_with_asleep(make_agent: Any) -> None:
    sync_sleeper, async_sleeper = FakeSleeper(), FakeSleeper()
    attempts: list[int] = []

    @plait.tool
    async def lookup() -> str:
        """Look something up."""
        attempts.append(1)
        if len(attempts) < 3:
            raise TimeoutError("slow")
        return "found"

    middleware = ToolRetryMiddleware(sleep=sync_sleeper, asleep=async_sleeper.asleep, jitter=False)
    agent = make_agent(script("lookup"), tools=[lookup], middleware=[middleware])
    result = asyncio.run(agent.ainvoke("go"))
    assert result.messages[2].text == "found"
    assert len(attempts) == 3
    assert async_sleeper.delays == [1.0, 2.0]
    assert sync_sleeper.delays == []


def test_async_give_up_variants(make_agent: Any, sleeper: FakeSleeper) -> None:
    body = Flaky(*(TimeoutError("no") for _ in range(2)))
    agent = make_agent(
        script(), tools=[make_tool("fetch", body)], middleware=[retry(sleeper, max_retries=1)]
    )
    result = asyncio.run(agent.ainvoke("go"))
    assert result.messages[2].text.startswith("Error: tool 'fetch' failed after 2 attempts")
    failing = Flaky(*(TimeoutError("no") for _ in range(2)))
    stopping = make_agent(
        script(),
        tools=[make_tool("fetch", failing)],
        middleware=[retry(sleeper, max_retries=1, on_failure="error")],
    )
    with pytest.raises(ToolCallFailedError) as raised:
        asyncio.run(stopping.ainvoke("go"))
    assert isinstance(raised.value.__cause__, TimeoutError)
    assert sleeper.delays == [1.0, 1.0]


# -- options at create_agent --------------------------------------------------------------


def test_by_name_with_defaults(make_agent: Any) -> None:
    (middleware,) = make_agent([], middleware=["tool_retry"]).middleware
    assert isinstance(middleware, ToolRetryMiddleware)
    assert (middleware.max_retries, middleware.tools, middleware.on_failure) == (
        2,
        None,
        "continue",
    )


def test_unknown_tool_names_fail_at_create_agent(make_agent: Any) -> None:
    fetch = make_tool("fetch", Flaky())
    with pytest.raises(ConfigError) as raised:
        make_agent([], tools=[fetch], middleware=[("tool_retry", {"tools": ["fetch", "serch"]})])
    assert str(raised.value) == (
        "plugin 'tool_retry': option 'tools' names a tool the agent does not have: 'serch' "
        "(did you mean 'fetch'?); the agent's tools are: fetch"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tools": "fetch"}, "option 'tools': expected a list or None, got 'fetch'"),
        ({"tools": [3]}, "option 'tools[0]'"),
        ({"max_retries": -2}, "option 'max_retries': expected an int >= 0, got -2"),
        ({"on_failure": "ignore"}, "option 'on_failure'"),
        ({"retry_on": 7}, "option 'retry_on'"),
        ({"max_delay": "1m"}, "option 'max_delay'"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent([], middleware=[("tool_retry", options)])
    assert str(raised.value).startswith("plugin 'tool_retry': ")
    assert message in str(raised.value)


def test_bad_tools_given_in_python_are_worded_like_every_option() -> None:
    with pytest.raises(ValueError) as raised:
        ToolRetryMiddleware(tools=["search", ""])
    assert str(raised.value) == (
        "tools: expected a list of tool names or Tool objects, or None for every tool, "
        "got ('search', '')"
    )


def test_a_deterministic_error_is_not_retried_by_default(
    make_agent: Any, sleeper: FakeSleeper
) -> None:
    body = Flaky(KeyError("id"))
    agent = make_agent(script(), tools=[make_tool("fetch", body)], middleware=[retry(sleeper)])
    answer = agent.invoke("go").messages[2]
    assert body.calls == 1
    assert sleeper.delays == []
    assert answer.status == "error" and "KeyError" in answer.text
