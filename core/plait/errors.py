"""The errors plait raises: one root, one named class per failure a user may catch."""

from __future__ import annotations

from typing import Any

__all__ = [
    "CheckpointerRequiredError",
    "ConfigError",
    "ContextOverflowError",
    "FieldError",
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

    Raised by ``create_agent`` so a misconfigured agent never starts (or, for a setup only
    a run can reveal, by that run: an emulator with no model to use).

    A plugin raises it with the problem only — ``ConfigError("expected ..., got ...")``,
    ``ConfigError(problem, option="takeover_after")`` about one option, or
    ``FieldError(option, problem)`` from an attrs validator — and never names itself:
    wherever the kernel calls a plugin's code (building it from its options, its hooks at
    build time and at run time) it adds ``plugin 'x': option 'y':`` once, ``x`` being the
    name the agent enabled the plugin under. ``str()`` is that whole sentence; ``problem``,
    ``option`` and ``plugin`` are its parts. Code the kernel does not call (a plugin's own
    command or public function) passes ``plugin=`` itself.
    """

    def __init__(
        self, problem: str, *, option: str | None = None, plugin: str | None = None
    ) -> None:
        self.problem = problem
        """What is wrong, without the plugin's and option's names."""
        self.option = option
        """The option (or path of one, ``models[1]``) the problem is about, if any."""
        self.plugin = plugin
        """The name of the plugin whose setup is wrong, once known (the kernel fills it)."""
        where = "" if option is None else f"option {option!r}: "
        super().__init__(
            where + problem if plugin is None else f"plugin {plugin!r}: {where}{problem}"
        )

    def in_plugin(self, plugin: str) -> None:
        """Name the plugin this error is about (the kernel does, once; later calls are
        ignored, so an error passing through several plugins keeps its first name)."""
        if self.plugin is None:
            self.plugin = plugin
            self.args = (f"plugin {plugin!r}: {self.args[0] if self.args else ''}",)


class FieldError(ValueError):
    """A validator's complaint about one field (a plugin's option): raise it from an attrs
    validator, ``__attrs_post_init__`` or a hook with the problem only,
    ``FieldError("takeover_after", "expected ..., got ...")``. A ``ValueError``, as attrs
    validators raise. ``str()`` is ``"<field>: <message>"`` (what a direct ``Cls(field=...)``
    call shows); the kernel turns it into ``ConfigError`` ``plugin 'x': option 'y': <message>``
    and agent files put their own location (``[agent] recursion_limit``) before ``message``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class CheckpointerRequiredError(ConfigError):
    """A feature that must persist a paused run (interrupts, resume) was used without one."""


class StopRun(PlaitError):
    """Base of the errors meant to end the run.

    The kernel never turns these into an error ``ToolMessage``: they propagate to the caller
    of ``invoke``. ``update``, when a node hook or a ``wrap_model_call`` hook sets it, is
    state the kernel applies and checkpoints before the error propagates (a limiter's
    counts, a guardrail's trip); without it nothing of the failing step is saved. What
    came before the step is: the run's input is saved after the ``before_agent`` hooks,
    before the first ``before_model`` hook or model call.
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
