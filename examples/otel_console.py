"""Print a run's OpenTelemetry spans to the console.

The application owns the tracer provider: it sets one up (here with the SDK's
``ConsoleSpanExporter``) and the ``otel`` middleware sends its spans there. The model is
scripted, so this runs offline; swap in ``"openai:gpt-4.1-mini"`` to trace a real one.

    pip install ./plugins/otel opentelemetry-sdk
    python examples/otel_console.py
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

import plait
from plait.messages import Usage
from plait.testing import ai, call, scripted


@plait.tool
def get_weather(city: str) -> str:
    """Get today's weather for a city.

    Args:
        city: The city's name.
    """
    return f"{city}: sunny, 21 °C"


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)  # the application's choice; plait never does this

    model = scripted(
        ai("", call("get_weather", city="Paris"), usage=Usage(52, 14)),
        ai("It is sunny in Paris, 21 °C.", usage=Usage(88, 11)),
        name="demo-model",
    )
    agent = plait.create_agent(
        model, [get_weather], middleware=["otel"], name="weather", checkpointer="memory"
    )
    result = agent.invoke("What's the weather in Paris?", thread_id="demo-thread")
    print("answer:", result.text)
    provider.shutdown()


if __name__ == "__main__":
    main()
