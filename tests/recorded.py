"""HTTP traffic recorded from the real OpenAI, Anthropic and Gemini APIs by other projects'
test suites, read where it lies: ``../shared/recorded/`` beside the checkout (its README
says how it is laid out). It is never copied into the project; a test module that needs
it is skipped where the folder is absent (``pytestmark = needs(FILE)``)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

RECORDED = Path(__file__).resolve().parents[1].parent / "shared" / "recorded"
PROVIDERS = "provider-traffic.json"
RESPONSES = "openai-responses-traffic.json"
GEMINI = "google-gemini-traffic.json"


def needs(file: str) -> pytest.MarkDecorator:
    path = RECORDED / file
    return pytest.mark.skipif(not path.exists(), reason=f"recorded traffic not found at {path}")


@functools.cache
def interactions(file: str) -> dict[str, Any]:
    """The file's interactions by name (``{}`` where the file is absent)."""
    path = RECORDED / file
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["interactions"]
    return data


def is_stream(item: dict[str, Any]) -> bool:
    return "event-stream" in item["response"]["headers"].get("content-type", "")


def sse_events(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of a recorded SSE body (``message`` where no event is named)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            events.append((name, "\n".join(data)))
    return events
