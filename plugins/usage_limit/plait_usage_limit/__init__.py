"""``usage_limit``: stop an agent once it has spent a number of tokens or dollars, per
thread or per run.

What a run spent is its usage ledger (``plait.usage``): every model call made on its
behalf — the agent's, middleware's own, answers refused by ``response_format``, and the
calls of sub-agents it starts. The thread's counts live in a ``"thread"``-scoped state key
(checkpointed, so they survive a new process on the same checkpointer), to which each
step adds what the run spent since. Limits are checked before each of the agent's model
calls (ending the run as ``exit_behavior`` says) and, through the ledger, before every
other call of the run and its sub-agents (refused with ``UsageLimitExceededError``), so
the call that crosses a limit completes and no call starts after it. The ledger prices
each call (``prices`` or ``genai-prices``); each answer's ``usage.cost`` is set too.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Literal

import attrs

from plait import usage
from plait.errors import ConfigError, UsageLimitExceededError
from plait.lazy import frozen
from plait.limits import LedgerLimit, limit_reached
from plait.messages import AIMessage, Usage
from plait.middleware import can_jump_to
from plait.options import integer, number
from plait.types import (
    AgentConfig,
    AgentResult,
    Command,
    ModelRequest,
    ModelResponse,
    RunRequest,
    Runtime,
    StateField,
)
from plait.usage import RunUsage
from plait_usage_limit._prices import Prices, cost_of, known

__all__ = ["Limits", "Prices", "UsageLimitMiddleware"]

THREAD_KEY = "usage_limit_thread"
"""Thread-scoped: ``{"input_tokens", "output_tokens", "cost"}`` spent in the thread."""
RUN_KEY = "usage_limit_run"
"""Run-scoped: the same for the run, as last added to the thread's counts."""
PLUGIN = "usage_limit"

