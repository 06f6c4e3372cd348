"""The openai provider against a local server speaking the Chat Completions wire format."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, ContextOverflowError, ProviderError
from plait.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    assemble_chunks,
)
from plait.models import ModelProfile, init_chat_model
from plait.models.http import ChatRequest
from plait.models.openai import OpenAIChatModel

KEY = "sk-test-0123456789abcdefSECRET"

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def completion(
    content: str | None = "Hello!",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4.1-mini-2025-04-14",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage
        or {
            "prompt_tokens": 120,
            "completion_tokens": 8,
            "total_tokens": 128,
            "prompt_tokens_details": {"cached_tokens": 100},
        },
    }


def wire_call(id: str, name: str, args: str) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion.chunk",
        "model": "gpt-4.1-mini-2025-04-14",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


USAGE_CHUNK = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion.chunk",
    "model": "gpt-4.1-mini-2025-04-14",
    "choices": [],
    "usage": {
        "prompt_tokens": 120,
        "completion_tokens": 8,
        "total_tokens": 128,
        "prompt_tokens_details": {"cached_tokens": 100},
    },
}


def model(server: Any, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4.1-mini", api_key=KEY, base_url=server.url + "/v1", **kw)


# -- plain answers ---------------------------------------------------------------------------


def test_text_answer_with_system_prompt_sends_the_documented_body(server: Any) -> None:
    server.json(completion("Hello!"), headers={"x-request-id": "req_42"})
    answer = model(server, temperature=0).invoke(
        [HumanMessage("Hi there")], system_prompt="Be brief."
    )
    assert answer.text == "Hello!"
    assert answer.tool_calls == ()
    assert answer.usage == Usage(input_tokens=120, output_tokens=8, cache_read_tokens=100)
    assert answer.response_metadata == {
        "provider": "openai",
        "request_id": "req_42",
        "model": "gpt-4.1-mini-2025-04-14",
        "response_id": "chatcmpl-abc123",
        "system_fingerprint": "fp_1",
        "finish_reason": "stop",
    }
    sent = server.last
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body == {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi there"},
        ],
        "temperature": 0,
    }


def test_system_messages_in_the_list_keep_their_place(server: Any) -> None:
    server.json(completion("ok"))
    model(server).invoke(
        [SystemMessage("rules"), HumanMessage([{"type": "text", "text": "hi"}])],
        system_prompt="first",
    )
    assert server.last.body["messages"] == [
        {"role": "system", "content": "first"},
        {"role": "system", "content": "rules"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ]


def test_multi_turn_with_several_tool_calls_and_results(server: Any, make_tool: Any) -> None:
    weather = make_tool("get_weather", "Current weather in a city.", WEATHER)
    clock = make_tool("get_time", "Local time.", WEATHER)
    server.json(completion("Sunny in Paris, 14:00 in Rome."))
    history = [
        HumanMessage("Weather in Paris and time in Rome?"),
        AIMessage(
            "Let me check.",
            tool_calls=[
                ToolCall("get_weather", {"city": "Paris"}, "call_1"),
                ToolCall("get_time", {"city": "Rome"}, "call_2"),
            ],
        ),
        ToolMessage("sunny", tool_call_id="call_1", name="get_weather"),
        ToolMessage("14:00", tool_call_id="call_2", name="get_time", status="error"),
        AIMessage("", tool_calls=[ToolCall("get_time", {}, "call_3")]),
        ToolMessage("15:00", tool_call_id="call_3"),
    ]
    answer = model(server).invoke(history, tools=[weather, clock], tool_choice="auto")
    assert answer.text == "Sunny in Paris, 14:00 in Rome."
    assert server.last.body == {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "user", "content": "Weather in Paris and time in Rome?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    wire_call("call_1", "get_weather", '{"city": "Paris"}'),
                    wire_call("call_2", "get_time", '{"city": "Rome"}'),
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "14:00"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [wire_call("call_3", "get_time", "{}")],
            },
            {"role": "tool", "tool_call_id": "call_3", "content": "15:00"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": WEATHER,
                    "description": "Current weather in a city.",
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "parameters": WEATHER,
                    "description": "Local time.",
                },
            },
        ],
        "tool_choice": "auto",
    }


def test_tool_calls_in_the_answer_are_parsed(server: Any, make_tool: Any) -> None:
    server.json(
        completion(
            None,
            tool_calls=[
                wire_call("call_a", "get_weather", '{"city": "Oslo"}'),
                wire_call("call_b", "get_weather", '{"city": '),
            ],
            finish="tool_calls",
        )
    )
    answer = model(server).invoke([HumanMessage("?")], tools=[make_tool("get_weather")])
    assert answer.text == ""
    first, second = answer.tool_calls
    assert first == ToolCall("get_weather", {"city": "Oslo"}, "call_a")
    assert second.id == "call_b" and second.args == {}
    assert second.error is not None and "not valid JSON" in second.error
    assert answer.response_metadata["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("any", "required"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_tool_choice(server: Any, make_tool: Any, choice: str, expected: Any) -> None:
    server.json(completion("ok"))
    model(server).invoke([HumanMessage("?")], tools=[make_tool("get_weather")], tool_choice=choice)
    assert server.last.body["tool_choice"] == expected


def test_tool_choice_naming_no_tool_is_a_config_error(server: Any, make_tool: Any) -> None:
    with pytest.raises(ConfigError) as info:
        model(server).invoke([HumanMessage("?")], tools=[make_tool("a")], tool_choice="nope")
    assert str(info.value) == (
        "openai: tool_choice: expected 'auto', 'none', 'required' or the name of a tool "
        "(a), got 'nope'"
    )
    assert server.requests == []


@pytest.mark.parametrize("choice", ["required", "any", "get_weather"])
def test_a_tool_choice_needing_a_tool_without_tools_is_a_config_error(
    server: Any, choice: str
) -> None:
    """Never dropped unsent: refused as a name no offered tool has is."""
    with pytest.raises(ConfigError) as info:
        model(server).invoke([HumanMessage("?")], tool_choice=choice)
    assert str(info.value) == (
        f"openai: tool_choice: expected 'auto' or 'none' (no tool is offered), got {choice!r}"
    )
    assert server.requests == []


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_auto_or_none_without_tools_sends_no_tool_choice(server: Any, choice: str) -> None:
    server.json(completion("ok"))
    model(server).invoke([HumanMessage("?")], tool_choice=choice)
    assert "tool_choice" not in server.last.body and "tools" not in server.last.body


def test_the_models_own_tool_choice_is_read_as_each_calls(server: Any, make_tool: Any) -> None:
    """``OpenAIChatModel(..., tool_choice="get_weather")``: sent in the wire form a call's
    would be (not the raw name, which the API refuses); a call's own wins."""
    forced = model(server, tool_choice="get_weather")
    server.json(completion("ok"))
    forced.invoke([HumanMessage("?")], tools=[make_tool("get_weather")])
    assert server.last.body["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_weather"},
    }
    server.json(completion("ok"))
    forced.invoke([HumanMessage("?")], tools=[make_tool("get_weather")], tool_choice="none")
    assert server.last.body["tool_choice"] == "none"
    with pytest.raises(ConfigError, match=r"\(no tool is offered\), got 'get_weather'"):
        forced.invoke([HumanMessage("?")])


