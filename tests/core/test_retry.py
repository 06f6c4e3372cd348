"""``plait.retry``: the delay sequence, what is retried, and the sync/async loops."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import attrs
import pytest

from plait.errors import ContextOverflowError, ProviderError, ToolCallFailedError
from plait.retry import RetryPolicy, backoff_delays, default_retry_on
from plait.testing import FakeSleeper


def first(n: int, **options: float) -> list[float]:
    return list(itertools.islice(backoff_delays(**options), n))  # type: ignore[arg-type]


def policy(sleeper: FakeSleeper, **options: Any) -> RetryPolicy:
    return RetryPolicy(sleep=sleeper, asleep=sleeper.asleep, **options)


class Flaky:
    """Fails with ``errors`` in order, then returns ``"ok"``; counts attempts."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.attempts = 0

    def __call__(self) -> str:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"

    async def acall(self) -> str:
        return self()


def give_up(exc: Exception, attempts: int) -> str:
    return f"gave up after {attempts}: {exc}"


# -- the delay sequence -------------------------------------------------------------------


def test_delays_grow_by_the_factor_and_stop_at_the_cap() -> None:
    assert first(7, backoff_factor=2.0, initial_delay=1.0, max_delay=10.0) == [
        1.0,
        2.0,
        4.0,
        8.0,
        10.0,
        10.0,
        10.0,
    ]


def test_delays_with_another_base_and_start() -> None:
    assert first(4, backoff_factor=3.0, initial_delay=0.5, max_delay=60.0) == [
        0.5,
        1.5,
        4.5,
        13.5,
    ]


def test_factor_zero_keeps_the_delay_constant() -> None:
    assert first(4, backoff_factor=0.0, initial_delay=2.5, max_delay=60.0) == [2.5] * 4


def test_constant_delay_is_capped_too() -> None:
    assert first(3, backoff_factor=0.0, initial_delay=5.0, max_delay=3.0) == [3.0] * 3


def test_policy_delays_use_its_options() -> None:
    options = RetryPolicy(backoff_factor=2.0, initial_delay=0.25, max_delay=1.0)
    assert list(itertools.islice(options.delays(), 5)) == [0.25, 0.5, 1.0, 1.0, 1.0]


def test_jitter_stays_within_a_quarter_of_the_capped_delay() -> None:
    jittered = RetryPolicy(jitter=True)
    error = ValueError("x")
    waits = [jittered.wait(8.0, error) for _ in range(200)]
    assert all(6.0 <= w <= 10.0 for w in waits)
    assert len(set(waits)) > 1  # actually random, not a fixed factor


def test_without_jitter_the_wait_is_the_delay() -> None:
    assert RetryPolicy(jitter=False).wait(4.0, ValueError()) == 4.0


def test_retry_after_makes_the_wait_at_least_that_long() -> None:
    plain = RetryPolicy(jitter=False)
    assert plain.wait(1.0, ProviderError("slow down", status_code=429, retry_after=7.0)) == 7.0
    assert plain.wait(4.0, ProviderError("slow down", status_code=429, retry_after=1.0)) == 4.0
    # jitter never takes the wait under what the provider asked for
    jittered = RetryPolicy(jitter=True)
    asked = ProviderError("slow down", status_code=429, retry_after=5.0)
    assert all(jittered.wait(5.0, asked) >= 5.0 for _ in range(50))


# -- what is retried ----------------------------------------------------------------------


def test_default_retry_on_retries_only_what_another_attempt_can_fix() -> None:
    import httpx

    from plait.errors import ToolTimeoutError
    from plait.models.scripted import ScriptExhaustedError

    request = httpx.Request("GET", "http://127.0.0.1/")

    def status(code: int) -> httpx.HTTPStatusError:
        response = httpx.Response(code, request=request)
        return httpx.HTTPStatusError("x", request=request, response=response)

    for transient in (
        TimeoutError("slow"),
        ToolTimeoutError("past 5s"),
        ConnectionResetError("reset"),
        httpx.ConnectTimeout("slow", request=request),
        httpx.ConnectError("refused", request=request),
        status(429),
        status(503),
    ):
        assert default_retry_on(transient), transient
    for deterministic in (
        ValueError("boom"),
        KeyError("k"),
        RuntimeError("bug"),
        ScriptExhaustedError("no more answers"),
        FileNotFoundError("x"),
        status(404),
    ):
        assert not default_retry_on(deterministic), deterministic
    assert default_retry_on(ProviderError("busy", status_code=503))
    assert default_retry_on(ProviderError("timeout"))
    assert not default_retry_on(ProviderError("bad key", status_code=401))
    assert not default_retry_on(ProviderError("bad request", status_code=400))
    assert not default_retry_on(ContextOverflowError("too long", status_code=400))


