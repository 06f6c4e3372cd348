"""``guardrails`` behind ``plait serve``: an HTTP client recording every byte of the
AG-UI and OpenAI-compatible streams never receives the text an output guardrail tripped
on, and does receive the sentences it passed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import plait

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))
plait_serve = pytest.importorskip("plait_serve")
from serve_helpers import Served, run_input  # noqa: E402

from plait_guardrails import GuardrailData, GuardrailsMiddleware  # noqa: E402

KEY = "guardrails-client-key-0123456789"
ANSWER = "Hello there. The weather is fine today. The launch code is 0000. Goodbye now."


def no_secrets(data: GuardrailData) -> str | None:
    return "reveals a secret" if "launch code" in data.text else None


@pytest.fixture
def served() -> Iterator[Served]:
    agent = plait.create_agent(
        plait.ScriptedChatModel([ANSWER] * 4),
        checkpointer="memory",
        name="guarded",
        middleware=[GuardrailsMiddleware(output=[no_secrets])],
    )
    server = Served(plait_serve.app(agent, keys=[KEY]))
    yield server
    server.stop()


def every_byte(served: Served, path: str, body: Any) -> bytes:
    """The whole response body, as the client received it, chunk by chunk."""
    seen = bytearray()
    with served.client(KEY) as client, client.stream("POST", path, json=body) as response:
        for piece in response.iter_bytes():
            seen.extend(piece)
    return bytes(seen)


def test_ag_ui_stream_never_carries_the_tripped_text(served: Served) -> None:
    seen = every_byte(served, "/ag-ui", run_input("t1", "r1", "Tell me everything."))
    assert b"launch" not in seen and b"0000" not in seen
    assert b"Hello" in seen and b"fine today." in seen  # passed sentences were streamed
    assert b"guardrail" in seen  # the run's failure names the guardrail


def test_openai_stream_never_carries_the_tripped_text(served: Served) -> None:
    body = {
        "model": "guarded",
        "messages": [{"role": "user", "content": "Tell me everything."}],
        "stream": True,
    }
    seen = every_byte(served, "/v1/chat/completions", body)
    assert b"launch" not in seen and b"0000" not in seen
    assert b"Hello" in seen