def test_a_hook_forcing_a_tool_on_an_agent_without_tools_fails_the_call(server: Any) -> None:
    """A ``wrap_model_call`` hook's ``tool_choice`` is the call's: refused on the call,
    as on an agent with tools, not dropped."""

    @plait.wrap_model_call
    def force(request: Any, handler: Any) -> Any:
        return handler(request.override(tool_choice="required"))

    agent = plait.create_agent(model(server), middleware=[force])
    with pytest.raises(ConfigError) as info:
        agent.invoke("hi")
    assert str(info.value) == (
        "openai: tool_choice: expected 'auto' or 'none' (no tool is offered), got 'required'"
    )
    assert server.requests == []


def test_compat_switches_for_llama_cpp_style_servers(server: Any, make_tool: Any) -> None:
    server.json(completion("ok"))
    llm = model(server, compat={"assistant_null_content": False, "tool_choice_required": False})
    llm.invoke(
        [HumanMessage("?"), AIMessage("", tool_calls=[ToolCall("a", {}, "c1")])],
        tools=[make_tool("a"), make_tool("b")],
        tool_choice="required",
    )
    body = server.last.body
    assert body["tool_choice"] == "auto"
    assert body["messages"][1]["content"] == ""
    server.json(completion("ok"))
    llm.invoke([HumanMessage("?")], tools=[make_tool("a")], tool_choice="required")
    assert server.last.body["tool_choice"] == {"type": "function", "function": {"name": "a"}}
    with pytest.raises(ConfigError, match="compat: unknown option 'nonsense'; valid options: "):
        model(server, compat={"nonsense": True})
    with pytest.raises(ConfigError, match=r"unknown option 'strict_tool' \(did you mean 'strict"):
        model(server, compat={"strict_tool": True})


