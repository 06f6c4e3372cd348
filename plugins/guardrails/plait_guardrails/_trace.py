"""A trip in the trace: an event on the current OpenTelemetry span (the run's
``invoke_agent`` span when ``plait-otel`` is on) and a ``custom`` stream event, both
through public APIs only. Without OpenTelemetry installed only the stream event is sent."""

from __future__ import annotations

from typing import Any

from plait.types import Runtime
from plait_guardrails._guardrail import GuardrailTripped

__all__ = ["EVENT", "record"]

EVENT = "guardrail.tripped"


def record(trip: GuardrailTripped, runtime: Runtime | None) -> None:
    attributes: dict[str, Any] = {
        "guardrail.name": trip.guardrail,
        "guardrail.kind": trip.kind,
        "guardrail.reason": trip.reason,
    }
    try:
        from opentelemetry import trace
    except ImportError:  # tracing is optional
        pass
    else:
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(EVENT, attributes)
            span.set_attribute("plait.guardrail.tripped", trip.guardrail)
    if runtime is not None:
        runtime.stream_writer({EVENT: attributes})
