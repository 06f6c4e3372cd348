"""``model_call_limit``: stop an agent after a number of model calls per thread or per run.

Counts live in the agent's state: the thread count in a ``"thread"``-scoped key (so it is
checkpointed and survives a new process on the same checkpointer), the run count in a
``"run"``-scoped key (reset when a run starts). Every instance counts the same thing —
the thread's model calls — so instances share the counts, and each model answer is
counted once however many instances there are (the run key remembers the id of the last
AI message counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from plait.errors import ConfigError, ModelCallLimitExceededError
from plait.limits import limit_reached
from plait.messages import AIMessage
from plait.middleware import Middleware, can_jump_to
from plait.options import integer
from plait.types import Command, Runtime, StateField

__all__ = ["ModelCallLimitMiddleware"]

THREAD_KEY = "model_call_limit_thread"
"""Thread-scoped: ``{"calls": n}``, the thread's model calls so far."""
RUN_KEY = "model_call_limit_run"
"""Run-scoped: ``{"calls": n, "last": id}``, the run's model calls and the id of the last
AI message counted."""

_LIMIT = integer(minimum=0, optional=True)
"""A limit option: an int >= 0, or None for no limit."""


@attrs.frozen(kw_only=True)
class ModelCallLimitMiddleware(Middleware):
    """Stops the agent once it has made ``thread_limit`` model calls in the thread or
    ``run_limit`` in the current run (checked before each call: a count at or over its
    limit stops; counted after each call).

    ``exit_behavior="end"`` ends the run with an AI message naming the limit and its
    counts (e.g. "thread limit (2/2)"); ``"error"`` raises ``ModelCallLimitExceededError``
    with the same text. The thread count needs a checkpointer to span runs.
    """

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
            THREAD_KEY: StateField(default={"calls": 0}, scope="thread"),
            RUN_KEY: StateField(default={"calls": 0, "last": None}, scope="run"),
        }

    @can_jump_to("end")
    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> Command | None:
        thread_calls = state[THREAD_KEY]["calls"]
        run_calls = state[RUN_KEY]["calls"]
        reached = []
        if self.thread_limit is not None and thread_calls >= self.thread_limit:
            reached.append(f"thread limit ({thread_calls}/{self.thread_limit})")
        if self.run_limit is not None and run_calls >= self.run_limit:
            reached.append(f"run limit ({run_calls}/{self.run_limit})")
        if not reached:
            return None
        return limit_reached(
            f"Model call limit reached: {' and '.join(reached)}.",
            exit_behavior=self.exit_behavior,
            error=ModelCallLimitExceededError,
            metadata={"model_call_limit": {"thread_calls": thread_calls, "run_calls": run_calls}},
        )

    def after_model(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        run = state[RUN_KEY]
        if last is None or run["last"] == last.id:
            return None  # no new answer, or another instance counted it already
        return {
            THREAD_KEY: {"calls": state[THREAD_KEY]["calls"] + 1},
            RUN_KEY: {"calls": run["calls"] + 1, "last": last.id},
        }