def test_response_format_is_a_json_schema(server: Any) -> None:
    schema = {
        "title": "Weather report",
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
        "required": ["city", "temp"],
        "additionalProperties": False,
    }
    server.json(completion('{"city": "Paris", "temp": 21}'))
    answer = model(server).invoke([HumanMessage("?")], response_format=schema)
    assert json.loads(answer.text) == {"city": "Paris", "temp": 21}
    assert server.last.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather_report", "schema": schema, "strict": True},
    }
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    server.json(completion("{}"))
    model(server).invoke([HumanMessage("?")], response_format=loose)
    assert server.last.body["response_format"]["json_schema"] == {
        "name": "response",
        "schema": loose,
        "strict": False,
    }


def test_settings_and_provider_options_go_into_the_body(server: Any) -> None:
    server.json(completion("ok"))
    llm = model(server, temperature=0.2, top_p=0.9)
    llm.invoke(
        [HumanMessage("?")],
        provider_options={"openai": {"seed": 7, "user": "u1"}, "anthropic": {"x": 1}},
        max_tokens=50,
        temperature=0.5,
        stop=["END"],
    )
    body = server.last.body
    assert body["temperature"] == 0.5
    assert body["top_p"] == 0.9
    assert body["max_tokens"] == 50
    assert body["stop"] == ["END"]
    assert body["seed"] == 7 and body["user"] == "u1"
    assert "x" not in body


def test_max_tokens_is_max_completion_tokens_on_the_official_api() -> None:
    llm = OpenAIChatModel("o3", api_key=KEY)
    call = llm._prepare(ChatRequest([HumanMessage("?")], settings={"max_tokens": 10}))
    assert call.url == "https://api.openai.com/v1/chat/completions"
    assert call.body["max_completion_tokens"] == 10 and "max_tokens" not in call.body


def test_tool_provider_options_other_providers_ignored(server: Any, make_tool: Any) -> None:
    tool = make_tool(
        "a",
        "d",
        WEATHER,
        {"openai": {"strict": True}, "anthropic": {"cache_control": {"type": "ephemeral"}}},
    )
    server.json(completion("ok"))
    model(server).invoke([HumanMessage("?")], tools=[tool])
    assert server.last.body["tools"] == [
        {
            "type": "function",
            "function": {"name": "a", "parameters": WEATHER, "description": "d", "strict": True},
        }
    ]


# -- streaming -------------------------------------------------------------------------------


TOOL_STREAM = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Checking "}),
    chunk({"content": "Paris é 🌧"}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Paris"}'}}]}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"city": "Rome"}'},
                }
            ]
        }
    ),
    chunk({}, finish="tool_calls"),
    USAGE_CHUNK,
]

TOOL_ANSWER = completion(
    "Checking Paris é 🌧",
    tool_calls=[
        wire_call("call_1", "get_weather", '{"city": "Paris"}'),
        wire_call("call_2", "get_time", '{"city": "Rome"}'),
    ],
    finish="tool_calls",
)


