"""End to end: an agent on Gemini with ``model_fallback`` to Claude, both loopback servers
answering with recorded traffic. Gemini answers the first turn (a thought part and signed
text), then is overloaded; Claude carries the thread on — thinking, calling a tool,
answering — and each API gets a thread it accepts: Claude never sees Gemini's thoughts or
signatures, Gemini never sees Claude's signed thinking, and the tool call and its result
reach both, paired by id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import recorded
from replay_server import ReplayServer, Reply

import plait
from plait_anthropic import AnthropicChatModel

plait_google = pytest.importorskip("plait_google")
pytest.importorskip("plait_model_fallback")

pytestmark = [recorded.needs(recorded.PROVIDERS), recorded.needs(recorded.GEMINI)]

KEY = "AIza" + "SyD-plaitTestKeyNotRealxxxxxxxxxxx"
GEMINI = recorded.interactions(recorded.GEMINI)
CLAUDE = recorded.interactions(recorded.PROVIDERS)
OVERLOADED = {
    "error": {
        "code": 503,
        "message": "The model is overloaded. Please try again later.",
        "status": "UNAVAILABLE",
    }
}
"""Gemini's error body (no recording holds a 5xx): what makes the fallback take over."""


@plait.tool
def get_user_country() -> str:
    """The user's country."""
    return "Mexico"


@pytest.fixture
def servers() -> Iterator[tuple[ReplayServer, ReplayServer]]:
    gemini, claude = ReplayServer(), ReplayServer()
    yield gemini, claude
    gemini.close()
    claude.close()


def serve(server: ReplayServer, item: dict[str, Any]) -> None:
    response = item["response"]
    server.reply(Reply(200, response["body"].encode("utf-8"), dict(response["headers"])))


def test_a_thread_moves_from_gemini_to_claude(
    servers: tuple[ReplayServer, ReplayServer],
) -> None:
    gemini, claude = servers
    serve(gemini, GEMINI["gem_thinking"])
    gemini.json(OVERLOADED, status=503)
    gemini.json(OVERLOADED, status=503)
    serve(claude, CLAUDE["ant_thinking_tool_use"])
    serve(claude, CLAUDE["ant_thinking_tool_roundtrip"])
    agent = plait.create_agent(
        model=plait_google.GoogleChatModel(
            "gemini-3-pro-preview", api_key=KEY, base_url=gemini.url
        ),
        tools=[get_user_country],
        middleware=[
            (
                "model_fallback",
                {
                    "models": [
                        AnthropicChatModel(
                            "claude-sonnet-4-0",
                            api_key="test-key",
                            base_url=claude.url,
                            thinking=CLAUDE["ant_thinking_tool_use"]["request"]["thinking"],
                        )
                    ]
                },
            )
        ],
        checkpointer="memory",
    )

    first = agent.invoke("How do I cross the street?", thread_id="t")
    gemini_turn = first.messages[-1]
    assert gemini_turn.response_metadata["provider"] == "google"
    thought, signed = gemini_turn.content
    assert thought["type"] == "thinking" and signed["thought_signature"]

    second = agent.invoke("What is the largest city in the user country?", thread_id="t")
    called, ran, answer = second.messages[-3:]
    assert called.response_metadata["provider"] == answer.response_metadata["provider"]
    assert answer.response_metadata["provider"] == "anthropic"
    assert (ran.type, ran.text) == ("tool", "Mexico")
    assert second.text.startswith("Based on the information that you're from Mexico")

    # Claude's first request: Gemini's answer as its visible text only — no thought, no
    # thoughtSignature (Claude takes thinking only with a signature it issued itself).
    asked, answered = (request.body for request in claude.requests)
    assert asked["messages"] == [
        {"role": "user", "content": "How do I cross the street?"},
        {"role": "assistant", "content": signed["text"]},
        {"role": "user", "content": "What is the largest city in the user country?"},
    ]
    for body in (asked, answered):
        # Thinking stays on: the first call starts a turn, the second continues Claude's
        # own tool-use turn, which starts with its signed thinking.
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 3000}
        wire = json.dumps(body)
        assert thought["thinking"][:60] not in wire
        assert signed["thought_signature"] not in wire
    # Its second: its own turn sent back exactly as the recorded client sent it (signed
    # thinking, text, tool_use), then the tool's result paired by id.
    recorded_turn = CLAUDE["ant_thinking_tool_roundtrip"]["request"]["messages"][1]
    claude_turn, result_turn = answered["messages"][3:]
    assert claude_turn == {"role": "assistant", "content": recorded_turn["content"]}
    call_id = recorded_turn["content"][-1]["id"]
    assert result_turn == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "Mexico"}],
    }

    # Gemini, tried first on every call, is sent its own thought and signature back, and
    # Claude's turn without Claude's signed thinking: its text and the call (with Google's
    # placeholder signature, as Gemini 3 requires on a call it did not write).
    assert len(gemini.requests) == 3
    retried = gemini.requests[1].body["contents"][1]
    assert retried == {
        "role": "model",
        "parts": [
            {"text": thought["thinking"], "thought": True},
            {"text": signed["text"], "thoughtSignature": signed["thought_signature"]},
        ],
    }
    last = gemini.requests[2].body["contents"]
    claude_text = recorded_turn["content"][1]["text"]
    assert last[3] == {
        "role": "model",
        "parts": [
            {"text": claude_text},
            {
                "functionCall": {"name": "get_user_country", "args": {}, "id": call_id},
                "thoughtSignature": "skip_thought_signature_validator",
            },
        ],
    }
    assert last[4] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": call_id,
                    "name": "get_user_country",
                    "response": {"output": "Mexico"},
                }
            }
        ],
    }
    assert recorded_turn["content"][0]["signature"] not in json.dumps(last)


