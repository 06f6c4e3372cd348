"""``usage_limit``: stop an agent once it has spent a number of tokens or dollars, per
thread or per run.

Counts live in the agent's state like ``model_call_limit``'s: the thread's in a
``"thread"``-scoped key (checkpointed, so they survive a new process on the same
checkpointer), the run's in a ``"run"``-scoped key. Limits are checked before each model
call, so the call that crosses one completes and the next never starts. Each answer's
cost is computed around the model call (``wrap_model_call``) and written into its
``usage.cost``, which the kernel sums into ``result.usage``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import attrs

from plait.errors import ConfigError, UsageLimitExceededError
from plait.limits import limit_reached
from plait.messages import AIMessage, Usage
from plait.middleware import Middleware, can_jump_to
from plait.options import integer, number
from plait.types import AgentConfig, Command, ModelRequest, ModelResponse, Runtime, StateField
from plait_usage_limit._prices import Prices, cost_of, known

__all__ = ["Limits", "Prices", "UsageLimitMiddleware"]

THREAD_KEY = "usage_limit_thread"
"""Thread-scoped: ``{"input_tokens", "output_tokens", "cost"}`` spent in the thread."""
RUN_KEY = "usage_limit_run"
"""Run-scoped: the same for the run, plus ``"last"``, the id of the last answer counted."""

_ZERO = {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
_TOKENS = integer(minimum=0, optional=True)
_DOLLARS = number(minimum=0, optional=True)


@attrs.frozen(kw_only=True)
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


@attrs.frozen(kw_only=True)
class UsageLimitMiddleware(Middleware):
    """Stops the agent once the thread (across runs) or the run has spent ``thread_limit``
    or ``run_limit`` — tokens or dollars — checked before each model call.

    ``exit_behavior="end"`` ends the run with an AI message naming the limit and the
    counts (e.g. "run limit: total_tokens 1200/1000"); ``"error"`` raises
    ``UsageLimitExceededError`` with the same text. The thread counts need a checkpointer
    to span runs.
    """

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
                "usage_limit: run_limit and thread_limit set no limit: give at least one of "
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
                f"usage_limit: a cost limit needs the price of model "
                f"{model.provider}:{model.model_name}, which the genai-prices package does not "
                "know; give prices={input=..., output=...} in dollars per million tokens"
            )

    def state_fields(self) -> dict[str, StateField]:
        return {
            THREAD_KEY: StateField(default=dict(_ZERO), scope="thread"),
            RUN_KEY: StateField(default={**_ZERO, "last": None}, scope="run"),
        }

    @can_jump_to("end")
    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> Command | None:
        thread, run = state[THREAD_KEY], state[RUN_KEY]
        reached = []
        for scope, limits, spent in (
            ("thread", self.thread_limit, thread),
            ("run", self.run_limit, run),
        ):
            if limits is not None and (found := limits.reached(spent)):
                reached.append(f"{scope} limit: {', '.join(found)}")
        if not reached:
            return None
        return limit_reached(
            f"Usage limit reached ({'; '.join(reached)}).",
            exit_behavior=self.exit_behavior,
            error=UsageLimitExceededError,
            metadata={"usage_limit": {"thread": dict(thread), "run": _spent(run)}},
        )

    def after_model(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        run = state[RUN_KEY]
        if last is None or run["last"] == last.id:
            return None  # no new answer, or another instance counted it already
        usage = last.usage or Usage()
        return {
            THREAD_KEY: _add(state[THREAD_KEY], usage),
            RUN_KEY: {**_add(run, usage), "last": last.id},
        }

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return self._priced(request, handler(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return self._priced(request, await handler(request))

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


def _spent(run: Mapping[str, Any]) -> dict[str, Any]:
    return {key: run[key] for key in _ZERO}
