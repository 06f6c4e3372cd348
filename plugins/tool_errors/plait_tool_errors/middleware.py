"""``ToolErrorMiddleware``: what the model reads when a tool raises, per exception type.

The kernel already answers a tool's exception with an error tool message
(``plait.tools.tool_error_message``). This middleware, around the tool call, decides
instead: a message template per exception class (the most specific class in the
exception's MRO wins), the traceback appended or not, or ``"raise"``: the run stops with
``ToolCallFailedError`` whose ``__cause__`` is the tool's exception. LangChain's
``on_error(exc, request)`` / ``aon_error`` handler form is accepted as well.

Only the tool's own exceptions are handled (``plait.tools.raised_by_tool``): one raised by
a middleware inside this one is a bug the caller must see, and interrupts and ``StopRun``
errors (a limit, a block) pass through untouched.
"""

from __future__ import annotations

import os
import string
import traceback as tb
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

import attrs

import plait
from plait.errors import ConfigError, StopRun, ToolCallFailedError
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.middleware import Middleware
from plait.options import FieldError, check_tool_names, expected, tool_names_field
from plait.retry import describe_error
from plait.tools import Tool, raised_by_tool, tool_error_message
from plait.types import AgentConfig, Command, ToolCallRequest

__all__ = ["AOnError", "OnError", "ToolErrorMiddleware"]

Content = str | list[Any]
OnError = Callable[[Exception, ToolCallRequest], Content | None]
"""LangChain's handler: content for the error tool message, or ``None`` to stop the run."""
AOnError = Callable[[Exception, ToolCallRequest], Awaitable[Content | None]]
"""The async form of ``OnError`` (``aon_error``), awaited on the async path."""

RAISE = "raise"
FIELDS = ("tool", "error", "error_type")
"""The placeholders a template may use: the tool's name, ``str(exc)``, the class name."""
_TEMPLATE = "'raise' or a template using only {tool}, {error} and {error_type}"
_PLAIT_DIR = os.path.dirname(plait.__file__)


def _template_problem(value: Any) -> str | None:
    """Why ``value`` is neither ``"raise"`` nor a usable template (``None``: it is)."""
    if not isinstance(value, str):
        return expected(_TEMPLATE, value)
    if value == RAISE:
        return None
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
    except ValueError as exc:
        return expected(_TEMPLATE, value, str(exc))
    unknown = [name for name in names if name not in FIELDS]
    if unknown:
        return expected(_TEMPLATE, value, f"{{{unknown[0]}}} is not one of them")
    return None


def _check_messages(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mapping):
        raise FieldError(
            attribute.name, expected("a mapping of exception classes to templates", value)
        )
    for key, template in value.items():
        if not isinstance(key, type) or not issubclass(key, Exception):
            raise FieldError(
                attribute.name,
                expected("a subclass of Exception as each key", key),
            )
        problem = _template_problem(template)
        if problem is not None:
            raise FieldError(attribute.name, f"{key.__qualname__}: {problem}")


