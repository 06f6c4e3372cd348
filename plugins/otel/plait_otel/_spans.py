"""The ``chat`` and ``execute_tool`` spans: an effects performer, installed by the run's
``wrap_run``, that runs each provider call and each tool function inside its span and
records the duration and token histograms."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

import attrs
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import Histogram
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from plait import effects
from plait.lazy import define, frozen
from plait.messages import AIMessage, AIMessageChunk, ToolCall, ToolMessage, Usage
from plait.tools import error_text, raised_by_tool, tool_error_message
from plait.types import Command
from plait_otel import _content

__all__ = [
    "UNKNOWN_TOOL",
    "RunScope",
    "SpanPerformer",
    "Telemetry",
    "ToolCapture",
    "current_scope",
    "fail",
    "provider_name",
    "usage_attributes",
]

T = TypeVar("T")

UNKNOWN_TOOL = "_OTHER"
"""``gen_ai.tool.name`` (and so the span name) of a call to a tool the agent does not have,
without ``capture_content``: such a name is the model's text, as its arguments are (a
prompt injection can put anything there). ``_OTHER`` is what the OpenTelemetry conventions
record for a value outside the known set (``http.request.method``, ``error.type``)."""

# Model settings recorded as ``gen_ai.request.*`` (each provider's spellings → the
# convention's: OpenAI's, Anthropic's, Gemini's snake_case and its API's camelCase).
_SETTINGS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "topP": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "topK": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "maxOutputTokens": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "frequencyPenalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "presencePenalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
    "n": "gen_ai.request.choice.count",
}
_STOP = ("stop", "stop_sequences", "stopSequences")
"""The spellings of the stop sequences setting (``gen_ai.request.stop_sequences``)."""


_PROVIDER_NAMES = {"openai-responses": "openai"}
"""Providers whose plait name is not the conventions' well-known value, which "MUST be
used" when one applies (``gen_ai.provider.name``)."""


def provider_name(model: Any) -> str:
    """``gen_ai.provider.name`` for ``model``: the conventions' well-known value when one
    applies (Gemini: ``gcp.gemini`` on generativelanguage.googleapis.com, ``gcp.vertex_ai``
    through Vertex AI), else the model's ``provider``."""
    name = str(model.provider)
    if name == "google":
        return "gcp.vertex_ai" if getattr(model, "vertex", False) is True else "gcp.gemini"
    return _PROVIDER_NAMES.get(name, name)


@frozen
class Telemetry:
    """One middleware's tracer and instruments."""

    tracer: Tracer
    duration: Histogram
    tokens: Histogram
    capture_content: bool


@frozen
class RunScope:
    """The run being traced: its span, and the performer that owns its child spans (a
    sub-agent with its own ``otel`` middleware installs another; only the innermost
    records, so no call gets two spans)."""

    span: Span
    performer: SpanPerformer
    run_id: str
    conversation: str | None
    agent: str


@define(eq=False)
class ToolCapture:
    """One tool call as the model sees it, for ``capture_content``: the call as the model
    wrote it (before middleware restores pseudonymized values), and the ``execute_tool``
    spans of its runs, kept open until the answer the model gets (after ``pii`` and every
    other ``wrap_tool_call`` inside ``otel``) is known and recorded on them."""

    call: ToolCall
    spans: list[Span] = attrs.field(factory=list)
    failed: list[tuple[Span, Exception]] = attrs.field(factory=list)
    """The spans of runs that raised, with their exception, recorded at the end."""

    def finish(
        self, outcome: ToolMessage | Command | None, error: BaseException | None = None
    ) -> None:
        for span, exc in self.failed:
            if exc is error and raised_by_tool(exc):
                # The tool's error the model gets, in the words the middleware inside
                # otel gave it (pii's redaction), not the exception's own.
                told = error_text(exc)
                span.add_event(
                    "exception", {"exception.type": type(exc).__name__, "exception.message": told}
                )
                span.set_attribute(
                    "gen_ai.tool.call.result", tool_error_message(self.call, exc).text
                )
                span.set_status(Status(StatusCode.ERROR, told[:500] or type(exc).__name__))
            else:  # an attempt retried, or a middleware's error: the model never read it
                fail(span, exc, False)
            span.end()
        self.failed.clear()
        answer = _answer(outcome, self.call.id)
        for span in self.spans:
            if answer is not None:
                span.set_attribute("gen_ai.tool.call.result", answer.text)
                if answer.status == "error":
                    span.set_status(Status(StatusCode.ERROR, answer.text[:500]))
            span.end()
        self.spans.clear()


