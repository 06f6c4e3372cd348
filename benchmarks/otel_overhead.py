"""Tracing overhead: per-step cost of an agent with the ``otel`` middleware.

A step is one scripted model call plus one trivial tool call. Prints the cost per step of
a 200-step run with no middleware (the baseline), with ``otel`` and no OpenTelemetry SDK
configured (the API's no-op provider: what a user pays who installs the plugin and never
sets up tracing), and with ``otel`` exporting to the SDK's in-memory exporter (spans and
histograms recorded; with and without ``capture_content``), each as a ratio to the
baseline measured in this run, and the spans a step produces.

    python benchmarks/otel_overhead.py [--steps 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import plait
from plait.messages import AIMessage, ToolCall
from plait.models.scripted import ScriptedChatModel
from plait_otel import OtelMiddleware


@plait.tool
def noop(n: int) -> str:
    """Return n.

    Args:
        n: any number.
    """
    return str(n)


def script(steps: int) -> list[Any]:
    return [AIMessage("", tool_calls=[ToolCall("noop", {"n": i})]) for i in range(steps)] + ["ok"]


def per_step(middleware: list[Any], steps: int, repeat: int) -> float:
    """Best time per step over ``repeat`` runs, in microseconds."""
    best = float("inf")
    for _ in range(repeat):
        agent = plait.create_agent(ScriptedChatModel(script(steps)), [noop], middleware=middleware)
        start = time.perf_counter()
        agent.invoke("go", recursion_limit=steps + 5)
        best = min(best, time.perf_counter() - start)
    return best / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    sdk = {"tracer_provider": tracer_provider, "meter_provider": meter_provider}

    cases = {
        "no middleware (baseline)": [],
        "otel, no SDK configured": [OtelMiddleware()],
        "otel, SDK in-memory export": [OtelMiddleware(**sdk)],
        "otel, SDK, capture_content": [OtelMiddleware(capture_content=True, **sdk)],
    }
    per_step(cases["no middleware (baseline)"], args.steps, 1)  # warm up imports and caches
    results = {name: per_step(mw, args.steps, args.repeat) for name, mw in cases.items()}
    base = results["no middleware (baseline)"]
    print(f"{args.steps} steps (model call + tool call), best of {args.repeat}")
    for name, micros in results.items():
        print(f"  {name:30s} {micros:8.1f} us/step   x{micros / base:5.2f}")
    exporter.clear()
    per_step([OtelMiddleware(**sdk)], args.steps, 1)
    spans = len(exporter.get_finished_spans())
    print(
        f"  spans per step with the SDK: {spans / args.steps:.2f} ({spans} for {args.steps} steps)"
    )


if __name__ == "__main__":
    main()
