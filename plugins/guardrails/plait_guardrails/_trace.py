"""A trip in the trace: an event on the current OpenTelemetry span (the run's
``invoke_agent`` span when ``plait-otel`` is on) and a ``custom`` stream event, both
through public APIs only. Without OpenTelemetry installed only the stream event is sent."""

from __future__ import annotations

from typing import Any

from plait.types import Runtime
from plait_guardrails._guardrail import GuardrailTripped

__all__ = ["EVENT", "record"]

EVENT = "guardrail.tripped"


CAPTURE_CONTENT = "plait.otel.capture_content"
"""The OpenTelemetry context key ``otel`` sets to its ``capture_content`` while a run's
span is current."""


def record(trip: GuardrailTripped, runtime: Runtime | None) -> None:
    attributes: dict[str, Any] = {
        "guardrail.name": trip.guardrail,
        "guardrail.kind": trip.kind,
        "guardrail.reason": trip.reason,
    }
    try:
        from opentelemetry import context, trace
    except ImportError:  # tracing is optional
        pass
    else:
        span = trace.get_current_span()
        if span.is_recording():
            # A reason is a check's own words about the text (a judge's "the user gives
            # the address jane@..."): content, kept off spans unless otel captures it.
            captured = context.get_value(CAPTURE_CONTENT) is True
            on_span = (
                attributes
                if captured
                else {k: v for k, v in attributes.items() if k != "guardrail.reason"}
            )
            span.add_event(EVENT, on_span)
            span.set_attribute("plait.guardrail.tripped", trip.guardrail)
    if runtime is not None:
        runtime.stream_writer({EVENT: attributes})