@plait.tool
def pelican_name_generator() -> str:
    """A name for a pet pelican."""
    return "Percy"


def test_claude_thinking_finishes_a_tool_loop_gemini_began(
    servers: tuple[ReplayServer, ReplayServer],
) -> None:
    """Streamed: Gemini thinks and calls a tool, then is overloaded. Claude, with thinking
    on, is sent the tool-use turn without Gemini's thought and signature — and so with
    thinking off for this call: the API takes a tool-use turn being continued with thinking
    on only if it starts with Claude's own signed thinking, which this one cannot have."""
    gemini, claude = servers
    serve(gemini, GEMINI["gem_stream_json_array_thinking_tool"])
    gemini.json(OVERLOADED, status=503)
    serve(claude, CLAUDE["ant_stream_text"])
    thinking = {"type": "enabled", "budget_tokens": 1024}
    agent = plait.create_agent(
        model=plait_google.GoogleChatModel("gemini-2.5-flash", api_key=KEY, base_url=gemini.url),
        tools=[pelican_name_generator],
        middleware=[
            (
                "model_fallback",
                {
                    "models": [
                        {
                            "model": "anthropic:claude-haiku-4-5",
                            "api_key": "test-key",
                            "base_url": claude.url,
                            "thinking": thinking,
                        }
                    ]
                },
            )
        ],
        checkpointer="memory",
    )
    list(agent.stream("Two names for a pet pelican", mode="messages", thread_id="t"))
    _, began, ran, answer = agent.get_state("t")["messages"]
    assert began.response_metadata["provider"] == "google"
    (thought,) = began.content
    (call,) = began.tool_calls
    assert (ran.tool_call_id, ran.text) == (call.id, "Percy")
    assert answer.response_metadata["provider"] == "anthropic"
    assert answer.text == "Hello"

    (sent,) = claude.requests
    assert sent.body["thinking"] == {"type": "disabled"}
    assert sent.body["messages"] == [
        {"role": "user", "content": "Two names for a pet pelican"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Percy"}],
        },
    ]
    wire = json.dumps(sent.body)
    assert thought["thinking"][:40] not in wire
    assert began.response_metadata["thought_signatures"][call.id] not in wire
