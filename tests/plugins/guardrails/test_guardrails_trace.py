"""``guardrails``: a trip is in the trace — an event on the run's OpenTelemetry span (with
``plait-otel`` on) and a ``custom`` stream event."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import plait
from plait.testing import ai, call, scripted
from plait_guardrails import GuardrailData, GuardrailsMiddleware, GuardrailTripped
from plait_otel import OtelMiddleware


def no_homework(data: GuardrailData) -> str | None:
    return "asks for homework" if "homework" in data.text else None


@plait.tool
def lookup(name: str) -> str:
    """Look up."""
    return "secret record"


def spans_after(
    run: Any, guards: GuardrailsMiddleware, model: Any, capture_content: bool = False, **kw: Any
) -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel = OtelMiddleware(tracer_provider=provider, capture_content=capture_content)
    agent = plait.create_agent(
        model,
        [lookup],
        name="helper",
        middleware=[otel, guards],
        **kw,
    )
    with pytest.raises(GuardrailTripped):
        run(agent)
    provider.shutdown()
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize(
    "run",
    [lambda a: a.invoke("homework"), lambda a: asyncio.run(a.ainvoke("homework"))],
    ids=["sync", "async"],
)
def test_input_trip_is_an_event_on_the_run_span(run: Any) -> None:
    guards = GuardrailsMiddleware(input=[no_homework])
    spans = spans_after(run, guards, scripted(), capture_content=True)
    (agent_span,) = [s for s in spans if s.name == "invoke_agent helper"]
    (event,) = [e for e in agent_span.events if e.name == "guardrail.tripped"]
    assert dict(event.attributes or {}) == {
        "guardrail.name": "no_homework",
        "guardrail.kind": "input",
        "guardrail.reason": "asks for homework",
    }
    assert agent_span.attributes["plait.guardrail.tripped"] == "no_homework"
    # Without capture_content (the default) the reason, the check's words about the
    # text, stays off the span: the trip's name and kind are there.
    spans = spans_after(run, GuardrailsMiddleware(input=[no_homework]), scripted())
    (agent_span,) = [s for s in spans if s.name == "invoke_agent helper"]
    (event,) = [e for e in agent_span.events if e.name == "guardrail.tripped"]
    assert dict(event.attributes or {}) == {
        "guardrail.name": "no_homework",
        "guardrail.kind": "input",
    }
    assert agent_span.attributes["plait.guardrail.tripped"] == "no_homework"


def test_tool_and_output_trips_are_events_too() -> None:
    def no_secrets(data: GuardrailData) -> str | None:
        return "a secret" if "secret" in data.text else None

    guards = GuardrailsMiddleware(tools={"lookup": {"after": [no_secrets]}})
    spans = spans_after(
        lambda a: a.invoke("find"), guards, scripted(ai("", call("lookup", name="x")))
    )
    (agent_span,) = [s for s in spans if s.name.startswith("invoke_agent")]
    kinds = [
        e.attributes["guardrail.kind"] for e in agent_span.events if e.name == "guardrail.tripped"
    ]
    assert kinds == ["tool_output"]

    guards = GuardrailsMiddleware(output=[no_secrets])
    spans = spans_after(lambda a: a.invoke("tell"), guards, scripted("the secret is x"))
    (agent_span,) = [s for s in spans if s.name.startswith("invoke_agent")]
    kinds = [
        e.attributes["guardrail.kind"] for e in agent_span.events if e.name == "guardrail.tripped"
    ]
    assert kinds == ["output"]


def test_trip_is_a_custom_stream_event(make_agent: Any) -> None:
    agent = make_agent(["never"], middleware=[GuardrailsMiddleware(input=[no_homework])])
    seen: list[Any] = []
    with pytest.raises(GuardrailTripped):
        for event in agent.stream("homework", mode="custom"):
            seen.append(event.data)
    assert seen == [
        {
            "guardrail.tripped": {
                "guardrail.name": "no_homework",
                "guardrail.kind": "input",
                "guardrail.reason": "asks for homework",
            }
        }
    ]