_ZERO = {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
_TOKENS = integer(minimum=0, optional=True)
_DOLLARS = number(minimum=0, optional=True)


@frozen(kw_only=True)
class Limits:
    """The most a thread or a run may spend; ``None`` is no limit."""

    input_tokens: int | None = attrs.field(default=None, validator=_TOKENS)
    """Prompt tokens, cached ones included."""
    output_tokens: int | None = attrs.field(default=None, validator=_TOKENS)
    """Tokens the model wrote."""
    total_tokens: int | None = attrs.field(default=None, validator=_TOKENS)
    """Input plus output tokens."""
    cost: float | None = attrs.field(default=None, validator=_DOLLARS)
    """US dollars, priced by ``prices`` or the ``genai-prices`` package."""

    def reached(self, spent: Mapping[str, Any]) -> list[str]:
        """``"total_tokens 1200/1000"`` for each limit ``spent`` is at or over."""
        counts = {
            "input_tokens": spent["input_tokens"],
            "output_tokens": spent["output_tokens"],
            "total_tokens": spent["input_tokens"] + spent["output_tokens"],
        }
        found = [
            f"{name} {counts[name]}/{limit}"
            for name in ("input_tokens", "output_tokens", "total_tokens")
            if (limit := getattr(self, name)) is not None and counts[name] >= limit
        ]
        if self.cost is not None and spent["cost"] >= self.cost:
            found.append(f"cost ${spent['cost']:.4f}/${self.cost:.4f}")
        return found

    @property
    def empty(self) -> bool:
        return all(value is None for value in attrs.astuple(self))


def _limits(value: Limits | Mapping[str, Any] | None) -> Limits | None:
    if value is None or isinstance(value, Limits):
        return value
    return Limits(**value)


def _prices(value: Prices | Mapping[str, Any] | None) -> Prices | None:
    if value is None or isinstance(value, Prices):
        return value
    return Prices(**value)


@frozen(kw_only=True)
class UsageLimitMiddleware(LedgerLimit):
    """Stops the agent once the thread (across runs) or the run has spent ``thread_limit``
    or ``run_limit`` — tokens or dollars — checked before each model call.

    ``exit_behavior="end"`` ends the run with an AI message naming the limit and the
    counts (e.g. "run limit: total_tokens 1200/1000"); ``"error"`` raises
    ``UsageLimitExceededError`` with the same text. The thread counts need a checkpointer
    to span runs.
    """

    exceeded: ClassVar[type[Exception]] = UsageLimitExceededError

    run_limit: Limits | None = attrs.field(default=None, converter=_limits)
    """Most one run may spend: any of ``input_tokens``, ``output_tokens``, ``total_tokens``,
    ``cost``."""
    thread_limit: Limits | None = attrs.field(default=None, converter=_limits)
    """Most a thread may spend across runs (needs a checkpointer); keys as ``run_limit``."""
    exit_behavior: Literal["end", "error"] = attrs.field(
        default="end", validator=attrs.validators.in_(("end", "error"))
    )
    """``'end'``: finish with an AI message; ``'error'``: raise ``UsageLimitExceededError``."""
    prices: Prices | None = attrs.field(default=None, converter=_prices)
    """``{input, output, cache_read, cache_write}`` in dollars per million tokens, for every
    model call; default: the ``genai-prices`` package's price of the provider's model."""

    def __attrs_post_init__(self) -> None:
        if all(limit is None or limit.empty for limit in (self.run_limit, self.thread_limit)):
            raise ConfigError(
                "run_limit and thread_limit set no limit: give at least one of "
                "input_tokens, output_tokens, total_tokens or cost"
            )

    @property
    def limits_cost(self) -> bool:
        return any(
            limit is not None and limit.cost is not None
            for limit in (self.run_limit, self.thread_limit)
        )

    def validate_agent(self, agent_config: AgentConfig) -> None:
        model = agent_config.model
        if self.limits_cost and self.prices is None and not known(model.provider, model.model_name):
            raise ConfigError(
                f"a cost limit needs the price of model "
                f"{model.provider}:{model.model_name}, which the genai-prices package does not "
                "know; give prices={input=..., output=...} in dollars per million tokens"
            )

    def state_fields(self) -> dict[str, StateField]:
        return {
            THREAD_KEY: StateField(default=dict(_ZERO), scope="thread", internal=True),
            RUN_KEY: StateField(default=dict(_ZERO), scope="run", internal=True),
        }

    # -- counting: the run's usage ledger holds every call; the state keeps the thread's ------

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        self._watch(request)
        return handler(request)

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
    ) -> AgentResult:
        self._watch(request)
        return await handler(request)

    def _watch(self, request: RunRequest) -> None:
        """Price the run's calls, and refuse any call of it (a sub-agent's, a middleware's)
        once a limit is reached; the thread's counts are read from the live state."""
        request.usage.pricing(self._price)
        check = functools.partial(self._refuse, state=request.state)
        request.usage.limit(PLUGIN, check, key=id(self))

    def _price(self, model: Any, usage: Usage) -> float | None:
        return cost_of(usage, model.provider, model.model_name, self.prices)

    def _refuse(self, ledger: RunUsage, *, state: Mapping[str, Any]) -> None:
        """The ledger's check: raise before a call starts once a limit is reached."""
        run = _spent(ledger.total)
        thread = _add(state[THREAD_KEY], _minus(run, _spent(state[RUN_KEY])))
        if reached := self._reached(thread, run):
            raise UsageLimitExceededError(self._reason(reached, ledger.total.estimated))

    def _sync(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Add what the run spent since the last count to the thread's counts."""
        ledger = usage.current()
        if ledger is None:
            return {}
        run = _spent(ledger.total)
        counted = _spent(state[RUN_KEY])
        if run == counted:
            return {}
        return {THREAD_KEY: _add(state[THREAD_KEY], _minus(run, counted)), RUN_KEY: run}

    def _reached(self, thread: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
        reached = []
        for scope, limits, spent in (
            ("thread", self.thread_limit, thread),
            ("run", self.run_limit, run),
        ):
            if limits is not None and (found := limits.reached(spent)):
                reached.append(f"{scope} limit: {', '.join(found)}")
        return reached

    @staticmethod
    def _reason(reached: list[str], estimated: bool) -> str:
        guess = "; counts include estimates: a provider reported no usage" if estimated else ""
        return f"Usage limit reached ({'; '.join(reached)}{guess})."

    @can_jump_to("end")
    def before_model(
        self, state: Mapping[str, Any], runtime: Runtime
    ) -> dict[str, Any] | Command | None:
        update = self._sync(state)
        thread = update.get(THREAD_KEY, state[THREAD_KEY])
        run = update.get(RUN_KEY, _spent(state[RUN_KEY]))
        ledger = usage.current()
        reached = self._reached(thread, run)
        if not reached:
            return update or None
        estimated = ledger is not None and ledger.total.estimated
        metadata: dict[str, Any] = {"thread": dict(thread), "run": dict(run)}
        if estimated:
            metadata["estimated"] = True
        return limit_reached(
            self._reason(reached, estimated),
            exit_behavior=self.exit_behavior,
            error=UsageLimitExceededError,
            metadata={PLUGIN: metadata},
            update=update,
        )

    def after_model(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._sync(state) or None

    def after_agent(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._sync(state) or None

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        try:
            return self._priced(request, handler(request))
        except UsageLimitExceededError as exc:
            return self._ended(exc)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        try:
            return self._priced(request, await handler(request))
        except UsageLimitExceededError as exc:
            return self._ended(exc)

    def _ended(self, exc: UsageLimitExceededError) -> ModelResponse:
        """The agent's call was refused by the ledger (a call made inside this step — a
        tool selection, a fallback — crossed the limit): end as ``exit_behavior`` says."""
        command = limit_reached(str(exc), exit_behavior=self.exit_behavior, error=type(exc))
        assert command.update is not None
        return ModelResponse(list(command.update["messages"]))

    def _priced(self, request: ModelRequest, response: ModelResponse | AIMessage) -> ModelResponse:
        """The response with its answer's ``usage.cost`` set, when a price is known."""
        if isinstance(response, AIMessage):
            response = ModelResponse([response])
        message = response.message
        if message is None or message.usage is None or message.usage.cost is not None:
            return response
        model = request.model
        cost = cost_of(message.usage, model.provider, model.model_name, self.prices)
        if cost is None:
            return response
        priced = attrs.evolve(message, usage=attrs.evolve(message.usage, cost=cost))
        messages = [priced if m is message else m for m in response.messages]
        return attrs.evolve(response, messages=messages)


def _add(spent: Mapping[str, Any], usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": spent["input_tokens"] + usage.input_tokens,
        "output_tokens": spent["output_tokens"] + usage.output_tokens,
        "cost": spent["cost"] + (usage.cost or 0.0),
    }


def _spent(spent: Mapping[str, Any] | Usage) -> dict[str, Any]:
    """The three counts of a state value or a ``Usage``."""
    if isinstance(spent, Usage):
        return {
            "input_tokens": spent.input_tokens,
            "output_tokens": spent.output_tokens,
            "cost": spent.cost or 0.0,
        }
    return {key: spent[key] for key in _ZERO}


def _minus(spent: Mapping[str, Any], counted: Mapping[str, Any]) -> Usage:
    return Usage(
        spent["input_tokens"] - counted["input_tokens"],
        spent["output_tokens"] - counted["output_tokens"],
        cost=spent["cost"] - counted["cost"],
    )