def test_retry_on_types_predicate_and_single_type() -> None:
    by_types = RetryPolicy(retry_on=(TimeoutError, ConnectionError))
    assert by_types.retries(TimeoutError())
    assert by_types.retries(ConnectionResetError())  # subclasses match
    assert not by_types.retries(ValueError())
    assert RetryPolicy(retry_on=KeyError).retries(KeyError("k"))
    assert not RetryPolicy(retry_on=KeyError).retries(ValueError("v"))
    predicate = RetryPolicy(retry_on=lambda exc: "again" in str(exc))
    assert predicate.retries(RuntimeError("try again"))
    assert not predicate.retries(RuntimeError("never"))


def test_a_list_of_types_becomes_a_tuple() -> None:
    assert RetryPolicy(retry_on=[TimeoutError]).retry_on == (TimeoutError,)  # type: ignore[arg-type]


def test_stop_run_errors_are_never_retried() -> None:
    everything = RetryPolicy(retry_on=(Exception,))
    assert not everything.retries(ToolCallFailedError("stop"))
    assert not RetryPolicy(retry_on=lambda exc: True).retries(ToolCallFailedError("stop"))


# -- the loops ----------------------------------------------------------------------------


def test_call_retries_until_success_sleeping_the_delays() -> None:
    sleeper = FakeSleeper()
    flaky = Flaky(ConnectionError("1"), ConnectionError("2"))
    result = policy(sleeper, jitter=False, max_retries=3).call(flaky, give_up)
    assert result == "ok"
    assert flaky.attempts == 3
    assert sleeper.delays == [1.0, 2.0]


def test_call_gives_up_after_max_retries_with_the_last_error() -> None:
    sleeper = FakeSleeper()
    flaky = Flaky(*(ConnectionError(f"failure {i}") for i in range(5)))
    result = policy(sleeper, jitter=False, max_retries=2).call(flaky, give_up)
    assert result == "gave up after 3: failure 2"
    assert flaky.attempts == 3
    assert sleeper.delays == [1.0, 2.0]


def test_zero_retries_means_one_attempt_and_no_sleep() -> None:
    sleeper = FakeSleeper()
    flaky = Flaky(ConnectionError("once"))
    assert policy(sleeper, max_retries=0).call(flaky, give_up) == "gave up after 1: once"
    assert flaky.attempts == 1
    assert sleeper.delays == []


def test_a_non_matching_error_is_raised_at_once_without_give_up() -> None:
    sleeper = FakeSleeper()
    error = ProviderError("bad key", status_code=401)
    flaky = Flaky(error)

    def never(exc: Exception, attempts: int) -> str:
        raise AssertionError("give_up must not run")

    with pytest.raises(ProviderError) as raised:
        policy(sleeper).call(flaky, never)
    assert raised.value is error
    assert flaky.attempts == 1
    assert sleeper.delays == []


def test_give_up_may_re_raise_the_last_error() -> None:
    error = ConnectionError("last")
    flaky = Flaky(ConnectionError("first"), error)

    def reraise(exc: Exception, attempts: int) -> str:
        raise exc

    with pytest.raises(ConnectionError) as raised:
        policy(FakeSleeper(), max_retries=1).call(flaky, reraise)
    assert raised.value is error


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, asyncio.CancelledError, SystemExit])
def test_base_exceptions_are_never_caught(interrupt: type[BaseException]) -> None:
    sleeper = FakeSleeper()
    flaky = Flaky(interrupt())
    with pytest.raises(interrupt):
        policy(sleeper, retry_on=lambda exc: True).call(flaky, give_up)
    assert flaky.attempts == 1
    assert sleeper.delays == []


def test_retry_after_is_slept_in_the_loop() -> None:
    sleeper = FakeSleeper()
    flaky = Flaky(ProviderError("rate limited", status_code=429, retry_after=30.0))
    assert policy(sleeper, jitter=False).call(flaky, give_up) == "ok"
    assert sleeper.delays == [30.0]


