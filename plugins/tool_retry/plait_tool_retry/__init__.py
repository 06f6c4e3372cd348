"""``tool_retry``: retry a failed tool call with exponential backoff.

The options and the retry loop are ``plait.retry.RetryPolicy``'s (shared with
``model_retry``); this middleware adds the ``tools`` filter and says what giving up
produces.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from plait.errors import ToolCallFailedError
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.middleware import Middleware
from plait.options import check_tool_names, tool_names_field
from plait.retry import RetryPolicy, describe_error
from plait.tools import Tool
from plait.types import AgentConfig, Command, ToolCallRequest

__all__ = ["ToolRetryMiddleware"]


@frozen(kw_only=True)
class ToolRetryMiddleware(RetryPolicy, Middleware):
    """Retries a failing tool call: ``max_retries`` more attempts, waiting
    ``initial_delay * backoff_factor ** n`` seconds (capped at ``max_delay``, ±25% jitter)
    before retry *n*.

    ``tools`` limits retrying to those tools (names or ``Tool`` objects; ``None``: all).
    ``on_failure`` when retries run out: ``"continue"`` answers the call with an error tool
    message the model can act on; ``"error"`` stops the run with ``ToolCallFailedError``
    (the tool's last error is its ``__cause__``); a function ``exc -> str`` writes the tool
    message. An error ``retry_on`` does not match is re-raised at once (the kernel then
    turns it into an error tool message, as for any tool error).
    """

    tools: Sequence[str | Tool] | None = tool_names_field()
    """Only these tools are retried (names or ``Tool`` objects); ``None``: every tool."""

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if self.tools is None:
            return
        check_tool_names(self.tools, agent_config, option="tools")

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        if not self._applies(request):
            return handler(request)
        return self.call(lambda: handler(request), lambda e, n: self._give_up(request, e, n))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        if not self._applies(request):
            return await handler(request)
        return await self.acall(lambda: handler(request), lambda e, n: self._give_up(request, e, n))

    def _applies(self, request: ToolCallRequest) -> bool:
        return self.tools is None or request.tool_call.name in self.tools

    def _give_up(self, request: ToolCallRequest, exc: Exception, attempts: int) -> ToolMessage:
        call = request.tool_call
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        mode = self.failure_mode
        if mode == "error":
            raise ToolCallFailedError(
                f"tool {call.name!r} failed after {tries} with {describe_error(exc)}"
            ) from exc
        if callable(mode):
            text = mode(exc)
        else:
            text = (
                f"Error: tool {call.name!r} failed after {tries} with {describe_error(exc)}. "
                "You may call it again (with different arguments if they could be the "
                "cause) or take another approach."
            )
        return ToolMessage.error(
            call,
            text,
            metadata={"tool_retry": {"attempts": attempts, "error_type": type(exc).__name__}},
        )
