"""What a limiting middleware does once a limit is reached: end the run with an AI message
saying so, or raise its ``StopRun`` error.

``model_call_limit``, ``tool_call_limit`` and ``usage_limit`` share it, so every limit words
its stop alike, and a third-party limiter can too::

    @plait.can_jump_to("end")
    def before_model(self, state):
        if state["spent"] < self.budget:
            return None
        return limit_reached(
            f"Budget reached ({state['spent']}/{self.budget}).",
            exit_behavior=self.exit_behavior,
            error=BudgetExceededError,
        )
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from plait.errors import StopRun
from plait.messages import AIMessage, AnyMessage, ToolMessage
from plait.middleware import Middleware
from plait.types import Command, ToolCallRequest

__all__ = ["LedgerLimit", "limit_reached"]


def limit_reached(
    reason: str,
    *,
    exit_behavior: Literal["end", "error"],
    error: type[StopRun],
    stopped: str = "without calling the model again",
    metadata: Mapping[str, Any] | None = None,
    update: Mapping[str, Any] | None = None,
    messages: Sequence[AnyMessage] = (),
) -> Command:
    """Stop the run because a limit is reached (call it from a hook that may jump to
    ``"end"``).

    :param reason: what was reached, e.g. ``"Model call limit reached: run limit (3/3)."``.
    :param exit_behavior: ``"error"`` raises ``error(reason)``; ``"end"`` returns a
        ``Command`` that jumps to the end with ``update`` and an AI message
        ``"<reason> The agent stopped <stopped>; start a new conversation or raise the limit
        to continue."`` (after ``messages``, e.g. answers to pending tool calls).
    :param metadata: the AI message's metadata (what the limiter counted).
    :raises StopRun: the ``error`` class given, when ``exit_behavior="error"``, carrying
        ``update`` (from a node hook, the kernel saves it before the error propagates).
    """
    if exit_behavior == "error":
        stop = error(reason)
        if update:
            stop.update = dict(update)  # saved by the kernel before the error propagates
        raise stop
    message = AIMessage(
        f"{reason} The agent stopped {stopped}; start a new conversation or raise the limit "
        "to continue.",
        metadata=dict(metadata or {}),
    )
    return Command(update={**(update or {}), "messages": [*messages, message]}, jump_to="end")


class LedgerLimit(Middleware):
    """Base for a limit that checks the run's usage ledger (``plait.usage``): a model call
    made inside a tool call (an emulated tool's, a tool's own, a sub-agent's) that the
    ledger refuses with ``exceeded`` answers that tool call instead of failing the run.

    With ``exit_behavior="end"`` the call gets ``Not run: <the limit's text>`` and the run
    ends at its next model call, as it would have without the tool; ``"error"`` raises.
    """

    exceeded: ClassVar[type[Exception]] = Exception
    exit_behavior: Any

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command]
    ) -> ToolMessage | Command:
        try:
            return handler(request)
        except self.exceeded as exc:
            return self._not_run(request, exc)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        try:
            return await handler(request)
        except self.exceeded as exc:
            return self._not_run(request, exc)

    def _not_run(self, request: ToolCallRequest, exc: Exception) -> ToolMessage:
        if self.exit_behavior == "error":
            raise exc
        return ToolMessage.error(request.tool_call, f"Not run: {exc}")
