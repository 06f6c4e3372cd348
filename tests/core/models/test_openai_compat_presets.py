"""Compat presets for the OpenAI-compatible servers users run locally (llama.cpp, vLLM,
Ollama, LM Studio): by name in ``compat=``, as model ids of their own (so agent files and
fallbacks given as ids reach them), and llama.cpp's ``json_object``-with-schema form."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest
from replay_server import ReplayServer, captured, openai_completion

import plait
from plait.agentfile import read_agent_file
from plait.errors import ConfigError, ProviderError
from plait.messages import AIMessage, HumanMessage, ToolCall
from plait.models import init_chat_model
from plait.models.openai import COMPAT_PRESETS, LOCAL_SERVERS, OpenAIChatModel
from plait.testing import FakeSleeper

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
    wanted = r"option 'structured_output': expected one of 'json_schema', .*got 'xml'"
    with pytest.raises(ConfigError, match=r"^openai: compat: " + wanted):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", compat={"structured_output": "xml"})
    # each field is checked against its type, as an agent file's options are
    with pytest.raises(ConfigError, match=r"option 'stream_usage': expected a bool, got 'no'"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", compat={"stream_usage": "no"})


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


class LlamaCppPythonLike:
    """A loopback server answering as llama-cpp-python's does: ``tool_choice:
    "required"`` is a 500 ``internal_server_error`` whose message is the request's
    validation error (as its handler words one); anything else is a completion calling
    the first tool. 0.3.36 itself fails on an assertion instead, with an empty message
    (``required_500`` below): nothing in it says the request was at fault."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                bodies.append(body)
                if body.get("tool_choice") == "required":
                    status, reply = 500, LLAMA_CPP_PYTHON_500
                else:
                    name = body["tools"][0]["function"]["name"]
                    status, reply = 200, openai_completion(None, ("c1", name, {"city": "Oslo"}))
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


LLAMA_CPP_PYTHON_500 = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'tool_choice', \"literal['none','auto']\"), 'msg': \"Input should be 'none' or "
        "'auto'\", 'input': 'required'}",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


@pytest.fixture
def llama_cpp_python() -> Iterator[LlamaCppPythonLike]:
    server = LlamaCppPythonLike()
    yield server
    server.close()


