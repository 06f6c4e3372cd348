"""``otel``'s ``chat`` span records the settings a model was made with, as the provider
sends them: ``init_chat_model(..., temperature=0)`` and an agent file's ``model_settings``,
with a call's own settings taking precedence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replay_server import ReplayServer, claude_message

import plait
from plait.agentfile import load_agent
from plait.models import init_chat_model
from plait.types import ModelRequest
from plait_anthropic import AnthropicChatModel
from plait_google import GoogleChatModel

from .conftest import Telemetry

ANSWER = {
    "id": "chatcmpl-1",
    "model": "gpt-4.1-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


@pytest.fixture
def server() -> Any:
    srv = ReplayServer()
    yield srv
    srv.close()


def test_settings_given_to_the_model_are_request_attributes(otel: Telemetry, server: Any) -> None:
    server.json(ANSWER)
    model = init_chat_model(
        "openai:gpt-4.1-mini",
        base_url=server.url + "/v1",
        api_key="sk-loop-0000000",
        temperature=0,
        max_tokens=64,
        seed=7,
    )
    agent = plait.create_agent(model, middleware=[otel.middleware()])
    agent.invoke("hello")
    body = server.requests[0].body
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0, 64, 7)
    (chat,) = otel.named("chat gpt-4.1-mini")
    assert chat.attributes["gen_ai.request.temperature"] == 0
    assert chat.attributes["gen_ai.request.max_tokens"] == 64
    assert chat.attributes["gen_ai.request.seed"] == 7


def test_a_calls_own_setting_wins_over_the_models(otel: Telemetry, server: Any) -> None:
    server.json(ANSWER)
    model = init_chat_model(
        "openai:gpt-4.1-mini",
        base_url=server.url + "/v1",
        api_key="sk-loop-0000000",
        temperature=0.9,
    )

    class Cooler(plait.Middleware):
        def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
            return handler(request.override(model_settings={"temperature": 0.1}))

    agent = plait.create_agent(model, middleware=[otel.middleware(), Cooler()])
    agent.invoke("hello")
    assert server.requests[0].body["temperature"] == 0.1
    (chat,) = otel.named("chat gpt-4.1-mini")
    assert chat.attributes["gen_ai.request.temperature"] == 0.1


def test_an_agent_files_model_settings_reach_the_model(tmp_path: Path, server: Any) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(
        '[agent]\nmodel = "openai:gpt-4.1-mini"\n'
        f'model_settings = {{ base_url = "{server.url}/v1", api_key = "sk-loop-0000000", '
        "temperature = 0.2 }\n"
    )
    agent = load_agent(str(path))
    assert agent.model.settings["temperature"] == 0.2


def test_anthropic_and_gemini_spellings_are_request_attributes(
    otel: Telemetry, server: Any
) -> None:
    """Anthropic's max_tokens (kept by the model, sent on every call) and stop_sequences,
    Gemini's max_output_tokens, stop_sequences and the API's camelCase names: each is
    sent, so each is recorded."""
    server.json(claude_message("hi"))
    claude = AnthropicChatModel(
        "claude-sonnet-4-5",
        api_key="sk-ant-loop",
        base_url=server.url,
        max_tokens=300,
        stop_sequences=["END"],
    )
    plait.create_agent(claude, middleware=[otel.middleware()]).invoke("hello")
    body = server.requests[0].body
    assert (body["max_tokens"], body["stop_sequences"]) == (300, ["END"])
    (chat,) = otel.named("chat claude-sonnet-4-5")
    assert chat.attributes["gen_ai.request.max_tokens"] == 300
    assert chat.attributes["gen_ai.request.stop_sequences"] == ("END",)

    server.json(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
            ],
            "modelVersion": "gemini-2.5-flash",
        }
    )
    gemini = GoogleChatModel(
        "gemini-2.5-flash",
        api_key="AIza" + "SyE-plaitTestKeyNotRealzzzzzzzzzzz",
        base_url=server.url,
        max_output_tokens=50,
        stop_sequences=["STOP"],
        topP=0.5,
    )
    plait.create_agent(gemini, middleware=[otel.middleware()]).invoke("hello")
    config = server.requests[1].body["generationConfig"]
    assert (config["maxOutputTokens"], config["stopSequences"], config["topP"]) == (
        50,
        ["STOP"],
        0.5,
    )
    (chat,) = otel.named("chat gemini-2.5-flash")
    assert chat.attributes["gen_ai.request.max_tokens"] == 50
    assert chat.attributes["gen_ai.request.stop_sequences"] == ("STOP",)
    assert chat.attributes["gen_ai.request.top_p"] == 0.5
