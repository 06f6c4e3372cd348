"""``model_retry``: attempts, delays, give-up variants and options, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, ProviderError, ToolCallFailedError
from plait.testing import FakeSleeper, ai, call, transcript
from plait_model_retry import ModelRetryMiddleware


def busy(retry_after: float | None = None) -> ProviderError:
    return ProviderError("service unavailable", status_code=503, retry_after=retry_after)


@pytest.fixture
def sleeper() -> FakeSleeper:
    return FakeSleeper()


def retry(sleeper: FakeSleeper, **options: Any) -> ModelRetryMiddleware:
    options.setdefault("jitter", False)
    return ModelRetryMiddleware(sleep=sleeper, asleep=sleeper.asleep, **options)


def test_retries_a_failing_call_until_it_answers(make_agent: Any, sleeper: FakeSleeper) -> None:
    agent = make_agent([busy(), busy(), "hello"], middleware=[retry(sleeper)])
    result = agent.invoke("hi")
    assert transcript(result.messages) == [("human", "hi"), ("ai", "hello")]
    assert agent.model.calls == 3
    assert sleeper.delays == [1.0, 2.0]


def test_every_attempt_sends_the_same_request(make_agent: Any, sleeper: FakeSleeper) -> None:
    agent = make_agent([busy(), "hello"], middleware=[retry(sleeper)], system_prompt="be brief")
    agent.invoke("hi")
    first, second = agent.model.requests
    assert [m.text for m in first.messages] == [m.text for m in second.messages] == ["hi"]
    assert first.system_prompt == second.system_prompt == "be brief"


def test_exponential_delays_are_capped(make_agent: Any, sleeper: FakeSleeper) -> None:
    middleware = retry(sleeper, max_retries=5, initial_delay=0.5, backoff_factor=3.0, max_delay=5)
    agent = make_agent([busy()] * 5 + ["ok"], middleware=[middleware])
    assert agent.invoke("hi").text == "ok"
    assert sleeper.delays == [0.5, 1.5, 4.5, 5.0, 5.0]


def test_factor_zero_waits_the_same_each_time(make_agent: Any, sleeper: FakeSleeper) -> None:
    middleware = retry(sleeper, max_retries=3, backoff_factor=0, initial_delay=2.0)
    agent = make_agent([busy(), busy(), busy(), "ok"], middleware=[middleware])
    assert agent.invoke("hi").text == "ok"
    assert sleeper.delays == [2.0, 2.0, 2.0]


def test_jitter_spreads_each_delay_by_a_quarter(make_agent: Any, sleeper: FakeSleeper) -> None:
    middleware = retry(sleeper, jitter=True, max_retries=3)
    agent = make_agent([busy(), busy(), busy(), "ok"], middleware=[middleware])
    agent.invoke("hi")
    assert len(sleeper.delays) == 3
    for delay, base in zip(sleeper.delays, [1.0, 2.0, 4.0], strict=True):
        assert 0.75 * base <= delay <= 1.25 * base


def test_provider_retry_after_is_honoured(make_agent: Any, sleeper: FakeSleeper) -> None:
    agent = make_agent(
        [busy(retry_after=12.0), busy(retry_after=0.5), "ok"], middleware=[retry(sleeper)]
    )
    assert agent.invoke("hi").text == "ok"
    assert sleeper.delays == [12.0, 2.0]  # at least retry_after; never shorter than the backoff


def test_continue_answers_with_an_ai_message_saying_what_failed(
    make_agent: Any, sleeper: FakeSleeper
) -> None:
    agent = make_agent([busy(), busy(), busy()], middleware=[retry(sleeper)])
    result = agent.invoke("hi")
    assert agent.model.calls == 3
    assert sleeper.delays == [1.0, 2.0]
    last = result.messages[-1]
    assert last.type == "ai"
    assert last.text == (
        "The model call failed after 3 attempts with ProviderError: service unavailable. "
        "No answer could be produced; please try again later."
    )
    assert last.metadata["model_retry"]["attempts"] == 3
    assert last.metadata["model_retry"]["error_type"] == "ProviderError"


def test_error_re_raises_the_models_last_error(make_agent: Any, sleeper: FakeSleeper) -> None:
    last = ProviderError("still down", status_code=502)
    agent = make_agent(
        [busy(), last], middleware=[retry(sleeper, max_retries=1, on_failure="error")]
    )
    with pytest.raises(ProviderError) as raised:
        agent.invoke("hi")
    assert raised.value is last
    assert agent.model.calls == 2
    assert sleeper.delays == [1.0]


def test_a_formatter_writes_the_ai_message(make_agent: Any, sleeper: FakeSleeper) -> None:
    def apologise(exc: Exception) -> str:
        return f"Sorry, the assistant is unavailable ({exc.status_code})."  # type: ignore[attr-defined]

    middleware = retry(sleeper, max_retries=1, on_failure=apologise)
    agent = make_agent([busy(), busy()], middleware=[middleware])
    assert agent.invoke("hi").text == "Sorry, the assistant is unavailable (503)."


@pytest.mark.parametrize(("old", "raises"), [("raise", True), ("return_message", False)])
def test_deprecated_on_failure_values_still_work(
    make_agent: Any, sleeper: FakeSleeper, old: str, raises: bool
) -> None:
    with pytest.warns(DeprecationWarning, match=f"on_failure='{old}' is deprecated"):
        middleware = retry(sleeper, max_retries=0, on_failure=old)
    agent = make_agent([busy()], middleware=[middleware])
    if raises:
        with pytest.raises(ProviderError):
            agent.invoke("hi")
    else:
        assert agent.invoke("hi").text.startswith("The model call failed after 1 attempt with")


def test_deprecated_value_by_name_warns_at_create_agent(make_agent: Any) -> None:
    with pytest.warns(DeprecationWarning, match="use on_failure='error'"):
        agent = make_agent([], middleware=[("model_retry", {"on_failure": "raise"})])
    assert agent.middleware[0].failure_mode == "error"


def test_non_retryable_provider_error_is_raised_at_once(
    make_agent: Any, sleeper: FakeSleeper
) -> None:
    denied = ProviderError("invalid api key", status_code=401)
    agent = make_agent([denied, "never"], middleware=[retry(sleeper)])
    with pytest.raises(ProviderError) as raised:
        agent.invoke("hi")
    assert raised.value is denied
    assert agent.model.calls == 1
    assert sleeper.delays == []


def test_retry_on_types_retries_only_those(make_agent: Any, sleeper: FakeSleeper) -> None:
    middleware = retry(sleeper, retry_on=(TimeoutError,))
    agent = make_agent([TimeoutError("slow"), "ok"], middleware=[middleware])
    assert agent.invoke("hi").text == "ok"
    other = make_agent(
        [ValueError("bad"), "ok"], middleware=[retry(sleeper, retry_on=(TimeoutError,))]
    )
    with pytest.raises(ValueError, match="bad"):
        other.invoke("hi")  # not matched: raised at once, on_failure not consulted
    assert other.model.calls == 1
    assert sleeper.delays == [1.0]


def test_retry_on_predicate(make_agent: Any, sleeper: FakeSleeper) -> None:
    def transient(exc: Exception) -> bool:
        return "transient" in str(exc)

    middleware = retry(sleeper, retry_on=transient)
    agent = make_agent(
        [RuntimeError("transient glitch"), RuntimeError("fatal"), "ok"], middleware=[middleware]
    )
    with pytest.raises(RuntimeError, match="fatal"):
        agent.invoke("hi")
    assert agent.model.calls == 2


def test_stop_run_errors_are_not_retried(make_agent: Any, sleeper: FakeSleeper) -> None:
    def stop(messages: Any, tools: Any) -> Any:
        raise ToolCallFailedError("stop now")

    agent = make_agent([stop, "never"], middleware=[retry(sleeper, retry_on=(Exception,))])
    with pytest.raises(ToolCallFailedError):
        agent.invoke("hi")
    assert agent.model.calls == 1


def test_zero_retries_is_one_attempt(make_agent: Any, sleeper: FakeSleeper) -> None:
    agent = make_agent([busy(), "never"], middleware=[retry(sleeper, max_retries=0)])
    result = agent.invoke("hi")
    assert result.text.startswith("The model call failed after 1 attempt with ProviderError")
    assert agent.model.calls == 1
    assert sleeper.delays == []


def test_each_model_call_of_a_run_gets_its_own_retries(
    make_agent: Any, sleeper: FakeSleeper
) -> None:
    @plait.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    agent = make_agent(
        [busy(), ai("", call("ping")), busy(), busy(), "done"],
        tools=[ping],
        middleware=[retry(sleeper)],
    )
    result = agent.invoke("hi")
    assert transcript(result.messages) == [
        ("human", "hi"),
        ("ai", ""),
        ("tool", "pong"),
        ("ai", "done"),
    ]
    assert sleeper.delays == [1.0, 1.0, 2.0]  # the sequence restarts for the second call


# -- async --------------------------------------------------------------------------------


def test_async_retries_sleep_with_asyncio(make_agent: Any) -> None:
    sync_sleeper, async_sleeper = FakeSleeper(), FakeSleeper()
    middleware = ModelRetryMiddleware(sleep=sync_sleeper, asleep=async_sleeper.asleep, jitter=False)
    agent = make_agent([busy(), busy(retry_after=9.0), "hello"], middleware=[middleware])
    result = asyncio.run(agent.ainvoke("hi"))
    assert result.text == "hello"
    assert agent.model.calls == 3
    assert async_sleeper.delays == [1.0, 9.0]
    assert sync_sleeper.delays == []


def test_async_give_up_variants(make_agent: Any, sleeper: FakeSleeper) -> None:
    agent = make_agent([busy(), busy()], middleware=[retry(sleeper, max_retries=1)])
    assert asyncio.run(agent.ainvoke("hi")).text.startswith(
        "The model call failed after 2 attempts"
    )
    error = ProviderError("down", status_code=500)
    failing = make_agent(
        [busy(), error], middleware=[retry(sleeper, max_retries=1, on_failure="error")]
    )
    with pytest.raises(ProviderError) as raised:
        asyncio.run(failing.ainvoke("hi"))
    assert raised.value is error
    assert sleeper.delays == [1.0, 1.0]


def test_async_non_retryable_is_raised_at_once(make_agent: Any, sleeper: FakeSleeper) -> None:
    agent = make_agent([ProviderError("forbidden", status_code=403)], middleware=[retry(sleeper)])
    with pytest.raises(ProviderError, match="forbidden"):
        asyncio.run(agent.ainvoke("hi"))
    assert sleeper.delays == []


# -- options at create_agent --------------------------------------------------------------


def test_by_name_with_defaults(make_agent: Any) -> None:
    agent = make_agent([], middleware=["model_retry"])
    (middleware,) = agent.middleware
    assert isinstance(middleware, ModelRetryMiddleware)
    assert (middleware.max_retries, middleware.on_failure, middleware.jitter) == (
        2,
        "continue",
        True,
    )
    assert (middleware.backoff_factor, middleware.initial_delay, middleware.max_delay) == (
        2.0,
        1.0,
        60.0,
    )


def test_by_name_takes_exception_types_from_strings(make_agent: Any) -> None:
    agent = make_agent(
        [], middleware=[("model_retry", {"retry_on": ["builtins:TimeoutError"], "max_retries": 4})]
    )
    assert agent.middleware[0].retry_on == (TimeoutError,)
    assert agent.middleware[0].max_retries == 4


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_retries": -1}, "option 'max_retries': expected an int >= 0, got -1"),
        ({"max_retries": "two"}, "option 'max_retries': expected an int, got 'two'"),
        ({"backoff_factor": -1}, "option 'backoff_factor': expected a number >= 0"),
        ({"initial_delay": -3}, "option 'initial_delay': expected a number >= 0"),
        ({"max_delay": -1}, "option 'max_delay': expected a number >= 0"),
        ({"jitter": "yes"}, "option 'jitter': expected a bool"),
        ({"on_failure": "explode"}, "option 'on_failure': expected one of 'continue', 'error'"),
        ({"retry_on": ["asyncio:CancelledError"]}, "option 'retry_on[0]'"),
        ({"tools": ["search"]}, "unknown option 'tools'"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent([], middleware=[("model_retry", options)])
    assert str(raised.value).startswith("plugin 'model_retry': ")
    assert message in str(raised.value)


def test_streaming_runs_are_retried_too(make_agent: Any, sleeper: FakeSleeper) -> None:
    agent = make_agent([busy(), "hello world"], middleware=[retry(sleeper)])
    chunks = [e.data.content for e in agent.stream("hi", mode="messages") if e.source == "model"]
    assert "".join(chunks) == "hello world"
    assert sleeper.delays == [1.0]


def test_an_exhausted_script_is_not_retried() -> None:
    """A deterministic error fails at once: no attempts, no sleeping (was 3 attempts, 4 s)."""
    from plait.models.scripted import ScriptExhaustedError

    sleeper = FakeSleeper()
    agent = plait.create_agent(plait.ScriptedChatModel([]), middleware=[retry(sleeper)])
    with pytest.raises(ScriptExhaustedError):
        agent.invoke("hi")
    assert sleeper.delays == []