def same_message(a: AIMessage, b: AIMessage) -> None:
    assert (a.content, a.tool_calls, a.usage, a.response_metadata) == (
        b.content,
        b.tool_calls,
        b.usage,
        b.response_metadata,
    )


@pytest.mark.parametrize("split", [1, 3, 7, 64])
def test_stream_assembles_to_what_invoke_returns(server: Any, make_tool: Any, split: int) -> None:
    tools = [make_tool("get_weather"), make_tool("get_time")]
    llm = model(server)
    server.openai_stream(TOOL_STREAM, split=split, headers={"x-request-id": "req_s"})
    chunks = list(llm.stream([HumanMessage("?")], tools=tools))
    assert [c.content for c in chunks if c.content] == ["Checking ", "Paris é 🌧"]
    streamed = assemble_chunks(chunks)
    assert streamed.id == chunks[0].id
    body = server.last.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    server.json(TOOL_ANSWER, headers={"x-request-id": "req_s"})
    same_message(streamed, llm.invoke([HumanMessage("?")], tools=tools))
    assert streamed.tool_calls == (
        ToolCall("get_weather", {"city": "Paris"}, "call_1"),
        ToolCall("get_time", {"city": "Rome"}, "call_2"),
    )
    assert streamed.usage == Usage(120, 8, 100, 0)
    assert streamed.response_metadata["request_id"] == "req_s"
    assert streamed.response_metadata["finish_reason"] == "tool_calls"


def test_astream_and_ainvoke_use_the_async_client(server: Any, make_tool: Any) -> None:
    tools = [make_tool("get_weather"), make_tool("get_time")]
    llm = model(server)

    async def run() -> tuple[AIMessage, AIMessage]:
        server.openai_stream(TOOL_STREAM, split=5)
        streamed = assemble_chunks([c async for c in llm.astream([HumanMessage("?")], tools=tools)])
        server.json(TOOL_ANSWER)
        answer = await llm.ainvoke([HumanMessage("?")], tools=tools)
        await llm.aclose()
        return streamed, answer

    streamed, answer = asyncio.run(run())
    same_message(streamed, answer)
    assert answer.tool_calls[0].args == {"city": "Paris"}


def test_stream_without_done_but_finished_is_complete(server: Any) -> None:
    server.openai_stream([chunk({"content": "hi"}), chunk({}, finish="stop")], done=False)
    message = assemble_chunks(model(server).stream([HumanMessage("?")]))
    assert message.text == "hi"
    assert message.response_metadata["finish_reason"] == "stop"


def test_a_server_that_ignores_stream_gets_one_chunk(server: Any) -> None:
    server.json(completion("whole"))
    chunks = list(model(server).stream([HumanMessage("?")]))
    assert len(chunks) == 1 and chunks[0].content == "whole"


# -- errors ----------------------------------------------------------------------------------