def _check_default(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    problem = _template_problem(value)
    if problem is not None:
        raise FieldError(attribute.name, problem + " (or None for plait's own message)")


def _check_bool(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise FieldError(attribute.name, expected("a bool", value))


def _check_handler(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise FieldError(
            attribute.name, expected("a callable (exception, request) -> content or None", value)
        )


@frozen
class ToolErrorMiddleware(Middleware):
    """Writes the error tool message for an exception a tool raised, or stops the run.

    ``messages`` maps exception classes to a template (``{tool}``, ``{error}``,
    ``{error_type}``) or ``"raise"``; the most specific class of the exception decides.
    ``default`` covers the rest: ``None`` keeps plait's own message. ``traceback=True``
    appends the tool's traceback (plait's own frames left out). ``on_error`` (LangChain's
    form, exclusive with ``messages``/``default``) returns the content, or ``None`` to
    stop the run. Stopping raises ``ToolCallFailedError`` from the tool's exception.
    """

    on_error: OnError | None = attrs.field(default=None, validator=_check_handler)
    """LangChain's handler ``(exc, request) -> content | None``; ``None`` stops the run."""
    aon_error: AOnError | None = attrs.field(default=None, kw_only=True, validator=_check_handler)
    """Its async twin, used on the async path (``on_error`` otherwise)."""
    messages: Mapping[type[Exception], str] = attrs.field(
        factory=dict, kw_only=True, validator=_check_messages
    )
    """Exception class -> template or ``"raise"``; the most specific class wins."""
    default: str | None = attrs.field(default=None, kw_only=True, validator=_check_default)
    """The template (or ``"raise"``) for the other exceptions; ``None``: plait's message."""
    traceback: bool = attrs.field(default=False, kw_only=True, validator=_check_bool)
    """Append the tool's traceback to the message the model reads."""
    tools: Sequence[str | Tool] | None = tool_names_field(kw_only=True)
    """Only these tools' errors are handled (names or ``Tool`` objects); ``None``: all."""

    def __attrs_post_init__(self) -> None:
        handler = self.on_error is not None or self.aon_error is not None
        if handler and (self.messages or self.default is not None):
            raise ConfigError(
                "ToolErrorMiddleware: expected on_error/aon_error or messages/default, got both"
            )

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if self.tools is not None:
            check_tool_names(self.tools, agent_config, option="tools")

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        try:
            return handler(request)
        except Exception as exc:
            if not self._handles(request, exc):
                raise
            if self.on_error is None and self.aon_error is not None:
                raise ConfigError(
                    "only aon_error is given, which invoke/stream cannot "
                    "await; run with ainvoke/astream or give on_error"
                ) from exc
            content = self.on_error(exc, request) if self.on_error else self._content(request, exc)
            return self._answer(request, exc, content)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        try:
            return await handler(request)
        except Exception as exc:
            if not self._handles(request, exc):
                raise
            if self.aon_error is not None:
                content = await self.aon_error(exc, request)
            elif self.on_error is not None:
                content = self.on_error(exc, request)
            else:
                content = self._content(request, exc)
            return self._answer(request, exc, content)

    def _handles(self, request: ToolCallRequest, exc: Exception) -> bool:
        if isinstance(exc, StopRun) or not raised_by_tool(exc):
            return False
        return self.tools is None or request.tool_call.name in self.tools

    def _content(self, request: ToolCallRequest, exc: Exception) -> Content | None:
        """The message ``messages``/``default`` give for ``exc`` (``None``: stop the run)."""
        template = next(
            (self.messages[cls] for cls in type(exc).__mro__ if cls in self.messages),
            self.default,
        )
        if template == RAISE:
            return None
        call = request.tool_call
        if template is None:
            text = tool_error_message(call, exc).text
        else:
            text = template.format(
                tool=call.name, error=_describe(exc), error_type=type(exc).__name__
            )
        return text + _traceback(exc) if self.traceback else text

    def _answer(
        self, request: ToolCallRequest, exc: Exception, content: Content | None
    ) -> ToolMessage:
        call = request.tool_call
        if content is None:
            raise ToolCallFailedError(
                f"tool {call.name!r} failed with {describe_error(exc)}"
            ) from exc
        return ToolMessage.error(
            call,
            cast(str, content),
            metadata={"tool_errors": {"error_type": type(exc).__name__}},
        )


def _describe(exc: Exception) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ raises must not end the run
        return f"<{type(exc).__name__} that cannot be shown>"


def _traceback(exc: Exception) -> str:
    """The tool's traceback: the frames after plait's last one (the hooks and the kernel
    around the tool, which tell the model nothing about the failure, are left out)."""
    every = tb.extract_tb(exc.__traceback__)
    kernel = [i for i, frame in enumerate(every) if frame.filename.startswith(_PLAIT_DIR)]
    frames = every[kernel[-1] + 1 :] if kernel else every
    lines = tb.format_list(frames) + tb.format_exception_only(exc)
    return "\n\nTraceback (most recent call last):\n" + "".join(lines).rstrip("\n")
