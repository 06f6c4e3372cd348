"""``model_call_limit``: stop an agent after a number of model calls per thread or per run.

A run's model calls are counted by its usage ledger (``plait.usage``): every call made on
its behalf — the agent's, each retry or fallback attempt, middleware's own calls, and
those of the sub-agents it starts. The thread count lives in a ``"thread"``-scoped state
key (checkpointed, so it survives a new process on the same checkpointer), to which each
step adds the run's calls since; every instance shares the counts. The limits are checked
before each of the agent's model calls (ending the run as ``exit_behavior`` says) and,
through the ledger, before every other call of the run and its sub-agents (refused with
``ModelCallLimitExceededError``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Literal

import attrs

from plait import usage
from plait.errors import ConfigError, ModelCallLimitExceededError
from plait.lazy import frozen
from plait.limits import LedgerLimit, limit_reached
from plait.middleware import can_jump_to
from plait.options import integer
from plait.types import (
    AgentResult,
    Command,
    ModelRequest,
    ModelResponse,
    RunRequest,
    Runtime,
    StateField,
)
from plait.usage import RunUsage

__all__ = ["ModelCallLimitMiddleware"]

THREAD_KEY = "model_call_limit_thread"
"""Thread-scoped: ``{"calls": n}``, the thread's model calls so far."""
RUN_KEY = "model_call_limit_run"
"""Run-scoped: ``{"calls": n}``, the run's model calls, as last added to the thread's."""
PLUGIN = "model_call_limit"

_LIMIT = integer(minimum=0, optional=True)
"""A limit option: an int >= 0, or None for no limit."""


@frozen(kw_only=True)
class ModelCallLimitMiddleware(LedgerLimit):
    """Stops the agent once it has made ``thread_limit`` model calls in the thread or
    ``run_limit`` in the current run (checked before each call: a count at or over its
    limit stops; counted after each call).

    ``exit_behavior="end"`` ends the run with an AI message naming the limit and its
    counts (e.g. "thread limit (2/2)"); ``"error"`` raises ``ModelCallLimitExceededError``
    with the same text. The thread count needs a checkpointer to span runs.
    """

    exceeded: ClassVar[type[Exception]] = ModelCallLimitExceededError

    thread_limit: int | None = attrs.field(default=None, validator=_LIMIT)
    """Most model calls in a thread, across runs (needs a checkpointer)."""
    run_limit: int | None = attrs.field(default=None, validator=_LIMIT)
    """Most model calls in one run."""
    exit_behavior: Literal["end", "error"] = attrs.field(
        default="end", validator=attrs.validators.in_(("end", "error"))
    )
    """``'end'``: finish with an AI message; ``'error'``: raise ``ModelCallLimitExceededError``."""

    def __attrs_post_init__(self) -> None:
        if self.thread_limit is None and self.run_limit is None:
            raise ConfigError(
                "thread_limit and run_limit are both None: set at least one "
                "(a limiter without a limit would never stop anything)"
            )

    def state_fields(self) -> dict[str, StateField]:
        return {
            THREAD_KEY: StateField(default={"calls": 0}, scope="thread", internal=True),
            RUN_KEY: StateField(default={"calls": 0}, scope="run", internal=True),
        }

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
        """Refuse any call of the run (a sub-agent's, a middleware's) once a limit is
        reached; the thread's count is read from the live state."""
        check = functools.partial(self._refuse, state=request.state)
        request.usage.limit(PLUGIN, check, key=id(self))

    def _refuse(self, ledger: RunUsage, *, state: Mapping[str, Any]) -> None:
        """The ledger's check before any call of the run or its sub-agents."""
        run = ledger.calls
        thread = state[THREAD_KEY]["calls"] + run - state[RUN_KEY]["calls"]
        if reached := self._reached(thread, run):
            raise ModelCallLimitExceededError(_reason(reached))

    def _reached(self, thread: int, run: int) -> list[str]:
        reached = []
        if self.thread_limit is not None and thread >= self.thread_limit:
            reached.append(f"thread limit ({thread}/{self.thread_limit})")
        if self.run_limit is not None and run >= self.run_limit:
            reached.append(f"run limit ({run}/{self.run_limit})")
        return reached

    @staticmethod
    def _sync(state: Mapping[str, Any]) -> dict[str, Any]:
        """Add the run's calls since the last count to the thread's count."""
        ledger = usage.current()
        if ledger is None:
            return {}
        run, counted = ledger.calls, state[RUN_KEY]["calls"]
        if run == counted:
            return {}
        return {
            THREAD_KEY: {"calls": state[THREAD_KEY]["calls"] + run - counted},
            RUN_KEY: {"calls": run},
        }

    @can_jump_to("end")
    def before_model(
        self, state: Mapping[str, Any], runtime: Runtime
    ) -> dict[str, Any] | Command | None:
        update = self._sync(state)
        thread_calls = update.get(THREAD_KEY, state[THREAD_KEY])["calls"]
        run_calls = update.get(RUN_KEY, state[RUN_KEY])["calls"]
        reached = self._reached(thread_calls, run_calls)
        if not reached:
            return update or None
        return limit_reached(
            _reason(reached),
            exit_behavior=self.exit_behavior,
            error=ModelCallLimitExceededError,
            metadata={"model_call_limit": {"thread_calls": thread_calls, "run_calls": run_calls}},
            update=update,
        )

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        try:
            return handler(request)
        except ModelCallLimitExceededError as exc:
            return self._ended(exc)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        try:
            return await handler(request)
        except ModelCallLimitExceededError as exc:
            return self._ended(exc)

    def _ended(self, exc: ModelCallLimitExceededError) -> ModelResponse:
        """The agent's call was refused by the ledger (a call made inside this step — a
        tool selection, a fallback — reached the limit): end as ``exit_behavior`` says."""
        command = limit_reached(str(exc), exit_behavior=self.exit_behavior, error=type(exc))
        assert command.update is not None
        return ModelResponse(list(command.update["messages"]))

    def after_model(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._sync(state) or None

    def after_agent(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._sync(state) or None


def _reason(reached: list[str]) -> str:
    return f"Model call limit reached: {' and '.join(reached)}."