def _answer(outcome: Any, call_id: str) -> ToolMessage | None:
    """The tool message answering ``call_id`` in a tool call's outcome."""
    if isinstance(outcome, ToolMessage):
        return outcome
    if isinstance(outcome, Command) and outcome.update:
        messages = outcome.update.get("messages", [])
        for message in [messages] if isinstance(messages, ToolMessage) else messages:
            if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
                return message
    return None


_scope: ContextVar[RunScope | None] = ContextVar("plait_otel_run", default=None)
_capture: ContextVar[ToolCapture | None] = ContextVar("plait_otel_tool", default=None)
_spanned: ContextVar[object] = ContextVar("plait_otel_spanned", default=None)
"""The effect whose span is being started: one instance installed twice (the same
middleware object in an agent and its sub-agent) gives it one span, not two."""


def current_scope() -> ContextVar[RunScope | None]:
    return _scope


def current_capture() -> ContextVar[ToolCapture | None]:
    return _capture


CAPTURE_CONTENT = "plait.otel.capture_content"
"""The OpenTelemetry context key under which a run's ``capture_content`` is set while its
span is current. Another plugin that records on the current span (``guardrails``' trip
event) reads it with ``opentelemetry.context.get_value`` and records text it did not
write itself (a judge's reason) only when it is ``True``: content stays out of spans
unless the user asked for it."""


@contextlib.contextmanager
def content_flag(capture_content: bool) -> Iterator[None]:
    """``CAPTURE_CONTENT`` set in the OpenTelemetry context for the code inside."""
    token = otel_context.attach(otel_context.set_value(CAPTURE_CONTENT, capture_content))
    try:
        yield
    finally:
        otel_context.detach(token)


def fail(span: Span, exc: BaseException, capture_content: bool) -> str:
    """Mark ``span`` failed by ``exc``; the ``error.type`` recorded. The exception's text
    (which may quote arguments, tool output or a provider's echo of the prompt) is
    content: without ``capture_content`` only its type is recorded."""
    kind = type(exc).__qualname__
    span.set_attribute("error.type", kind)
    if capture_content:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, str(exc) or kind))
    else:
        span.add_event("exception", {"exception.type": kind})
        span.set_status(Status(StatusCode.ERROR, kind))
    return kind


