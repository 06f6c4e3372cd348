"""``model_retry``: retry a failed model call with exponential backoff.

The options and the retry loop are ``plait.retry.RetryPolicy``'s (shared with
``tool_retry``); this middleware only says what giving up produces.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from plait.messages import AIMessage
from plait.middleware import Middleware, check_arguments
from plait.retry import RetryPolicy, describe_error
from plait.types import ModelRequest, ModelResponse

__all__ = ["ModelRetryMiddleware"]


# Its options, and so its attrs fields, __init__, __repr__, __eq__ and __hash__, are
# exactly RetryPolicy's: it inherits them (the generated methods read the instance's class)
# rather than being an attrs class of its own, which attrs would make a second time and
# compile an __init__ for (~0.5 ms of the first agent naming it, as ToolRetryMiddleware,
# the same fields and one more, costs). check_arguments gives the __init__ the argument
# check of every attrs-made middleware.
@check_arguments
class ModelRetryMiddleware(RetryPolicy, Middleware):
    """Retries a failing model call: ``max_retries`` more attempts, waiting
    ``initial_delay * backoff_factor ** n`` seconds (capped at ``max_delay``, ±25% jitter,
    at least a provider's ``retry_after``) before retry *n*.

    ``on_failure`` when retries run out: ``"continue"`` answers with an AI message saying the
    call failed; ``"error"`` re-raises the model's last error; a function ``exc -> str``
    writes the AI message's text. An error ``retry_on`` does not match (by default
    anything but a timeout, a connection error, a 429/5xx or a retryable
    ``ProviderError``) is re-raised at once.
    """

    __init__ = RetryPolicy.__init__

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return self.call(lambda: handler(request), self._give_up)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await self.acall(lambda: handler(request), self._give_up)

    def _give_up(self, exc: Exception, attempts: int) -> ModelResponse:
        mode = self.failure_mode
        if mode == "error":
            raise exc
        if callable(mode):
            text = mode(exc)
        else:
            text = (
                f"The model call failed after {attempts} "
                f"attempt{'s' if attempts != 1 else ''} with {describe_error(exc)}. "
                "No answer could be produced; please try again later."
            )
        failed = {"attempts": attempts, "error_type": type(exc).__name__, "error": str(exc)}
        return ModelResponse([AIMessage(text, metadata={"model_retry": failed})])
