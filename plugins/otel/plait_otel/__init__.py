"""``otel``: OpenTelemetry traces and metrics of an agent, after the GenAI semantic
conventions.

One ``invoke_agent {name}`` span per run (``wrap_run``), and inside it — through an
effects performer the run installs — a ``chat {model}`` span per provider call (every
attempt: retries, fallbacks, middleware's own calls) and an ``execute_tool {tool}`` span
per tool call, under which a sub-agent's run nests. Spans go to the application's tracer
provider (or ``tracer_provider``); none is ever installed, and without the OpenTelemetry
SDK a run costs one non-recording span.

A paused run's span ends with ``plait.run.status="paused"``; the run's span contexts are
kept in thread state (``otel_run_spans``, checkpointed), so the span of the call that
resumes it — in this process or another — links to them.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanContext, SpanKind, TraceFlags

from plait import effects
from plait.agent import AgentResult
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.middleware import Middleware
from plait.types import Command, RunRequest, Runtime, StateField, ToolCallRequest
from plait_otel._spans import (
    RunScope,
    SpanPerformer,
    Telemetry,
    ToolCapture,
    content_flag,
    current_capture,
    current_scope,
    fail,
    provider_name,
    usage_attributes,
)

__all__ = ["OtelMiddleware"]

SPANS_KEY = "otel_run_spans"
"""Thread-scoped: ``{"run_id": id, "spans": [[trace_id, span_id], ...]}``, hex ids of
the spans the thread's latest run has had (one more each time it is resumed)."""

_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                     20.48, 40.96, 81.92]  # fmt: skip
_TOKEN_BUCKETS = [4**i for i in range(14)]  # 1 … 67108864, as the conventions advise


def _version() -> str:
    try:
        return importlib.metadata.version("plait-otel")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from source
        return "0"


