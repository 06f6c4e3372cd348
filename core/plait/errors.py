"""The errors plait raises: one root, one named class per failure a user may catch."""

from __future__ import annotations

from typing import Any

__all__ = [
    "CheckpointerRequiredError",
    "ConfigError",
    "ContextOverflowError",
    "MalformedURLError",
    "ModelCallLimitExceededError",
    "PIIDetectionError",
    "PlaitError",
    "ProviderError",
    "RecursionLimitError",
    "SchemaVersionError",
    "StopRun",
    "StoreError",
    "StructuredOutputError",
    "ThreadBusyError",
    "ToolCallFailedError",
    "ToolCallLimitExceededError",
    "UsageLimitExceededError",
]

_RETRYABLE_STATUS = frozenset({408, 409, 429})


class PlaitError(Exception):
    """The root of every error plait raises on purpose."""


class ConfigError(PlaitError):
    """A setup plait cannot serve: a bad option, an unknown name, a conflicting state key.

    Raised by ``create_agent`` (never later) so a misconfigured agent never starts.
    """


class CheckpointerRequiredError(ConfigError):
    """A feature that must persist a paused run (interrupts, resume) was used without one."""


class StopRun(PlaitError):
    """Base of the errors meant to end the run.

    The kernel never turns these into an error ``ToolMessage``: they propagate to the caller
    of ``invoke``. ``update``, when a node hook or a ``wrap_model_call`` hook sets it, is
    state the kernel applies and checkpoints before the error propagates (a limiter's
    counts, a guardrail's trip); without it nothing of the failing step is saved.
    """

    update: dict[str, Any] | None = None


class RecursionLimitError(StopRun):
    """The run made more model calls than its ``recursion_limit``."""


class ModelCallLimitExceededError(StopRun):
    """``model_call_limit`` with ``exit_behavior="error"`` reached a limit."""


class ToolCallLimitExceededError(StopRun):
    """``tool_call_limit`` with ``exit_behavior="error"`` (or an impossible ``"end"``)."""


class UsageLimitExceededError(StopRun):
    """``usage_limit`` with ``exit_behavior="error"`` reached a token or cost limit."""


class ToolCallFailedError(StopRun):
    """``tool_retry`` with ``on_failure="error"`` gave up; the tool's error is ``__cause__``."""


class PIIDetectionError(StopRun):
    """``pii`` with ``strategy="block"`` found personal data."""


class ToolTimeoutError(PlaitError, TimeoutError):
    """A tool call ran past its ``timeout``; the model gets it as an error tool message."""


class StructuredOutputError(PlaitError):
    """The model's final answer does not fit the agent's ``response_format``."""


class ThreadBusyError(PlaitError):
    """Another run holds the thread: it wrote since this one loaded it (compare-and-set
    failed), or new input came while it is live (``live_run`` is then its run id)."""

    def __init__(
        self, message: str, *, live_run: str | None = None, reason: str | None = None
    ) -> None:
        super().__init__(message)
        self.live_run = live_run
        self.reason = reason
        """For a run live in another process: the message without its advice on
        continuing the run, for callers (the CLI) that give their own."""


class SchemaVersionError(PlaitError):
    """A database holds a schema this version of plait does not know."""


class StoreError(PlaitError):
    """A checkpointer or store could not be opened or used (bad URL, missing server...)."""


class MalformedURLError(ConfigError, StoreError):
    """A checkpointer or store URL that cannot be read; the message names the URL and the
    accepted forms. A ``ConfigError`` (a setup mistake) and a ``StoreError`` (as before)."""


class ProviderError(PlaitError):
    """A model provider failed: HTTP status, timeout, connection or protocol error.

    ``retryable`` tells retry and fallback middleware whether another attempt can help:
    timeouts, connection errors, 408, 409, 429 and 5xx are; 400, 401, 403, 404 are not.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
        error_type: str | None = None,
        retryable: bool | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        """The provider's id for the failed request (its header or error body), for support."""
        self.status_code = status_code
        self.retry_after = retry_after
        self.provider = provider
        self.error_type = error_type
        if retryable is None:
            retryable = status_code is None or (
                status_code in _RETRYABLE_STATUS or status_code >= 500
            )
        self.retryable = retryable

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, status_code={self.status_code!r}, "
            f"provider={self.provider!r}, error_type={self.error_type!r})"
        )


class ContextOverflowError(ProviderError):
    """The prompt is larger than the model's context window."""

    def __init__(self, message: str, **kwargs: object) -> None:
        kwargs.setdefault("retryable", False)
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