def test_acall_sleeps_with_asleep_only() -> None:
    sync_sleeper, async_sleeper = FakeSleeper(), FakeSleeper()
    options = RetryPolicy(
        sleep=sync_sleeper, asleep=async_sleeper.asleep, jitter=False, backoff_factor=0
    )
    flaky = Flaky(ConnectionError("a"), ConnectionError("b"))
    assert asyncio.run(options.acall(flaky.acall, give_up)) == "ok"
    assert async_sleeper.delays == [1.0, 1.0]
    assert sync_sleeper.delays == []


def test_acall_gives_up_and_lets_cancellation_through() -> None:
    sleeper = FakeSleeper()
    failing = Flaky(*(TimeoutError(str(i)) for i in range(3)))
    result = asyncio.run(policy(sleeper, jitter=False).acall(failing.acall, give_up))
    assert result == "gave up after 3: 2"
    assert sleeper.delays == [1.0, 2.0]
    cancelled = Flaky(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(policy(sleeper).acall(cancelled.acall, give_up))
    assert cancelled.attempts == 1


# -- options ------------------------------------------------------------------------------


def test_defaults() -> None:
    options = RetryPolicy()
    assert (options.max_retries, options.on_failure, options.jitter) == (2, "continue", True)
    assert (options.backoff_factor, options.initial_delay, options.max_delay) == (2.0, 1.0, 60.0)
    assert options.retry_on is default_retry_on


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_retries": -1}, "max_retries: expected an int >= 0, got -1"),
        ({"max_retries": 1.5}, "max_retries: expected an int, got 1.5"),
        ({"max_retries": True}, "max_retries: expected an int, got True"),
        ({"backoff_factor": -2}, "backoff_factor: expected a number >= 0, got -2"),
        ({"initial_delay": -0.1}, "initial_delay: expected a number >= 0, got -0.1"),
        ({"max_delay": float("nan")}, "max_delay: expected a number >= 0, got nan"),
        ({"jitter": "yes"}, "jitter: expected a bool, got 'yes'"),
        (
            {"on_failure": "explode"},
            "on_failure: expected one of 'continue', 'error', 'raise', 'return_message' or a "
            "callable (exception -> str), got 'explode'",
        ),
        (
            {"on_failure": 3},
            "on_failure: expected one of 'continue', 'error', 'raise', 'return_message' or a "
            "callable (exception -> str), got 3",
        ),
        (
            {"retry_on": (ValueError, "oops")},
            "retry_on: expected a subclass of Exception, a list of them or a callable "
            "(exception -> bool), got (<class 'ValueError'>, 'oops')",
        ),
        (
            {"retry_on": 5},
            "retry_on: expected a subclass of Exception, a list of them or a callable "
            "(exception -> bool), got 5",
        ),
        (
            {"retry_on": (asyncio.CancelledError,)},
            "retry_on: expected a subclass of Exception, a list of them or a callable "
            "(exception -> bool), got (<class 'asyncio.exceptions.CancelledError'>,) "
            "(CancelledError is not an Exception: interrupts, cancellation and "
            "KeyboardInterrupt are never retried)",
        ),
        ({"sleep": None}, "sleep: expected a callable, got None"),
    ],
)
def test_bad_options_say_which_and_what_was_expected(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        RetryPolicy(**options)
    assert str(info.value) == message


@pytest.mark.parametrize(("old", "new"), [("raise", "error"), ("return_message", "continue")])
def test_deprecated_on_failure_values_warn_and_map(old: str, new: str) -> None:
    expected = f"on_failure='{old}' is deprecated; use on_failure='{new}'"
    with pytest.warns(DeprecationWarning, match=expected):
        options = RetryPolicy(on_failure=old)  # type: ignore[arg-type]
    assert options.failure_mode == new


def test_failure_mode_passes_a_formatter_through() -> None:
    def fmt(exc: Exception) -> str:
        return "x"

    assert RetryPolicy(on_failure=fmt).failure_mode is fmt


def test_policy_is_an_attrs_base_for_middleware() -> None:
    @attrs.frozen(kw_only=True)
    class Mine(RetryPolicy):
        extra: int = 0

    names = [field.name for field in attrs.fields(Mine)]
    assert names[:7] == [
        "max_retries",
        "retry_on",
        "on_failure",
        "backoff_factor",
        "initial_delay",
        "max_delay",
        "jitter",
    ]
    assert Mine(max_retries=4, extra=1).max_retries == 4
