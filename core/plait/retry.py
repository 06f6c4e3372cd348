"""Retrying a call with exponential backoff: the policy behind ``model_retry`` and ``tool_retry``.

``RetryPolicy`` is an attrs class of the options both retry middlewares share; a middleware
inherits it (``class ModelRetryMiddleware(RetryPolicy, plait.Middleware)``) so its options are
these fields, and wraps its call in ``policy.call`` / ``policy.acall``. The delays come from
``backoff``'s wait generators; the loop, the sleeper and the give-up step are plait's own, so
tests can replace the sleeper and a middleware decides what giving up produces.

Never retried, whatever ``retry_on`` says: ``BaseException``s that are not ``Exception``s
(interrupts, ``asyncio.CancelledError``, ``KeyboardInterrupt`` — they are not even caught) and
``plait.errors.StopRun`` errors (they are meant to end the run).
"""

from __future__ import annotations

import itertools
import random
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Literal, TypeAlias, TypeVar

import attrs

from plait._convert import FieldError, expected, integer, number
from plait.errors import ProviderError, StopRun
from plait.lazy import frozen

__all__ = [
    "FailureMode",
    "OnFailure",
    "RetryOn",
    "RetryPolicy",
    "backoff_delays",
    "default_retry_on",
    "describe_error",
]

T = TypeVar("T")

RetryOn: TypeAlias = type[Exception] | tuple[type[Exception], ...] | Callable[[Exception], bool]
"""Which errors are retried: exception types (subclasses match) or a predicate."""

OnFailure: TypeAlias = (
    Literal["continue", "error", "raise", "return_message"] | Callable[[Exception], str]
)
"""What happens when retries run out: ``"continue"`` (a message with the error),
``"error"`` (stop the run), or a function formatting the message. ``"raise"`` and
``"return_message"`` are deprecated spellings of ``"error"`` and ``"continue"``."""

FailureMode: TypeAlias = Literal["continue", "error"] | Callable[[Exception], str]
"""``on_failure`` with the deprecated spellings replaced."""

_DEPRECATED = {"raise": "error", "return_message": "continue"}
_MODES = ("continue", "error", *_DEPRECATED)
JITTER = 0.25
"""Jitter spreads each delay uniformly over ±25% of it."""


_RETRYABLE_STATUS = frozenset({408, 409, 429})


def default_retry_on(exc: Exception) -> bool:
    """Retry only what another attempt can fix: timeouts (``TimeoutError``, so
    ``ToolTimeoutError`` too, and httpx's), connection errors (``ConnectionError``, httpx's
    transport errors), HTTP 408/409/429/5xx (``httpx.HTTPStatusError``) and a
    ``ProviderError`` whose ``retryable`` is true. Anything else is deterministic — a bug,
    bad arguments, an exhausted script, a 400/401/404 — and fails at once.

    Widen it with ``retry_on``: exception classes, or a predicate such as
    ``lambda exc: default_retry_on(exc) or isinstance(exc, MyFlakyError)``.
    """
    if isinstance(exc, ProviderError):
        return exc.retryable
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    # An httpx error exists only once httpx is imported: importing it here would cost an
    # agent that never speaks HTTP a third of a second.
    httpx = sys.modules.get("httpx")
    if httpx is None:
        return False
    if isinstance(exc, httpx.TransportError):
        return True
    if isinstance(exc, httpx.HTTPStatusError):
        status: int = exc.response.status_code
        return status in _RETRYABLE_STATUS or status >= 500
    return False


def backoff_delays(
    *, backoff_factor: float, initial_delay: float, max_delay: float
) -> Iterator[float]:
    """The delay before each retry, without jitter: ``initial_delay * backoff_factor ** n``
    for retry *n* (0 before the first), capped at ``max_delay``; constant
    ``initial_delay`` (capped) when ``backoff_factor`` is 0.

    Built on ``backoff.expo`` / ``backoff.constant`` (``expo`` with base 0 would give
    ``initial_delay`` once, then zeros). ``backoff`` is imported here, on the first retry,
    not when an agent naming a retry middleware is built.
    """
    import backoff

    waits = (
        backoff.constant(interval=itertools.repeat(min(initial_delay, max_delay)))
        if backoff_factor == 0
        else backoff.expo(base=backoff_factor, factor=initial_delay, max_value=max_delay)
    )
    next(waits)  # backoff's generators are primed with one send(None) before the first value
    for delay in waits:
        yield float(min(delay, max_delay))


async def async_sleep(seconds: float) -> None:
    """``asyncio.sleep``, asyncio imported on the first async retry (a sync agent never
    imports it)."""
    import asyncio

    await asyncio.sleep(seconds)


# -- validators ---------------------------------------------------------------------------
# attrs calls them with (instance, attribute, value); the kernel may re-run one with
# instance=None to find the failing option, so they never read the instance.