def error_body(message: str, type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def test_429_carries_retry_after_and_is_retryable(server: Any) -> None:
    server.json(
        error_body("Rate limit reached", "requests", "rate_limit_exceeded"),
        status=429,
        headers={"retry-after": "7", "x-request-id": "req_rl"},
    )
    with pytest.raises(ProviderError) as info:
        model(server).invoke([HumanMessage("?")])
    err = info.value
    assert type(err) is ProviderError
    assert (err.status_code, err.retry_after, err.retryable) == (429, 7.0, True)
    assert (err.provider, err.error_type) == ("openai", "rate_limit_exceeded")
    assert "Rate limit reached" in str(err) and "req_rl" in str(err)


def test_retry_after_ms_wins(server: Any) -> None:
    server.json(
        error_body("slow down", "requests"),
        status=429,
        headers={"retry-after": "7", "retry-after-ms": "1500"},
    )
    with pytest.raises(ProviderError) as info:
        model(server).invoke([HumanMessage("?")])
    assert info.value.retry_after == 1.5


def test_400_is_not_retryable(server: Any) -> None:
    server.json(error_body("Invalid value for 'temperature'", "invalid_request_error"), 400)
    with pytest.raises(ProviderError) as info:
        model(server).invoke([HumanMessage("?")])
    err = info.value
    assert (err.status_code, err.retryable, err.error_type) == (400, False, "invalid_request_error")
    assert err.message == (
        "openai API error 400 (invalid_request_error): Invalid value for 'temperature'"
    )


def test_401_never_shows_the_key(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    masked = KEY[:8] + "*" * 10 + KEY[-4:]
    server.json(
        error_body(
            f"Incorrect API key provided: {masked}. Also {KEY}.",
            "invalid_request_error",
            "invalid_api_key",
        ),
        status=401,
    )
    llm = model(server)
    with pytest.raises(ProviderError) as info:
        llm.invoke([HumanMessage("?")])
    err = info.value
    assert (err.status_code, err.retryable, err.error_type) == (401, False, "invalid_api_key")
    assert "Incorrect API key provided" in str(err)
    for text in (str(err), repr(err), repr(llm), caplog.text, repr(vars(llm))):
        assert KEY not in text
        assert KEY[-4:] not in text


def test_500_is_retryable(server: Any) -> None:
    server.raw(b"upstream exploded", status=502, content_type="text/plain")
    with pytest.raises(ProviderError) as info:
        model(server).invoke([HumanMessage("?")])
    assert (info.value.status_code, info.value.retryable) == (502, True)
    assert "upstream exploded" in str(info.value)


def test_context_overflow(server: Any) -> None:
    server.json(
        error_body(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130000 tokens.",
            "invalid_request_error",
            "context_length_exceeded",
        ),
        status=400,
    )
    with pytest.raises(ContextOverflowError) as info:
        model(server).invoke([HumanMessage("?")])
    assert info.value.error_type == "context_length_exceeded"
    assert info.value.retryable is False


def test_context_overflow_from_a_compatible_server_in_a_stream(server: Any) -> None:
    server.json(
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size",
                "type": "exceed_context_size_error",
            }
        },
        status=400,
    )
    with pytest.raises(ContextOverflowError):
        list(model(server).stream([HumanMessage("?")]))


def test_timeout(server: Any) -> None:
    release = server.hold()
    with pytest.raises(ProviderError) as info:
        model(server, timeout=0.2).invoke([HumanMessage("?")])
    release.set()
    err = info.value
    assert (err.error_type, err.retryable, err.status_code) == ("timeout", True, None)
    assert "timed out after 0.2s" in str(err)


def test_connection_refused(closed_port: int) -> None:
    llm = OpenAIChatModel("gpt-4.1", api_key=KEY, base_url=f"http://127.0.0.1:{closed_port}/v1")
    with pytest.raises(ProviderError) as info:
        llm.invoke([HumanMessage("?")])
    assert (info.value.error_type, info.value.retryable) == ("connection_error", True)
    assert f"127.0.0.1:{closed_port}" in str(info.value)
    with pytest.raises(ProviderError, match="could not connect"):
        asyncio.run(llm.ainvoke([HumanMessage("?")]))


def test_malformed_json_body(server: Any) -> None:
    server.raw(b'{"id": "chatcmpl-1", "choices": [')
    with pytest.raises(ProviderError) as info:
        model(server).invoke([HumanMessage("?")])
    assert (info.value.error_type, info.value.retryable) == ("invalid_response", True)
    assert "not JSON" in str(info.value)
    server.json({"id": "x", "choices": []})
    with pytest.raises(ProviderError, match="unexpected response shape"):
        model(server).invoke([HumanMessage("?")])


def test_stream_cut_mid_way(server: Any) -> None:
    server.openai_stream(TOOL_STREAM[:4], done=False, cut=True)
    received = []
    with pytest.raises(ProviderError) as info:
        for piece in model(server).stream([HumanMessage("?")]):
            received.append(piece)
    assert "".join(c.content for c in received) == "Checking Paris é 🌧"
    assert (info.value.error_type, info.value.retryable) == ("stream_interrupted", True)


def test_stream_ending_without_terminal_event(server: Any) -> None:
    server.openai_stream([chunk({"content": "half"})], done=False)
    with pytest.raises(ProviderError, match="ended before the answer was complete"):
        list(model(server).stream([HumanMessage("?")]))


