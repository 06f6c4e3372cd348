"""What a guardrail is: the data it checks, the verdict it gives, the error a trip raises,
and the decorators that make one from a function.

Names follow OpenAI Agents where the idea is the same (``input_guardrail``,
``output_guardrail``, a tripwire); a verdict is one ``GuardrailResult`` whatever the
guardrail guards, so one function can serve as an input and an output guardrail.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, overload

import attrs

from plait.errors import StopRun
from plait.lazy import frozen
from plait.messages import AnyMessage, ToolCall, ToolMessage
from plait.types import Runtime

__all__ = [
    "Guardrail",
    "GuardrailData",
    "GuardrailResult",
    "GuardrailTripped",
    "input_guardrail",
    "output_guardrail",
    "tool_guardrail",
    "tool_input_guardrail",
    "tool_output_guardrail",
]

Kind = Literal["input", "output", "tool_input", "tool_output"]
Action = Literal["allow", "trip", "reject", "replace"]

ALLOWED: Mapping[str, tuple[str, ...]] = {
    "input": ("allow", "trip"),
    "output": ("allow", "trip"),
    "tool_input": ("allow", "reject", "trip"),
    "tool_output": ("allow", "replace", "trip"),
}
"""What each kind of guardrail may answer: only a tool call can be refused to the model
(``reject``) before it runs, or have its result swapped (``replace``) after."""


@frozen
class GuardrailData:
    """What a guardrail checks.

    :param kind: ``"input"``, ``"output"``, ``"tool_input"`` or ``"tool_output"``.
    :param text: the text under check: the user's new input, the final answer (its JSON
        for a structured answer), a tool call's arguments as JSON, or a tool's result.
    :param messages: the new user messages (input) or the answer (output).
    :param structured: the structured answer as a JSON value, for an output guardrail on an
        agent with ``response_format``; else ``None``.
    :param tool_call: the call under check (tool guardrails).
    :param result: the tool's answer (``tool_output``).
    :param state: the thread's state, read-only.
    :param runtime: the run's ``plait.Runtime`` (``None`` outside a run).
    """

    kind: Kind
    text: str
    messages: Sequence[AnyMessage] = ()
    structured: Any = None
    tool_call: ToolCall | None = None
    result: ToolMessage | None = None
    state: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    runtime: Runtime | None = attrs.field(default=None, repr=False)


@frozen
class GuardrailResult:
    """A guardrail's verdict. Build it with ``allow()``, ``trip(reason)``,
    ``reject(message)`` (tool calls, before they run) or ``replace(content)`` (tool
    results). A guardrail function may also return ``None``/``True`` (allow), ``False``
    (trip) or a string (trip, with that reason)."""

    action: Action = "allow"
    reason: str = ""
    """Why it tripped or rejected (recorded, and the text of ``GuardrailTripped``)."""
    message: str | None = None
    """``reject``: what the model reads instead of the tool's result; ``replace``: the
    tool result's new content."""
    info: Any = None
    """Anything the guardrail wants kept with the verdict (OpenAI's ``output_info``)."""

    @classmethod
    def allow(cls, info: Any = None) -> GuardrailResult:
        return cls("allow", info=info)

    @classmethod
    def trip(cls, reason: str, info: Any = None) -> GuardrailResult:
        return cls("trip", reason, info=info)

    @classmethod
    def reject(cls, message: str, reason: str = "", info: Any = None) -> GuardrailResult:
        return cls("reject", reason or message, message, info)

    @classmethod
    def replace(cls, content: str, reason: str = "", info: Any = None) -> GuardrailResult:
        return cls("replace", reason, content, info)

    @property
    def tripped(self) -> bool:
        return self.action == "trip"


class GuardrailTripped(StopRun):
    """A guardrail's tripwire stopped the run (``exit_behavior="error"``).

    ``guardrail`` names it, ``kind`` says what it guarded, ``reason`` says why; ``info`` is
    what the guardrail attached to its verdict.
    """

    def __init__(
        self, guardrail: str, reason: str, *, kind: str = "input", info: Any = None
    ) -> None:
        super().__init__(f"guardrail {guardrail!r} tripped on the {_WHERE[kind]}: {reason}")
        self.guardrail = guardrail
        self.reason = reason
        self.kind = kind
        self.info = info


_WHERE = {
    "input": "user's input",
    "output": "answer",
    "tool_input": "tool call",
    "tool_output": "tool result",
}


Check = Callable[[GuardrailData], Any]