def test_the_llamacpp_preset_never_sends_required_tool_choice(
    llama_cpp_python: LlamaCppPythonLike, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMACPP_BASE_URL", llama_cpp_python.url)
    llm = init_chat_model("llamacpp:qwen2.5-0.5b")
    weather = plait.tool(lambda city: city, name="weather", description="The weather.")
    clock = plait.tool(lambda city: city, name="clock", description="The time.")
    answer = llm.invoke(
        [HumanMessage("Weather in Oslo?")], tools=[weather, clock], tool_choice="required"
    )
    assert [call.name for call in answer.tool_calls] == ["weather"]
    assert llama_cpp_python.bodies[-1]["tool_choice"] == "auto"
    named = {"type": "function", "function": {"name": "weather"}}
    llm.invoke([HumanMessage("Weather?")], tools=[weather], tool_choice="weather")
    assert llama_cpp_python.bodies[-1]["tool_choice"] == named
    # One tool: "required" is that tool by name, which the server does force.
    llm.invoke([HumanMessage("Weather?")], tools=[weather], tool_choice="required")
    assert llama_cpp_python.bodies[-1]["tool_choice"] == named


def test_a_500_saying_the_request_was_invalid_is_not_retried(
    llama_cpp_python: LlamaCppPythonLike,
) -> None:
    pytest.importorskip("plait_model_retry")
    forced = OpenAIChatModel(
        "qwen",
        base_url=llama_cpp_python.url,
        compat={"preset": "llama.cpp", "tool_choice_required": True},
    )
    weather = plait.tool(lambda city: city, name="weather", description="The weather.")
    with pytest.raises(ProviderError) as caught:
        forced.invoke([HumanMessage("hi")], tools=[weather], tool_choice="required")
    assert (caught.value.status_code, caught.value.retryable) == (500, False)
    assert caught.value.error_type == "internal_server_error"

    @plait.wrap_model_call
    def must_call_a_tool(request: Any, handler: Any) -> Any:
        return handler(request.override(tool_choice="required"))

    sleeper = FakeSleeper()
    retry = ("model_retry", {"on_failure": "error", "sleep": sleeper})
    agent = plait.create_agent(forced, tools=[weather], middleware=[retry, must_call_a_tool])
    with pytest.raises(ProviderError, match="API error 500"):
        agent.invoke("hi")
    assert len(llama_cpp_python.bodies) == 2  # one call each: never sent again
    assert sleeper.delays == []


@pytest.mark.parametrize(
    ("status", "error", "retryable"),
    [
        (
            500,
            {"message": "Invalid request: unsupported tool_choice", "type": "server_error"},
            False,
        ),
        (500, {"message": "bad request: n_ctx exceeded", "type": "server_error"}, False),
        (500, {"message": "CUDA error: out of memory", "type": "server_error"}, True),
        (503, {"message": "Loading model", "type": "unavailable_error"}, True),
    ],
)
def test_5xx_retryable_unless_the_body_says_the_request_was_invalid(
    server: ReplayServer, status: int, error: dict[str, Any], retryable: bool
) -> None:
    server.json({"error": error}, status=status)
    llm = OpenAIChatModel("qwen", base_url=server.url + "/v1", compat="llama.cpp")
    with pytest.raises(ProviderError) as caught:
        llm.invoke([HumanMessage("hi")])
    assert caught.value.retryable is retryable


def test_an_unreachable_local_server_names_the_address_and_how_to_change_it(
    closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen live with no server running: "openai: could not connect to
    # http://127.0.0.1:8080/v1: [Errno 111] Connection refused", for a llamacpp: id.
    closed = f"http://127.0.0.1:{closed_port}/v1"
    local = attrs.evolve(LOCAL_SERVERS["llamacpp"], base_url=closed)
    monkeypatch.setitem(LOCAL_SERVERS, "llamacpp", local)
    monkeypatch.delenv("LLAMACPP_BASE_URL", raising=False)
    with pytest.raises(ProviderError) as caught:
        init_chat_model("llamacpp:qwen").invoke([HumanMessage("hi")])
    assert str(caught.value).startswith(
        f"openai: could not connect to {closed}, where llamacpp: models are sent unless "
        "LLAMACPP_BASE_URL names another address: "
    )
    monkeypatch.setenv("LLAMACPP_BASE_URL", closed)
    with pytest.raises(ProviderError) as caught:
        init_chat_model("llamacpp:qwen").invoke([HumanMessage("hi")])
    assert str(caught.value).startswith(
        f"openai: could not connect to {closed} (from LLAMACPP_BASE_URL): "
    )
    with pytest.raises(ProviderError) as caught:
        init_chat_model("llamacpp:qwen", base_url=closed).invoke([HumanMessage("hi")])
    assert str(caught.value).startswith(f"openai: could not connect to {closed}: ")


def test_llama_cpp_python_s_own_500_for_required_is_reported_with_its_body(
    server: ReplayServer,
) -> None:
    server.reply(captured("llama_cpp_python/required_500"))
    forced = OpenAIChatModel(
        "qwen",
        base_url=server.url + "/v1",
        compat={"preset": "llama.cpp", "tool_choice_required": True},
    )
    weather = plait.tool(lambda city: city, name="weather", description="The weather.")
    with pytest.raises(ProviderError) as caught:
        forced.invoke([HumanMessage("hi")], tools=[weather], tool_choice="required")
    assert server.last.body["tool_choice"] == "required"
    # An empty message: the body is shown whole, so the user sees what there is.
    assert str(caught.value) == (
        'openai API error 500 (internal_server_error): {"error":{"message":"","type":'
        '"internal_server_error","param":null,"code":null}} '
        "(request id 12655c1a41c24ad3a881b4a97b23ac61)"
    )
    assert caught.value.retryable is True