@frozen(kw_only=True)
class OtelMiddleware(Middleware):
    """Traces each run, model call and tool call with OpenTelemetry GenAI spans, and
    records the ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``
    histograms. List it first, so its run span encloses everything else."""

    capture_content: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Record messages, system instructions, tool definitions, tool arguments and results
    on the spans (``gen_ai.input.messages`` …). Off by default: they may hold personal data."""
    tracer_provider: Any = attrs.field(default=None, eq=False)
    """A ``TracerProvider`` to use instead of the application's global one."""
    meter_provider: Any = attrs.field(default=None, eq=False)
    """A ``MeterProvider`` to use instead of the application's global one."""
    _telemetry: Telemetry = attrs.field(init=False, eq=False, repr=False)
    _performer: SpanPerformer = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        version = _version()
        tracer = trace.get_tracer("plait_otel", version, tracer_provider=self.tracer_provider)
        meter = metrics.get_meter("plait_otel", version, meter_provider=self.meter_provider)
        telemetry = Telemetry(
            tracer,
            meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
            ),
            meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
            ),
            self.capture_content,
        )
        object.__setattr__(self, "_telemetry", telemetry)
        object.__setattr__(self, "_performer", SpanPerformer(telemetry))

    def state_fields(self) -> dict[str, StateField]:
        return {
            SPANS_KEY: StateField(
                default={"run_id": None, "spans": []}, scope="thread", internal=True
            )
        }

    # -- the run span ----------------------------------------------------------------------

    def _start(self, request: RunRequest) -> Span:
        runtime = request.runtime
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": request.agent_name,
            "plait.run.id": runtime.run_id,
            "plait.run.resumed": request.resumed,
            "plait.run.streaming": request.streaming,
        }
        if runtime.thread_id is not None:
            attributes["gen_ai.conversation.id"] = runtime.thread_id
        if runtime.model is not None:
            attributes["gen_ai.provider.name"] = provider_name(runtime.model)
            attributes["gen_ai.request.model"] = runtime.model.model_name
        return self._telemetry.tracer.start_span(
            f"invoke_agent {request.agent_name}", kind=SpanKind.INTERNAL, attributes=attributes
        )

    def _scope(self, request: RunRequest, span: Span) -> RunScope:
        runtime = request.runtime
        return RunScope(
            span, self._performer, runtime.run_id, runtime.thread_id, request.agent_name
        )

    def _end(self, span: Span, request: RunRequest, result: AgentResult) -> None:
        paused = bool(result.interrupts)
        span.set_attribute("plait.run.status", "paused" if paused else "completed")
        span.set_attributes(usage_attributes(result.usage))
        if request.resumed:
            own = _ids(span)
            record = result.state.get(SPANS_KEY) or {}
            if record.get("run_id") == request.runtime.run_id:
                for ids in record.get("spans", []):
                    if list(ids) != own:
                        span.add_link(_context(ids), {"plait.link": "paused_run"})
        span.end()

    def _failed(self, span: Span, exc: BaseException) -> None:
        fail(span, exc, self.capture_content)
        span.set_attribute("plait.run.status", "error")
        span.end()

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        span = self._start(request)
        if not span.is_recording():  # no SDK, or sampled out: nothing else to do
            return handler(request)
        token = current_scope().set(self._scope(request, span))
        try:
            with (
                trace.use_span(span, record_exception=False, set_status_on_exception=False),
                content_flag(self.capture_content),
                effects.performing(self._performer),
            ):
                result = handler(request)
        except BaseException as exc:
            self._failed(span, exc)
            raise
        finally:
            current_scope().reset(token)
        self._end(span, request, result)
        return result

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
    ) -> AgentResult:
        span = self._start(request)
        if not span.is_recording():
            return await handler(request)
        token = current_scope().set(self._scope(request, span))
        try:
            with (
                trace.use_span(span, record_exception=False, set_status_on_exception=False),
                content_flag(self.capture_content),
                effects.performing(self._performer),
            ):
                result = await handler(request)
        except BaseException as exc:
            self._failed(span, exc)
            raise
        finally:
            current_scope().reset(token)
        self._end(span, request, result)
        return result

    # -- tool content as the model sees it ----------------------------------------------------

    def _capturing(self) -> bool:
        scope = current_scope().get()
        return self.capture_content and scope is not None and scope.performer is self._performer

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        if not self._capturing():
            return handler(request)
        capture = ToolCapture(request.tool_call)
        token = current_capture().set(capture)
        outcome: ToolMessage | Command | None = None
        try:
            outcome = handler(request)
        except BaseException as error:
            current_capture().reset(token)
            capture.finish(None, error)
            raise
        current_capture().reset(token)
        capture.finish(outcome)
        return outcome

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        if not self._capturing():
            return await handler(request)
        capture = ToolCapture(request.tool_call)
        token = current_capture().set(capture)
        outcome: ToolMessage | Command | None = None
        try:
            outcome = await handler(request)
        except BaseException as error:
            current_capture().reset(token)
            capture.finish(None, error)
            raise
        current_capture().reset(token)
        capture.finish(outcome)
        return outcome

    # -- the run's spans, kept in thread state for a resume to link to -----------------------

    def before_agent(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        scope = current_scope().get()
        if scope is None:
            return None
        return {SPANS_KEY: {"run_id": scope.run_id, "spans": [_ids(scope.span)]}}

    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        scope = current_scope().get()
        if scope is None:
            return None
        record = state[SPANS_KEY]
        own = _ids(scope.span)
        if record.get("run_id") != scope.run_id:
            return {SPANS_KEY: {"run_id": scope.run_id, "spans": [own]}}
        if own in record["spans"]:
            return None
        return {SPANS_KEY: {"run_id": scope.run_id, "spans": [*record["spans"], own]}}


def _ids(span: Span) -> list[str]:
    context = span.get_span_context()
    return [format(context.trace_id, "032x"), format(context.span_id, "016x")]


def _context(ids: list[str]) -> SpanContext:
    return SpanContext(
        int(ids[0], 16), int(ids[1], 16), is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
