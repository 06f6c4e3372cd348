"""``tool_call_limit``: cap tool calls per thread and per run, for one tool or for all.

Decided in ``after_model``, before any call of the model's answer runs: calls over the
limit are answered there with an error ``ToolMessage`` (the kernel runs only calls that
have no answer yet). Whatever the exit, every tool call of the AI message ends up with
exactly one ``ToolMessage``, so the history stays valid for the next provider call.

Counts live in state, keyed by the limited tool's name (``"__all__"`` for a global
limiter): the thread counts in a ``"thread"``-scoped key (checkpointed), the run counts in
a ``"run"``-scoped key. A call another middleware already answered is not this limiter's
to count or block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from plait.errors import ConfigError, ToolCallLimitExceededError
from plait.lazy import frozen
from plait.limits import limit_reached
from plait.messages import ToolCall, ToolMessage, pending_tool_calls
from plait.middleware import Middleware, can_jump_to
from plait.options import check_tool_names, integer, non_empty_string
from plait.types import AgentConfig, Command, StateField

__all__ = ["ToolCallLimitMiddleware"]

THREAD_KEY = "tool_call_limit_thread"
"""Thread-scoped: ``{tool name or "__all__": calls that ran}``."""
RUN_KEY = "tool_call_limit_run"
"""Run-scoped: ``{"calls": {tool name or "__all__": attempts}, "stop": error text}``;
``stop`` is set when an ``"error"`` exit must be raised once the history is valid."""
ALL_TOOLS = "__all__"

_LIMIT = integer(minimum=0, optional=True)
"""A limit option: an int >= 0, or None for no limit."""


class _Decision:
    """What one limiter made of the pending calls of one AI message (a plain class: an
    attrs class generates its methods and a NamedTuple compiles each annotation when the
    plugin is imported; this takes microseconds)."""

    __slots__ = ("allowed", "blocked", "exceeded")

    def __init__(
        self,
        allowed: tuple[ToolCall, ...],
        blocked: tuple[tuple[ToolCall, str], ...],
        exceeded: str,
    ) -> None:
        self.allowed = allowed
        self.blocked = blocked  # each with its "run limit (2/1 calls)" text
        self.exceeded = exceeded  # the limits the whole batch exceeds, with its counts


@frozen(kw_only=True)
class ToolCallLimitMiddleware(Middleware):
    """Limits calls of ``tool_name`` (``None``: of every tool) to ``thread_limit`` per
    thread and ``run_limit`` per run.

    Calls of one AI message are allowed in order while under the limit; the rest are
    blocked. ``exit_behavior``:

    - ``"continue"``: blocked calls get an error tool message telling the model not to call
      the tool again; other calls run and the model carries on.
    - ``"error"``: no call of that AI message runs; each is answered, then the run stops
      with ``ToolCallLimitExceededError``.
    - ``"end"``: no call of that AI message runs (nor the calls of other tools in it);
      each is answered, and the run ends with a final AI message.

    Blocked calls do not count toward the thread count; the run count counts every
    attempt.
    """

    tool_name: str | None = attrs.field(default=None, validator=non_empty_string(optional=True))
    """The tool to limit; ``None`` limits every tool together."""
    thread_limit: int | None = attrs.field(default=None, validator=_LIMIT)
    """Most calls in a thread, across runs (needs a checkpointer)."""
    run_limit: int | None = attrs.field(default=None, validator=_LIMIT)
    """Most calls in one run; may not exceed ``thread_limit``."""
    exit_behavior: Literal["continue", "error", "end"] = attrs.field(
        default="continue", validator=attrs.validators.in_(("continue", "error", "end"))
    )
    """``'continue'`` (block the calls), ``'error'`` (raise) or ``'end'`` (finish the run)."""

    def __attrs_post_init__(self) -> None:
        if self.thread_limit is None and self.run_limit is None:
            raise ConfigError(
                "thread_limit and run_limit are both None: set at least one "
                "(a limiter without a limit would never stop anything)"
            )
        if (
            self.thread_limit is not None
            and self.run_limit is not None
            and self.run_limit > self.thread_limit
        ):
            raise ConfigError(
                f"run_limit ({self.run_limit}) may not exceed thread_limit "
                f"({self.thread_limit}): a run is part of its thread"
            )

    @property
    def key(self) -> str:
        """Where this limiter's counts live in state."""
        return self.tool_name or ALL_TOOLS

    @property
    def _subject(self) -> str:
        return f"tool {self.tool_name!r}" if self.tool_name else "any tool"

    # -- build time -------------------------------------------------------------------------

    def state_fields(self) -> dict[str, StateField]:
        return {
            THREAD_KEY: StateField(default={}, scope="thread", internal=True),
            RUN_KEY: StateField(default={"calls": {}, "stop": None}, scope="run", internal=True),
        }

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if self.tool_name is not None:
            check_tool_names([self.tool_name], agent_config, option="tool_name")
        for other in agent_config.middleware:
            if (
                isinstance(other, ToolCallLimitMiddleware)
                and other is not self
                and other.key == self.key
            ):
                raise ConfigError(
                    f"two instances limit {self._subject}; give "
                    "one instance both thread_limit and run_limit"
                )

    # -- running ----------------------------------------------------------------------------

    @can_jump_to("end")
    def after_model(self, state: Mapping[str, Any]) -> Command | None:
        pending = pending_tool_calls(state["messages"])
        mine = [c for c in pending if self.tool_name is None or c.name == self.tool_name]
        if not mine:
            return None
        thread_counts: dict[str, int] = state[THREAD_KEY]
        run_state: dict[str, Any] = state[RUN_KEY]
        thread_before = thread_counts.get(self.key, 0)
        run_before = run_state["calls"].get(self.key, 0)
        decision = self._decide(mine, thread_before, run_before)
        stopping = bool(decision.blocked) and self.exit_behavior != "continue"
        ran = 0 if stopping else len(decision.allowed)
        update: dict[str, Any] = {
            THREAD_KEY: {**thread_counts, self.key: thread_before + ran},
            RUN_KEY: {
                **run_state,
                "calls": {**run_state["calls"], self.key: run_before + len(mine)},
            },
        }
        if not decision.blocked:
            return Command(update=update)
        if not stopping:
            update["messages"] = [
                self._blocked_message(call, which) for call, which in decision.blocked
            ]
            return Command(update=update)
        if self.exit_behavior == "end":
            # Every pending call is answered (calls of tools this limiter does not limit
            # with "Not run"), then the run ends, as LangChain's "end" does.
            return limit_reached(
                f"Tool call limit reached: {decision.exceeded} for {self._subject}.",
                exit_behavior="end",
                error=ToolCallLimitExceededError,
                stopped="before running more tools",
                metadata={"tool_call_limit": {"tool": self.key}},
                update=update,
                messages=self._stop_messages(pending, decision),
            )
        error = f"Tool call limit exceeded: {decision.exceeded} for {self._subject}."
        # Answer every call first so the checkpointed history stays valid; the error is
        # raised in after_agent, once this update is saved.
        update["messages"] = self._stop_messages(pending, decision)
        update[RUN_KEY]["stop"] = error
        return Command(update=update, jump_to="end")

    def after_agent(self, state: Mapping[str, Any]) -> None:
        stop = state[RUN_KEY]["stop"]
        if stop is not None:
            raise ToolCallLimitExceededError(stop)

    # -- helpers ----------------------------------------------------------------------------

    def _over(self, thread_count: int, run_count: int) -> list[str]:
        """The limits that ``thread_count`` and ``run_count`` calls would exceed."""
        over = []
        if self.thread_limit is not None and thread_count > self.thread_limit:
            over.append(f"thread limit ({thread_count}/{self.thread_limit} calls)")
        if self.run_limit is not None and run_count > self.run_limit:
            over.append(f"run limit ({run_count}/{self.run_limit} calls)")
        return over

    def _decide(self, calls: Sequence[ToolCall], thread_before: int, run_before: int) -> _Decision:
        allowed: list[ToolCall] = []
        blocked: list[tuple[ToolCall, str]] = []
        for attempt, call in enumerate(calls, start=1):
            # a blocked call does not count toward the thread; every attempt counts in the run
            over = self._over(thread_before + len(allowed) + 1, run_before + attempt)
            if over:
                blocked.append((call, " and ".join(over)))
            else:
                allowed.append(call)
        exceeded = " and ".join(self._over(thread_before + len(calls), run_before + len(calls)))
        return _Decision(tuple(allowed), tuple(blocked), exceeded)

    def _blocked_message(self, call: ToolCall, which: str) -> ToolMessage:
        where = " in this conversation" if which.startswith("thread") else ""
        return ToolMessage.error(
            call,
            f"Error: tool call limit exceeded: {which}. This call to {call.name!r} was not "
            f"run. Do not call {self._subject.removeprefix('tool ')} again{where}; continue "
            "with the results you already have.",
            metadata={"tool_call_limit": {"blocked": True, "tool": self.key}},
        )

    def _stop_messages(self, pending: Sequence[ToolCall], decision: _Decision) -> list[ToolMessage]:
        """One answer per pending call: blocked ones say so, the rest were not run."""
        blocked = {call.id: which for call, which in decision.blocked}
        answers = []
        for call in pending:
            if call.id in blocked:
                text = (
                    f"Error: tool call limit exceeded: {blocked[call.id]}. This call to "
                    f"{call.name!r} was not run, and the agent is stopping."
                )
            else:
                text = (
                    f"Not run: the tool calls of this turn were stopped because the tool "
                    f"call limit for {self._subject} was reached ({decision.exceeded})."
                )
            answers.append(
                ToolMessage.error(
                    call, text, metadata={"tool_call_limit": {"blocked": call.id in blocked}}
                )
            )
        return answers