@frozen
class Guardrail:
    """One guardrail: a name, a check (sync or async function of ``GuardrailData``), and
    where it applies. Made by the decorators, by a rule (``regex``, ``keywords``), by a
    judge, or from a ``module:function`` path in an agent file."""

    name: str
    check: Check = attrs.field(repr=False)
    kinds: tuple[Kind, ...] = ()
    """Where the decorator meant it to go (empty: wherever it is listed)."""
    parallel: bool | None = None
    """Input guardrails: run beside the first model call (``None``: the middleware's
    ``parallel`` option)."""
    tools: tuple[str, ...] = ()
    """Tool guardrails from ``tool_guardrail``: the tools they guard (empty: all)."""
    acheck: Callable[[GuardrailData], Awaitable[Any]] | None = attrs.field(default=None, repr=False)
    """A native async form (a judge's), used on the async path instead of ``check``."""

    def __call__(self, data: GuardrailData) -> Any:
        """The check itself, so a decorated function stays callable (in tests)."""
        return self.check(data)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.check)

    def run(self, data: GuardrailData) -> GuardrailResult:
        """The verdict on ``data``, on the sync path (an async check runs on a loop of its
        own, in this context, so a judge's calls land in the run's usage ledger)."""
        if self.is_async:
            value = _run_coroutine(self.check(data))
        else:
            value = self.check(data)
        return self.verdict(value, data.kind)

    async def arun(self, data: GuardrailData) -> GuardrailResult:
        """The verdict on ``data``, on the async path (a sync check runs in a worker
        thread, so a slow one never blocks the loop)."""
        if self.acheck is not None:
            value = await self.acheck(data)
        elif self.is_async:
            value = await self.check(data)
        else:
            value = await asyncio.to_thread(self.check, data)
        return self.verdict(value, data.kind)

    def verdict(self, value: Any, kind: Kind) -> GuardrailResult:
        if value is None or value is True:
            result = GuardrailResult.allow()
        elif value is False:
            result = GuardrailResult.trip("the check failed")
        elif isinstance(value, str):
            result = GuardrailResult.trip(value)
        elif isinstance(value, GuardrailResult):
            result = value
        else:
            raise TypeError(
                f"guardrail {self.name!r} returned {type(value).__name__}; expected a "
                "GuardrailResult, a bool, a string (the reason to trip) or None"
            )
        if result.action not in ALLOWED[kind]:
            raise TypeError(
                f"guardrail {self.name!r} answered {result.action!r} on "
                f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} check; "
                f"there it may answer {' or '.join(map(repr, ALLOWED[kind]))}"
            )
        return result


def _run_coroutine(coroutine: Any) -> Any:
    """Await ``coroutine`` from sync code: here if no loop runs in this thread, else in a
    worker thread — always in a copy of this context."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return contextvars.copy_context().run(asyncio.run, coroutine)
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(context.run, asyncio.run, coroutine).result()


def _name(function: Callable[..., Any], name: str | None) -> str:
    return name or getattr(function, "__name__", None) or repr(function)


def _unwrapped(function: Check) -> tuple[Check, str | None]:
    """A function, or a guardrail decorated again (its check and name)."""
    if isinstance(function, Guardrail):
        return function.check, function.name
    return function, None


@overload
def input_guardrail(function: Check, /) -> Guardrail: ...
@overload
def input_guardrail(
    *, name: str | None = None, parallel: bool | None = None
) -> Callable[[Check], Guardrail]: ...
def input_guardrail(
    function: Check | None = None, /, *, name: str | None = None, parallel: bool | None = None
) -> Guardrail | Callable[[Check], Guardrail]:
    """Make ``function(data) -> GuardrailResult | bool | str | None`` (sync or async) an
    input guardrail: it checks the user's new input before the first model call, or
    beside it with ``parallel=True`` (a trip then cancels that call)."""

    def make(check: Check) -> Guardrail:
        check, given = _unwrapped(check)
        return Guardrail(_name(check, name or given), check, ("input",), parallel=parallel)

    return make(function) if function is not None else make


@overload
def output_guardrail(function: Check, /) -> Guardrail: ...
@overload
def output_guardrail(*, name: str | None = None) -> Callable[[Check], Guardrail]: ...
def output_guardrail(
    function: Check | None = None, /, *, name: str | None = None
) -> Guardrail | Callable[[Check], Guardrail]:
    """Make ``function`` an output guardrail: it checks the final answer (and the
    structured answer) before the caller sees it, streamed text included."""

    def make(check: Check) -> Guardrail:
        check, given = _unwrapped(check)
        return Guardrail(_name(check, name or given), check, ("output",))

    return make(function) if function is not None else make


def tool_guardrail(
    function: Check | None = None,
    /,
    *,
    name: str | None = None,
    when: Literal["before", "after"] = "before",
    tools: Sequence[str] = (),
) -> Guardrail | Callable[[Check], Guardrail]:
    """Make ``function`` a tool guardrail for ``tools`` (all tools when empty): ``when=
    "before"`` it sees the call and may allow, ``reject`` (the model reads the message
    instead of a result) or trip; ``when="after"`` it sees the result and may allow,
    ``replace`` it or trip."""
    if when not in ("before", "after"):
        raise ValueError(f"tool_guardrail: when: expected 'before' or 'after', got {when!r}")
    kind: Kind = "tool_input" if when == "before" else "tool_output"

    def make(check: Check) -> Guardrail:
        check, given = _unwrapped(check)
        return Guardrail(_name(check, name or given), check, (kind,), tools=tuple(tools))

    return make(function) if function is not None else make


def tool_input_guardrail(
    function: Check | None = None, /, *, name: str | None = None, tools: Sequence[str] = ()
) -> Guardrail | Callable[[Check], Guardrail]:
    """``tool_guardrail(when="before")``, under OpenAI Agents' name."""
    return tool_guardrail(function, name=name, when="before", tools=tools)


def tool_output_guardrail(
    function: Check | None = None, /, *, name: str | None = None, tools: Sequence[str] = ()
) -> Guardrail | Callable[[Check], Guardrail]:
    """``tool_guardrail(when="after")``, under OpenAI Agents' name."""
    return tool_guardrail(function, name=name, when="after", tools=tools)
