"""Compat presets for the OpenAI-compatible servers users run locally (llama.cpp, vLLM,
Ollama, LM Studio): by name in ``compat=``, as model ids of their own (so agent files and
fallbacks given as ids reach them), and llama.cpp's ``json_object``-with-schema form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from replay_server import ReplayServer, openai_completion

import plait
from plait.agentfile import read_agent_file
from plait.errors import ConfigError
from plait.messages import AIMessage, HumanMessage, ToolCall
from plait.models import init_chat_model
from plait.models.openai import COMPAT_PRESETS, OpenAIChatModel

SCHEMA = {
    "title": "Answer",
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


@attrs.frozen
class Answer:
    city: str


def test_llama_cpp_preset_sends_json_object_with_schema(server: ReplayServer) -> None:
    server.json(openai_completion('{"city": "Oslo"}'))
    llm = OpenAIChatModel("qwen", base_url=server.url + "/v1", compat="llama.cpp")
    answer = llm.invoke(
        [
            HumanMessage("where?"),
            AIMessage("", tool_calls=[ToolCall("look", {}, "c1")]),
            plait.ToolMessage("north", tool_call_id="c1"),
        ],
        response_format=SCHEMA,
        max_tokens=50,
    )
    assert answer.text == '{"city": "Oslo"}'
    body = server.last.body
    assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert body["max_tokens"] == 50
    assert body["messages"][1]["content"] == ""  # llama.cpp rejects null content


@pytest.mark.parametrize(
    ("provider", "env", "preset"),
    [
        ("llamacpp", "LLAMACPP_BASE_URL", "llama.cpp"),
        ("vllm", "VLLM_BASE_URL", "vllm"),
        ("ollama", "OLLAMA_BASE_URL", "ollama"),
        ("lmstudio", "LMSTUDIO_BASE_URL", "lmstudio"),
    ],
)
def test_local_server_ids(
    provider: str, env: str, preset: str, server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key-never-sent-local")
    default = init_chat_model(f"{provider}:some-model")
    assert isinstance(default, OpenAIChatModel)
    assert default.base_url.startswith("http://127.0.0.1:")
    assert default.compat == COMPAT_PRESETS[preset]
    monkeypatch.setenv(env, server.url + "/v1")
    llm = init_chat_model(f"{provider}:some-model")
    server.json(openai_completion("hi"))
    assert llm.invoke([HumanMessage("hello")]).text == "hi"
    assert server.last.path == "/v1/chat/completions"
    assert "authorization" not in server.last.headers


def test_compat_mapping_starts_from_a_preset() -> None:
    llm = OpenAIChatModel(
        "m", base_url="http://127.0.0.1:1/v1", compat={"preset": "ollama", "stream_usage": False}
    )
    assert llm.compat == attrs.evolve(COMPAT_PRESETS["ollama"], stream_usage=False)


def test_unknown_preset_or_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown compat preset 'llamacpp'.*'llama.cpp'"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", compat="llamacpp")
    with pytest.raises(ConfigError, match=r"bad compat options"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", compat={"structured_output": "xml"})


def test_agent_file_model_settings_take_a_preset(server: ReplayServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(
        "[agent]\n"
        'model = "openai:qwen"\n'
        f'model_settings = {{ compat = "llama.cpp", base_url = "{server.url}/v1" }}\n',
        encoding="utf-8",
    )
    spec = read_agent_file(path)
    agent = spec.build(response_format=Answer)
    server.json(openai_completion('{"city": "Rome"}'))
    assert agent.invoke("where?").structured_response == Answer("Rome")
    assert server.last.body["response_format"]["type"] == "json_object"


def test_fallback_given_as_a_local_id(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("plait_model_fallback")
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.url + "/v1")
    server.json({"error": {"message": "down", "type": "server_error"}}, status=503)
    server.json(openai_completion('{"city": "Oslo"}'))
    primary = OpenAIChatModel("main", base_url=server.url + "/v1")
    agent = plait.create_agent(
        model=primary,
        middleware=[("model_fallback", {"models": ["llamacpp:qwen"]})],
        response_format=Answer,
    )
    result: Any = agent.invoke("where?")
    assert result.structured_response == Answer("Oslo")
    assert server.last.body["response_format"] == {
        "type": "json_object",
        "schema": server.requests[0].body["response_format"]["json_schema"]["schema"],
    }