def _is_bool(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise FieldError(attribute.name, expected("a bool", value))


_RETRY_ON = "a subclass of Exception, a list of them or a callable (exception -> bool)"
_ON_FAILURE = (
    "one of 'continue', 'error', 'raise', 'return_message' or a callable (exception -> str)"
)


def _retry_on(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, tuple):
        classes = value
    elif isinstance(value, type):
        classes = (value,)
    elif callable(value):
        return
    else:
        raise FieldError(attribute.name, expected(_RETRY_ON, value))
    for item in classes:
        if not isinstance(item, type) or not issubclass(item, BaseException):
            raise FieldError(attribute.name, expected(_RETRY_ON, value))
        if not issubclass(item, Exception):
            raise FieldError(
                attribute.name,
                expected(
                    _RETRY_ON,
                    value,
                    f"{item.__qualname__} is not an Exception: interrupts, cancellation and "
                    "KeyboardInterrupt are never retried",
                ),
            )


def _on_failure(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if (value not in _MODES) if isinstance(value, str) else not callable(value):
        raise FieldError(attribute.name, expected(_ON_FAILURE, value))


def _callable(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not callable(value):
        raise FieldError(attribute.name, expected("a callable", value))


def _as_retry_on(value: Any) -> Any:
    """A list of exception classes (from TOML or a caller) becomes a tuple."""
    return tuple(value) if isinstance(value, list) else value


# -- the policy ---------------------------------------------------------------------------


# no slots: its subclasses are middleware, whose instances have a __dict__ (a slotted
# base would only cost attrs a second class)
@frozen(kw_only=True, slots=False)
class RetryPolicy:
    """The options and the loop of a retrying middleware (each field is an option; a
    subclass adds its own and says, in its give-up function, what ``on_failure`` means)."""

    max_retries: int = attrs.field(default=2, validator=integer(minimum=0))
    """Retries after the first attempt (2: three attempts in all); an int >= 0."""
    retry_on: RetryOn = attrs.field(
        default=default_retry_on, converter=_as_retry_on, validator=_retry_on
    )
    """Exception classes to retry (subclasses match), or a predicate ``exc -> bool``."""
    on_failure: OnFailure = attrs.field(default="continue", validator=_on_failure)
    """When retries run out: ``'continue'``, ``'error'`` or a formatter ``exc -> str``."""
    backoff_factor: float = attrs.field(default=2.0, validator=number(minimum=0))
    """Growth of the delay per retry; 0 keeps it constant."""
    initial_delay: float = attrs.field(default=1.0, validator=number(minimum=0))
    """Seconds before the first retry."""
    max_delay: float = attrs.field(default=60.0, validator=number(minimum=0))
    """Cap on the delay in seconds, before jitter."""
    jitter: bool = attrs.field(default=True, validator=_is_bool)
    """Spread each delay uniformly over ±25%."""
    sleep: Callable[[float], None] = attrs.field(
        default=time.sleep, validator=_callable, repr=False
    )
    """Test hook: the sync sleeper (``plait.testing.FakeSleeper()`` records instead)."""
    asleep: Callable[[float], Awaitable[None]] = attrs.field(
        default=async_sleep, validator=_callable, repr=False
    )
    """Test hook: the async sleeper (``FakeSleeper().asleep``)."""

    def __attrs_post_init__(self) -> None:
        if isinstance(self.on_failure, str) and self.on_failure in _DEPRECATED:
            warnings.warn(
                f"on_failure={self.on_failure!r} is deprecated; use "
                f"on_failure={_DEPRECATED[self.on_failure]!r}",
                DeprecationWarning,
                stacklevel=3,
            )

    @property
    def failure_mode(self) -> FailureMode:
        """``on_failure`` with deprecated spellings replaced by their current names."""
        mode = self.on_failure
        if isinstance(mode, str):
            return "error" if _DEPRECATED.get(mode, mode) == "error" else "continue"
        return mode

    def retries(self, exc: Exception) -> bool:
        """Whether ``exc`` is one to retry (``StopRun`` errors never are)."""
        if isinstance(exc, StopRun):
            return False
        matcher = self.retry_on
        if isinstance(matcher, type | tuple):
            return isinstance(exc, matcher)
        return bool(matcher(exc))

    def delays(self) -> Iterator[float]:
        """The delay before each retry, without jitter (see ``backoff_delays``)."""
        return backoff_delays(
            backoff_factor=self.backoff_factor,
            initial_delay=self.initial_delay,
            max_delay=self.max_delay,
        )

    def wait(self, delay: float, exc: Exception) -> float:
        """What to sleep for ``delay`` after ``exc``: jittered (after the cap), and at least
        the provider's ``retry_after`` when it sent one."""
        if self.jitter:
            delay *= random.uniform(1 - JITTER, 1 + JITTER)
        retry_after = exc.retry_after if isinstance(exc, ProviderError) else None
        if retry_after is not None and retry_after > delay:
            delay = float(retry_after)
        return delay

    def call(self, attempt: Callable[[], T], give_up: Callable[[Exception, int], T]) -> T:
        """``attempt()`` until it succeeds, retrying matching errors; when retries run out,
        ``give_up(last_error, attempts)`` (called inside the ``except``, so a bare raise of
        the error keeps its traceback) decides the result."""
        delays = self.delays()
        for retry in itertools.count():
            try:
                return attempt()
            except Exception as exc:
                if not self.retries(exc):
                    raise
                if retry >= self.max_retries:
                    return give_up(exc, retry + 1)
                self.sleep(self.wait(next(delays), exc))
        raise AssertionError("unreachable")  # pragma: no cover

    async def acall(
        self, attempt: Callable[[], Awaitable[T]], give_up: Callable[[Exception, int], T]
    ) -> T:
        """The async form of ``call``: awaits ``attempt()`` and sleeps with ``asleep``."""
        delays = self.delays()
        for retry in itertools.count():
            try:
                return await attempt()
            except Exception as exc:
                if not self.retries(exc):
                    raise
                if retry >= self.max_retries:
                    return give_up(exc, retry + 1)
                await self.asleep(self.wait(next(delays), exc))
        raise AssertionError("unreachable")  # pragma: no cover


def describe_error(exc: BaseException) -> str:
    """``"TypeName: text"`` (just the type name when the text is empty); a tool's error
    in the words a middleware gave it for the model (``plait.tools.set_error_text``:
    pii's redaction), as the kernel's own error message would show it."""
    from plait.tools import error_text  # here: plait.tools imports this module's users

    text = error_text(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