def usage_attributes(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if usage.cache_read_tokens:
        out["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        out["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        out["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return out


def _once(effect: effects.Effect, proceed: Callable[[], T]) -> T:
    token = _spanned.set(effect)
    try:
        return proceed()
    finally:
        _spanned.reset(token)


async def _aonce(effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
    token = _spanned.set(effect)
    try:
        return await proceed()
    finally:
        _spanned.reset(token)


@frozen(eq=False)
class _Chat:
    """One ``chat`` span in progress."""

    span: Span
    started: float
    metric: dict[str, Any]


class SpanPerformer:
    """Performs ``ModelCall`` and ``ToolRun`` effects inside ``chat``/``execute_tool`` spans."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def _scope(self, effect: effects.Effect) -> RunScope | None:
        scope = _scope.get()
        if scope is None or scope.performer is not self or _spanned.get() is effect:
            return None
        return scope

    # -- sync ------------------------------------------------------------------------------

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        scope = self._scope(effect)
        if scope is None:
            return proceed()
        if isinstance(effect, effects.ToolRun):
            return self._tool(scope, effect, proceed)
        if not isinstance(effect, effects.ModelCall):  # an effect this performer does not span
            return proceed()
        if effect.streaming:
            return self._stream(scope, effect, proceed)  # type: ignore[return-value]
        chat = self._start_chat(scope, effect)
        try:
            with trace.use_span(chat.span, record_exception=False, set_status_on_exception=False):
                message = _once(effect, proceed)
        except BaseException as exc:
            self._chat_failed(chat, exc)
            raise
        self._chat_done(chat, message)  # type: ignore[arg-type]
        return message

    def _stream(
        self, scope: RunScope, effect: effects.ModelCall, proceed: Callable[[], Any]
    ) -> Iterator[AIMessageChunk]:
        chat = self._start_chat(scope, effect)
        total: AIMessageChunk | None = None
        try:
            with trace.use_span(chat.span, record_exception=False, set_status_on_exception=False):
                chunks = _once(effect, proceed)
            for chunk in chunks:
                total = self._chunk(chat, total, chunk)
                yield chunk
        except GeneratorExit:  # the reader stopped early: not a failure
            chat.span.set_attribute("plait.stream.abandoned", True)
            chat.span.end()
            raise
        except BaseException as exc:
            self._chat_failed(chat, exc)
            raise
        self._chat_done(chat, total.to_message() if total is not None else AIMessage(""))

    def _tool(self, scope: RunScope, effect: effects.ToolRun, proceed: Callable[[], T]) -> T:
        span = self._start_tool(scope, effect)
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                outcome = _once(effect, proceed)
        except BaseException as exc:
            self._tool_failed(span, exc, effect.request.tool_call.id)
            raise
        self._tool_done(span, outcome, effect.request.tool_call.id)
        return outcome

    # -- async -----------------------------------------------------------------------------

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        scope = self._scope(effect)
        if scope is None:
            return await proceed()
        if isinstance(effect, effects.ToolRun):
            span = self._start_tool(scope, effect)
            try:
                with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                    outcome = await _aonce(effect, proceed)
            except BaseException as exc:
                self._tool_failed(span, exc, effect.request.tool_call.id)
                raise
            self._tool_done(span, outcome, effect.request.tool_call.id)
            return outcome
        if not isinstance(effect, effects.ModelCall):
            return await proceed()
        if effect.streaming:
            return self._astream(scope, effect, proceed)  # type: ignore[return-value]
        chat = self._start_chat(scope, effect)
        try:
            with trace.use_span(chat.span, record_exception=False, set_status_on_exception=False):
                message = await _aonce(effect, proceed)
        except BaseException as exc:
            self._chat_failed(chat, exc)
            raise
        self._chat_done(chat, message)  # type: ignore[arg-type]
        return message

    async def _astream(
        self, scope: RunScope, effect: effects.ModelCall, proceed: Callable[[], Awaitable[Any]]
    ) -> AsyncIterator[AIMessageChunk]:
        chat = self._start_chat(scope, effect)
        total: AIMessageChunk | None = None
        try:
            with trace.use_span(chat.span, record_exception=False, set_status_on_exception=False):
                chunks = await _aonce(effect, proceed)
            async for chunk in chunks:
                total = self._chunk(chat, total, chunk)
                yield chunk
        except GeneratorExit:
            chat.span.set_attribute("plait.stream.abandoned", True)
            chat.span.end()
            raise
        except BaseException as exc:
            self._chat_failed(chat, exc)
            raise
        self._chat_done(chat, total.to_message() if total is not None else AIMessage(""))

    # -- chat spans ------------------------------------------------------------------------

    def _start_chat(self, scope: RunScope, effect: effects.ModelCall) -> _Chat:
        model = effect.model
        name = model.model_name
        metric = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(model),
            "gen_ai.request.model": name,
        }
        attributes: dict[str, Any] = {
            **metric,
            "gen_ai.agent.name": scope.agent,
            "gen_ai.request.stream": effect.streaming,
        }
        if scope.conversation is not None:
            attributes["gen_ai.conversation.id"] = scope.conversation
        # The model's own settings (init_chat_model(..., temperature=0), an agent file's
        # model_settings), overridden by the call's, as the provider sends them.
        options = {**effect.model.settings, **effect.options}
        # A provider that always sends a token limit keeps it as an attribute of the
        # model, not a setting (Anthropic's max_tokens, required by its API)
        limit = getattr(model, "max_tokens", None)
        if isinstance(limit, int) and not isinstance(limit, bool):
            attributes["gen_ai.request.max_tokens"] = limit
        for key, value in options.items():
            if key in _SETTINGS and isinstance(value, (int, float)) and value is not None:
                attributes[_SETTINGS[key]] = value
        for key in _STOP:
            stop = options.get(key)
            if isinstance(stop, str):
                attributes["gen_ai.request.stop_sequences"] = [stop]
            elif isinstance(stop, (list, tuple)):
                attributes["gen_ai.request.stop_sequences"] = [str(s) for s in stop]
        if options.get("response_format") is not None:
            attributes["gen_ai.output.type"] = "json"
        if self.telemetry.capture_content:
            attributes["gen_ai.input.messages"] = _content.input_messages(effect.messages)
            prompt = options.get("system_prompt")
            if prompt:
                attributes["gen_ai.system_instructions"] = _content.system_instructions(prompt)
            tools = options.get("tools") or ()
            if tools:
                attributes["gen_ai.tool.definitions"] = _content.dumps(
                    [
                        {"type": "function", "name": t.name, "description": t.description}
                        for t in tools
                    ]
                )
        span = self.telemetry.tracer.start_span(
            f"chat {name}" if name else "chat", kind=SpanKind.CLIENT, attributes=attributes
        )
        return _Chat(span, time.perf_counter(), metric)

    def _chunk(
        self, chat: _Chat, total: AIMessageChunk | None, chunk: AIMessageChunk
    ) -> AIMessageChunk:
        if total is None:
            first = time.perf_counter() - chat.started
            chat.span.set_attribute("gen_ai.response.time_to_first_chunk", first)
            return chunk
        return total + chunk

    def _chat_done(self, chat: _Chat, message: AIMessage) -> None:
        span = chat.span
        meta = message.response_metadata
        reason = _content.finish_reason(message)
        span.set_attribute("gen_ai.response.finish_reasons", [reason])
        response_id = meta.get("response_id")
        if isinstance(response_id, str):
            span.set_attribute("gen_ai.response.id", response_id)
        metric = dict(chat.metric)
        model = meta.get("model")
        if isinstance(model, str):
            span.set_attribute("gen_ai.response.model", model)
            metric["gen_ai.response.model"] = model
        if message.usage is not None:
            span.set_attributes(usage_attributes(message.usage))
            tokens = self.telemetry.tokens
            tokens.record(message.usage.input_tokens, {**metric, "gen_ai.token.type": "input"})
            tokens.record(message.usage.output_tokens, {**metric, "gen_ai.token.type": "output"})
        if self.telemetry.capture_content:
            span.set_attribute(
                "gen_ai.output.messages", _content.output_messages(message, [reason])
            )
        self.telemetry.duration.record(time.perf_counter() - chat.started, metric)
        span.end()

    def _chat_failed(self, chat: _Chat, exc: BaseException) -> None:
        kind = fail(chat.span, exc, self.telemetry.capture_content)
        self.telemetry.duration.record(
            time.perf_counter() - chat.started, {**chat.metric, "error.type": kind}
        )
        chat.span.end()

    # -- tool spans ------------------------------------------------------------------------

    def _start_tool(self, scope: RunScope, effect: effects.ToolRun) -> Span:
        request = effect.request
        call = request.tool_call
        name = call.name
        if not self.telemetry.capture_content and (
            request.tool is None or request.tool.name != name
        ):
            name = UNKNOWN_TOOL
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "gen_ai.agent.name": scope.agent,
        }
        if request.tool is not None and request.tool.description:
            attributes["gen_ai.tool.description"] = request.tool.description
        if scope.conversation is not None:
            attributes["gen_ai.conversation.id"] = scope.conversation
        if self.telemetry.capture_content:
            # The arguments the model wrote (pii placeholders, not the restored values).
            capture = _capture.get()
            args = capture.call.args if capture and capture.call.id == call.id else call.args
            attributes["gen_ai.tool.call.arguments"] = _content.dumps(args)
        return self.telemetry.tracer.start_span(
            f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes
        )

    def _tool_done(self, span: Span, outcome: Any, call_id: str) -> None:
        answer = _answer(outcome, call_id)
        if answer is not None and answer.status == "error":
            # The error text may quote the arguments: the status holds only the error type.
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "tool_error"))
        capture = _capture.get()
        if self.telemetry.capture_content and capture is not None and capture.call.id == call_id:
            capture.spans.append(span)  # ended with the answer the model gets
            return
        span.end()

    def _tool_failed(self, span: Span, exc: BaseException, call_id: str) -> None:
        if not isinstance(exc, Exception):  # an interrupt pausing the run: not a failure
            span.set_attribute("plait.tool.interrupted", True)
            span.end()
            return
        capture = _capture.get()
        if self.telemetry.capture_content and capture is not None and capture.call.id == call_id:
            # Recorded with the text the model gets, once the middleware inside otel
            # (pii) had the error: its own words may hold what pii redacts.
            span.set_attribute("error.type", type(exc).__name__)
            capture.failed.append((span, exc))
            return
        fail(span, exc, self.telemetry.capture_content)
        span.end()
