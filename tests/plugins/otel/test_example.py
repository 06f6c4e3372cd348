"""examples/otel_console.py prints its run's spans with the SDK's console exporter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[3] / "examples" / "otel_console.py"


def test_the_console_example_prints_the_runs_spans() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.rstrip().endswith("answer: It is sunny in Paris, 21 °C.")
    decoder = json.JSONDecoder()
    text, spans, at = done.stdout, [], 0
    while (start := text.find("{", at)) != -1:
        span, at = decoder.raw_decode(text, start)
        spans.append(span)
    assert [s["name"] for s in spans] == [
        "chat demo-model",
        "execute_tool get_weather",
        "chat demo-model",
        "invoke_agent weather",
    ]
    run = spans[-1]
    assert run["kind"] == "SpanKind.INTERNAL"
    assert run["attributes"]["gen_ai.conversation.id"] == "demo-thread"
    assert run["resource"]["attributes"]["service.name"] == "weather-bot"
    assert {s["parent_id"] for s in spans[:3]} == {run["context"]["span_id"]}