def test_async_stream_cut_mid_way(server: Any) -> None:
    server.openai_stream(TOOL_STREAM[:3], done=False, cut=True, split=4)

    async def run() -> None:
        async for _ in model(server).astream([HumanMessage("?")]):
            pass

    with pytest.raises(ProviderError) as info:
        asyncio.run(run())
    assert info.value.error_type == "stream_interrupted"


def test_error_inside_a_stream(server: Any) -> None:
    server.openai_stream(
        [chunk({"content": "a"}), {"error": {"message": "overloaded", "type": "server_error"}}],
        done=False,
    )
    with pytest.raises(ProviderError) as info:
        list(model(server).stream([HumanMessage("?")]))
    assert (info.value.error_type, info.value.retryable) == ("server_error", True)
    assert "overloaded" in str(info.value)


def test_stream_status_error_with_retry_after_date(server: Any) -> None:
    server.json(
        error_body("busy", "server_error"),
        status=503,
        headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
    )
    with pytest.raises(ProviderError) as info:
        list(model(server).stream([HumanMessage("?")]))
    assert info.value.status_code == 503 and info.value.retry_after == 0.0


# -- configuration ---------------------------------------------------------------------------


def test_env_vars_give_key_and_base_url(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/compat/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.json(completion("from env"))
    llm = OpenAIChatModel("local-model")
    assert llm.invoke([HumanMessage("?")]).text == "from env"
    assert server.last.path == "/compat/v1/chat/completions"
    assert server.last.headers["authorization"] == f"Bearer {KEY}"
    assert llm.profile is None


def test_a_local_server_needs_no_key(server: Any) -> None:
    server.json(completion("ok"))
    OpenAIChatModel("qwen", base_url=server.url).invoke([HumanMessage("?")])
    assert "authorization" not in server.last.headers


def test_the_official_api_without_a_key_fails_early() -> None:
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4.1")


def test_init_chat_model_resolves_the_entry_point(server: Any) -> None:
    llm = init_chat_model("openai:gpt-4.1-mini", base_url=server.url + "/v1", api_key=KEY)
    assert isinstance(llm, OpenAIChatModel)
    assert llm.provider == "openai" and llm.model_name == "gpt-4.1-mini"
    assert llm.profile == ModelProfile(max_input_tokens=1_047_576, max_output_tokens=32_768)
    server.json(completion("ok"))
    assert llm.invoke([HumanMessage("?")]).text == "ok"
    llm.close()
    server.json(completion("again"))
    assert llm.invoke([HumanMessage("?")]).text == "again"


def test_profile_override() -> None:
    known = OpenAIChatModel("gpt-4o-2024-08-06", api_key=KEY)
    assert known.profile is not None and known.profile.max_input_tokens == 128_000
    partial = OpenAIChatModel("gpt-4o", api_key=KEY, profile={"max_input_tokens": 50_000})
    assert partial.profile == ModelProfile(max_input_tokens=50_000, max_output_tokens=16_384)
    whole = ModelProfile(max_input_tokens=4096)
    assert OpenAIChatModel("mine", api_key=KEY, profile=whole).profile is whole
    with pytest.raises(ConfigError, match="unknown profile field"):
        OpenAIChatModel("gpt-4o", api_key=KEY, profile={"max_input": 1})


def test_other_providers_text_marks_are_dropped_and_its_own_keys_kept(server: Any) -> None:
    # The marks are what installed provider plugins declare (plait.text_marks: Anthropic's
    # cache_control and citations, Gemini's thought_signature), read from their metadata.
    pytest.importorskip("plait_anthropic")
    pytest.importorskip("plait_google")
    server.json(completion("ok"))
    block = {
        "type": "text",
        "text": "Summarize this.",
        "cache_control": {"type": "ephemeral"},
        "citations": [{"url": "https://example.org"}],
        "thought_signature": "c2ln",
        "prompt_cache_breakpoint": True,
    }
    model(server).invoke([HumanMessage([block])])
    assert server.last.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Summarize this.", "prompt_cache_breakpoint": True}
            ],
        }
    ]
