"""``gen_ai.provider.name`` is the conventions' well-known value where one applies ("If
one of them applies, then the respective value MUST be used"): a Gemini model is
``gcp.gemini``, or ``gcp.vertex_ai`` through Vertex AI, and the Responses API is
``openai``, on the run span, the ``chat`` span and the duration metric. Real providers
over loopback HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from replay_server import ReplayServer, Reply

import plait
from plait_google import GoogleChatModel
from plait_openai_responses import OpenAIResponsesModel

from .conftest import Telemetry

KEY = "AIza" + "SyE-plaitTestKeyNotRealzzzzzzzzzzz"

GEMINI_ANSWER = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
    ],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4},
    "modelVersion": "gemini-2.5-flash",
}
RESPONSES_ANSWER = {
    "id": "resp_1",
    "object": "response",
    "model": "gpt-5",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        }
    ],
    "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
}


@pytest.fixture
def server() -> Any:
    srv = ReplayServer()
    yield srv
    srv.close()


def provider_names(otel: Telemetry, model: Any) -> set[Any]:
    agent = plait.create_agent(model, middleware=[otel.middleware()])
    assert agent.invoke("hello").text == "hi"
    (run,) = otel.named("invoke_agent agent")
    (chat,) = [s for s in otel.spans() if s.name.startswith("chat ")]
    points = otel.points("gen_ai.client.operation.duration")
    return {
        run.attributes["gen_ai.provider.name"],
        chat.attributes["gen_ai.provider.name"],
        *(p.attributes["gen_ai.provider.name"] for p in points),
    }


def reply(server: ReplayServer, body: dict[str, Any]) -> None:
    server.reply(Reply(200, json.dumps(body).encode(), {"content-type": "application/json"}))


def test_gemini_is_gcp_gemini(otel: Telemetry, server: ReplayServer) -> None:
    reply(server, GEMINI_ANSWER)
    model = GoogleChatModel("gemini-2.5-flash", api_key=KEY, base_url=server.url)
    assert provider_names(otel, model) == {"gcp.gemini"}


def test_gemini_through_vertex_is_gcp_vertex_ai(otel: Telemetry, server: ReplayServer) -> None:
    reply(server, GEMINI_ANSWER)
    model = GoogleChatModel(
        "gemini-2.5-flash", api_key=KEY, base_url=server.url, vertex=True, project="p"
    )
    assert provider_names(otel, model) == {"gcp.vertex_ai"}


def test_the_responses_api_is_openai(otel: Telemetry, server: ReplayServer) -> None:
    reply(server, RESPONSES_ANSWER)
    model = OpenAIResponsesModel("gpt-5", api_key="test-key", base_url=server.url + "/v1")
    assert provider_names(otel, model) == {"openai"}
