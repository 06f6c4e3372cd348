"""What the Gemini provider sends and how it is set up: the key and where it goes, the
Gemini API and Vertex AI paths, settings, tools, tool choice, structured output, content
blocks — and the typed errors of statuses no recording holds (429, 5xx), in the error
shape Google documents."""

from __future__ import annotations

import json
from typing import Any

import pytest
from replay_server import ReplayServer

import plait
from plait.errors import ConfigError, ContextOverflowError, ProviderError
from plait.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    assemble_chunks,
)
from plait.models import init_chat_model
from plait.testing import FakeSleeper
from plait_google import THOUGHT_SIGNATURES, GoogleChatModel
from plait_model_retry import ModelRetryMiddleware

KEY = "AIza" + "SyB-plaitTestKeyNotRealyyyyyyyyyyy"


def answer(*parts: dict[str, Any], finish: str = "STOP") -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": list(parts)}, "finishReason": finish}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
        "modelVersion": "gemini-2.5-flash",
    }


def model(server: ReplayServer, **settings: Any) -> GoogleChatModel:
    return GoogleChatModel("gemini-2.5-flash", api_key=KEY, base_url=server.url, **settings)


def sent(server: ReplayServer, *messages: Any, **options: Any) -> dict[str, Any]:
    server.json(answer({"text": "ok"}))
    settings = options.pop("settings", {})
    model(server, **settings).invoke(list(messages) or [HumanMessage("hi")], **options)
    body: dict[str, Any] = server.last.body
    return body


# -- setup --------------------------------------------------------------------------------


def test_the_id_names_the_plugin_entry_point(server: ReplayServer) -> None:
    llm = init_chat_model("google:models/gemini-2.5-flash", base_url=server.url, api_key=KEY)
    assert isinstance(llm, GoogleChatModel) and llm.model_name == "gemini-2.5-flash"
    assert llm.provider == "google"
    assert KEY not in repr(llm) and KEY not in repr(vars(llm))


def test_google_api_key_wins_over_gemini_api_key(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    server.json(answer({"text": "ok"}))
    GoogleChatModel("gemini-2.5-flash", base_url=server.url).invoke([HumanMessage("hi")])
    assert server.last.headers["x-goog-api-key"] == "gemini-key"
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    server.json(answer({"text": "ok"}))
    GoogleChatModel("gemini-2.5-flash", base_url=server.url).invoke([HumanMessage("hi")])
    assert server.last.headers["x-goog-api-key"] == "google-key"
    assert "key=" not in server.last.path


def test_no_key_for_google_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        GoogleChatModel("gemini-2.5-flash")
    with pytest.raises(ConfigError, match="no API key"):
        plait.create_agent(model="google:gemini-2.5-flash")


def test_a_keyless_server_from_the_environment(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url + "/")
    server.json(answer({"text": "ok"}))
    GoogleChatModel("gemini-2.5-flash", api_version="v1").invoke([HumanMessage("hi")])
    assert server.last.path == "/v1/models/gemini-2.5-flash:generateContent"
    assert "x-goog-api-key" not in server.last.headers


def test_vertex_paths() -> None:
    regional = GoogleChatModel(
        "gemini-2.5-flash", api_key=KEY, vertex=True, project="p", location="europe-west4"
    )
    assert regional.model_url("generateContent") == (
        "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
        "europe-west4/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    global_ = GoogleChatModel(
        "gemini-2.5-flash",
        vertex=True,
        project="p",
        headers={"Authorization": "Bearer token"},
        api_version="v1",
    )
    assert global_.model_url("generateContent") == (
        "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google/"
        "models/gemini-2.5-flash:generateContent"
    )
    express = GoogleChatModel("gemini-2.5-flash", api_key=KEY, vertex=True)
    assert express.model_url("streamGenerateContent") == (
        "https://aiplatform.googleapis.com/v1beta1/publishers/google/models/"
        "gemini-2.5-flash:streamGenerateContent"
    )
    with pytest.raises(ConfigError, match="Vertex AI needs credentials"):
        GoogleChatModel("gemini-2.5-flash", vertex=True, project="p")


def test_vertex_project_and_location_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    llm = GoogleChatModel("gemini-2.5-pro", api_key=KEY, vertex=True)
    assert llm.model_url("generateContent").startswith(
        "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/env-project/"
        "locations/us-central1/"
    )


def test_profiles() -> None:
    llm = GoogleChatModel("gemini-2.5-flash", api_key=KEY)
    assert llm.profile == plait.ModelProfile(max_input_tokens=1_048_576, max_output_tokens=65_536)
    preview = GoogleChatModel("gemini-2.5-flash-preview-09-2025", api_key=KEY)
    assert preview.profile == llm.profile
    lite = GoogleChatModel("gemini-2.5-flash-lite", api_key=KEY, profile={"max_input_tokens": 1000})
    assert lite.profile == plait.ModelProfile(max_input_tokens=1000, max_output_tokens=65_536)
    assert GoogleChatModel("gemma-3-27b-it", api_key=KEY).profile is None


# -- settings and options --------------------------------------------------------------------


def test_settings_go_into_generation_config(server: ReplayServer) -> None:
    body = sent(
        server,
        settings={"temperature": 0, "max_tokens": 100, "safety_settings": [{"category": "X"}]},
        stop="END",
        top_p=0.5,
        thinkingConfig={"thinkingBudget": 0},
        cached_content="cachedContents/abc",
    )
    assert body["generationConfig"] == {
        "temperature": 0,
        "maxOutputTokens": 100,
        "stopSequences": ["END"],
        "topP": 0.5,
        "thinkingConfig": {"thinkingBudget": 0},
    }
    assert body["safetySettings"] == [{"category": "X"}]
    assert body["cachedContent"] == "cachedContents/abc"


def test_bad_settings_fail_when_the_agent_is_built() -> None:
    with pytest.raises(ConfigError, match=r"google: unknown setting\(s\) 'temprature'"):
        plait.create_agent(
            model=init_chat_model("google:gemini-2.5-flash", api_key=KEY, temprature=0)
        )
    with pytest.raises(ConfigError, match="candidate_count=2 is not supported"):
        GoogleChatModel("gemini-2.5-flash", api_key=KEY, candidate_count=2)
    with pytest.raises(ConfigError) as info:
        GoogleChatModel("gemini-2.5-flash", api_key=KEY, builtin_tools={"googleSearch": {}})
    assert str(info.value) == (
        "google: builtin_tools: expected a list of Gemini tools such as [{'googleSearch': {}}], "
        "got {'googleSearch': {}}"
    )
    with pytest.raises(ConfigError) as info:
        GoogleChatModel("gemini-2.5-flash", api_key=KEY, vertex="yes")  # type: ignore[arg-type]
    assert str(info.value) == "google: vertex: expected a bool, got 'yes'"


def tool(name: str, **options: Any) -> plait.Tool:
    return plait.Tool(
        name,
        f"The {name} tool.",
        {"type": "object", "properties": {"q": {"type": "string"}}},
        provider_options=options,
    )


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        (None, None),
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ("any", {"mode": "ANY"}),
        ("lookup", {"mode": "ANY", "allowedFunctionNames": ["lookup"]}),
    ],
)
def test_tools_and_tool_choice(
    server: ReplayServer, choice: str | None, config: dict[str, Any] | None
) -> None:
    body = sent(server, tools=[tool("lookup"), tool("other")], tool_choice=choice)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": name,
                    "description": f"The {name} tool.",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"q": {"type": "string"}},
                    },
                }
                for name in ("lookup", "other")
            ]
        }
    ]
    assert body.get("toolConfig") == (None if config is None else {"functionCallingConfig": config})


def test_a_tool_choice_naming_no_tool_is_a_config_error(server: ReplayServer) -> None:
    with pytest.raises(ConfigError) as info:
        model(server).invoke([HumanMessage("hi")], tools=[tool("lookup")], tool_choice="nope")
    assert str(info.value) == (
        "google: tool_choice: expected 'auto', 'none', 'required' or the name of a tool "
        "(lookup), got 'nope'"
    )
    assert server.requests == []


def test_builtin_tools(server: ReplayServer) -> None:
    search = plait.Tool(
        "google_search", provider_options={"google": {"builtin": {"googleSearch": {}}}}
    )
    body = sent(
        server,
        tools=[tool("lookup"), search],
        tool_choice="required",
        settings={"builtin_tools": [{"codeExecution": {}}]},
        provider_options={"google": {"tools": [{"urlContext": {}}]}, "openai": {"seed": 1}},
    )
    assert [list(entry) for entry in body["tools"]] == [
        ["functionDeclarations"],
        ["googleSearch"],
        ["codeExecution"],
        ["urlContext"],
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert "seed" not in json.dumps(body)


def test_provider_options_merge_into_the_body(server: ReplayServer) -> None:
    body = sent(
        server,
        settings={"temperature": 1},
        provider_options={
            "google": {
                "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
                "labels": {"team": "a"},
            }
        },
    )
    assert body["generationConfig"] == {
        "temperature": 1,
        "thinkingConfig": {"includeThoughts": True},
    }
    assert body["labels"] == {"team": "a"}


def test_response_format_is_native_structured_output(server: ReplayServer) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    body = sent(server, response_format=schema)
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": schema,
    }


def test_structured_output_through_an_agent(server: ReplayServer) -> None:
    import attrs

    @attrs.frozen
    class City:
        name: str
        country: str

    server.json(answer({"text": '{"name": "Paris", "country": "France"}'}))
    agent = plait.create_agent(model=model(server), response_format=City)
    result = agent.invoke("Capital of France?")
    assert result.structured_response == City("Paris", "France")
    config = server.last.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["required"] == ["name", "country"]


# -- messages --------------------------------------------------------------------------------


def test_system_messages_become_the_system_instruction(server: ReplayServer) -> None:
    body = sent(
        server,
        SystemMessage("Be brief."),
        HumanMessage("hi"),
        HumanMessage([{"type": "text", "text": "and"}, {"type": "text", "text": "more"}]),
        system_prompt="You are plait.",
    )
    assert body["systemInstruction"] == {
        "parts": [{"text": "You are plait."}, {"text": "Be brief."}]
    }
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}, {"text": "and"}, {"text": "more"}]}
    ]


def test_a_tool_loop_turn(server: ReplayServer) -> None:
    ai = AIMessage(
        [
            {"type": "thinking", "thinking": "I should look.", "thought_signature": "c2lnMQ=="},
            {"type": "text", "text": "Looking."},
        ],
        tool_calls=[ToolCall("lookup", {"q": "x"}, "call_1"), ToolCall("lookup", {}, "call_2")],
        response_metadata={THOUGHT_SIGNATURES: {"call_1": "c2lnMg=="}},
    )
    body = sent(
        server,
        HumanMessage("find x"),
        ai,
        ToolMessage("found", tool_call_id="call_1"),
        ToolMessage("boom", tool_call_id="call_2", name="lookup", status="error"),
    )
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "find x"}]},
        {
            "role": "model",
            "parts": [
                {"text": "I should look.", "thought": True, "thoughtSignature": "c2lnMQ=="},
                {"text": "Looking."},
                {
                    "functionCall": {"name": "lookup", "args": {"q": "x"}, "id": "call_1"},
                    "thoughtSignature": "c2lnMg==",
                },
                {"functionCall": {"name": "lookup", "args": {}, "id": "call_2"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "call_1",
                        "name": "lookup",
                        "response": {"output": "found"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "call_2",
                        "name": "lookup",
                        "response": {"error": "boom"},
                    }
                },
            ],
        },
    ]


def test_a_tool_result_without_its_call_is_a_config_error(server: ReplayServer) -> None:
    with pytest.raises(ConfigError, match="answers no tool call"):
        model(server).invoke([HumanMessage("hi"), ToolMessage("x", tool_call_id="call_9")])


def test_image_blocks(server: ReplayServer) -> None:
    body = sent(
        server,
        HumanMessage(
            [
                {"type": "text", "text": "What is in these?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "gs://bucket/cat.jpg"}},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4A=="},
                },
                {"type": "inlineData", "inlineData": {"mimeType": "audio/wav", "data": "UklG"}},
            ]
        ),
    )
    assert body["contents"][0]["parts"] == [
        {"text": "What is in these?"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        {"fileData": {"fileUri": "gs://bucket/cat.jpg"}},
        {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4A=="}},
        {"inlineData": {"mimeType": "audio/wav", "data": "UklG"}},
    ]


def test_foreign_blocks(server: ReplayServer) -> None:
    claude = AIMessage(
        [
            {"type": "thinking", "thinking": "hmm", "signature": "anthropic-signature"},
            {"type": "text", "text": "Hi."},
        ]
    )
    body = sent(server, HumanMessage("hi"), claude, HumanMessage("again"))
    assert body["contents"][1] == {"role": "model", "parts": [{"text": "Hi."}]}
    with pytest.raises(ConfigError, match="cannot send a 'document' content block"):
        model(server).invoke([HumanMessage([{"type": "document", "source": {}}])])


# -- errors no recording holds ----------------------------------------------------------------


def google_error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def test_rate_limit_is_retryable_with_retry_after(server: ReplayServer) -> None:
    server.json(
        google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        status=429,
        headers={"retry-after": "7"},
    )
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    error = caught.value
    assert (error.status_code, error.error_type, error.retryable, error.retry_after) == (
        429,
        "RESOURCE_EXHAUSTED",
        True,
        7.0,
    )
    assert str(error) == (
        "google API error 429 (RESOURCE_EXHAUSTED): Resource has been exhausted (e.g. check quota)."
    )


QUOTA_429 = {
    "error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{"quotaMetric": "generate_content_free_tier_requests"}],
            },
            {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"},
        ],
    }
}


def test_a_rate_limit_gives_the_delay_of_its_retry_info_body(server: ReplayServer) -> None:
    server.json(QUOTA_429, status=429)  # Gemini sends no retry-after header
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert (caught.value.retryable, caught.value.retry_after) == (True, 7.0)


def test_a_retry_after_header_wins_over_the_body(server: ReplayServer) -> None:
    server.json(QUOTA_429, status=429, headers={"retry-after": "2"})
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert caught.value.retry_after == 2.0


def test_a_streamed_rate_limit_gives_its_retry_info_delay(server: ReplayServer) -> None:
    error = {"error": {**QUOTA_429["error"]}}
    error["error"]["details"] = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.5s"}
    ]
    server.sse(f"data: {json.dumps(error)}\n\n")
    with pytest.raises(ProviderError) as caught:
        list(model(server).stream([HumanMessage("hi")]))
    assert (caught.value.retryable, caught.value.retry_after) == (True, 0.5)


def test_model_retry_waits_the_delay_gemini_asks_for(server: ReplayServer) -> None:
    sleeper = FakeSleeper()
    server.json(QUOTA_429, status=429)
    server.json(answer({"text": "ok"}))
    retry = ModelRetryMiddleware(initial_delay=0.1, jitter=False, sleep=sleeper)
    agent = plait.create_agent(model(server), middleware=[retry])
    assert agent.invoke("hi").text == "ok"
    assert sleeper.delays == [7.0]  # not the 0.1 s of its own backoff


@pytest.mark.parametrize(
    ("status", "name", "retryable"),
    [(500, "INTERNAL", True), (503, "UNAVAILABLE", True), (400, "INVALID_ARGUMENT", False)],
)
def test_status_errors(server: ReplayServer, status: int, name: str, retryable: bool) -> None:
    server.json(google_error(status, name, "something went wrong"), status=status)
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert (caught.value.error_type, caught.value.retryable) == (name, retryable)


def test_the_key_never_shows_in_an_error(server: ReplayServer) -> None:
    server.json(
        google_error(
            400, "INVALID_ARGUMENT", f"API key not valid: {KEY}. Please pass a valid key."
        ),
        status=400,
    )
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert KEY not in str(caught.value) and "[REDACTED]" in str(caught.value)
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    other = "AIza" + "SyC-someOtherKeyOfThisShapexxxxxxxx"
    server.sse(f"data: {json.dumps(google_error(500, 'INTERNAL', f'bad {KEY} {other}'))}\n\n")
    with pytest.raises(ProviderError) as streamed:
        list(model(server).stream([HumanMessage("hi")]))
    assert KEY not in str(streamed.value) and other not in str(streamed.value)
    assert streamed.value.retryable is True


def test_an_over_long_prompt_is_a_context_overflow(server: ReplayServer) -> None:
    server.json(
        google_error(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).",
        ),
        status=400,
    )
    with pytest.raises(ContextOverflowError):
        model(server).invoke([HumanMessage("hi")])


def test_a_malformed_function_call_is_retryable(server: ReplayServer) -> None:
    body = answer(finish="MALFORMED_FUNCTION_CALL")
    body["candidates"][0]["finishMessage"] = "Malformed function call: print(default_api.x("
    server.json(body)
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert caught.value.error_type == "MALFORMED_FUNCTION_CALL" and caught.value.retryable
    assert "Malformed function call: print(default_api.x(" in str(caught.value)


def test_a_200_that_is_no_answer_is_invalid(server: ReplayServer) -> None:
    server.json({})
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert caught.value.error_type == "invalid_response" and caught.value.retryable


def test_a_tool_turn_gemini_did_not_write_gets_googles_placeholder_on_gemini_3(
    server: ReplayServer,
) -> None:
    """Gemini 3 refuses a function-call turn without a thought signature; a turn written
    by another provider has none, so its first call carries Google's documented
    placeholder — on Gemini 3 only, and never over a real signature."""
    foreign = AIMessage(
        "",
        tool_calls=[ToolCall("lookup", {"q": "a"}, "toolu_1"), ToolCall("lookup", {}, "toolu_2")],
    )
    turns = [
        HumanMessage("find"),
        foreign,
        ToolMessage("A", tool_call_id="toolu_1"),
        ToolMessage("B", tool_call_id="toolu_2"),
    ]
    for name, expected in (
        ("gemini-3-flash-preview", "skip_thought_signature_validator"),
        ("gemini-2.5-flash", None),
    ):
        server.json(answer({"text": "ok"}))
        GoogleChatModel(name, api_key=KEY, base_url=server.url).invoke(turns)
        first, second = server.last.body["contents"][1]["parts"]
        assert first.get("thoughtSignature") == expected
        assert "thoughtSignature" not in second
    signed = AIMessage(
        "",
        tool_calls=[ToolCall("lookup", {}, "c1"), ToolCall("lookup", {}, "c2")],
        response_metadata={THOUGHT_SIGNATURES: {"c1": "c2ln"}},
    )
    server.json(answer({"text": "ok"}))
    GoogleChatModel("gemini-3-pro-preview", api_key=KEY, base_url=server.url).invoke(
        [
            HumanMessage("find"),
            signed,
            ToolMessage("A", tool_call_id="c1"),
            ToolMessage("B", tool_call_id="c2"),
        ]
    )
    parts = server.last.body["contents"][1]["parts"]
    assert [part.get("thoughtSignature") for part in parts] == ["c2ln", None]


def test_a_usage_sent_after_the_finish_replaces_the_earlier_one(server: ReplayServer) -> None:
    """Usage in a stream is cumulative: each response repeats it; if one after the finish
    says more, the assembled message has the later figures (not their sum)."""
    first = answer({"text": "Hi"})
    later = {
        "candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": 3,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 1,
        },
    }
    server.sse(f"data: {json.dumps(first)}\n\ndata: {json.dumps(later)}\n\n", split=9)
    chunks = list(model(server).stream([HumanMessage("hi")]))
    usages = [chunk.usage for chunk in chunks if chunk.usage is not None]
    assert len(usages) == 2
    message = assemble_chunks(chunks)
    assert message.usage == plait.Usage(input_tokens=3, output_tokens=6, reasoning_tokens=1)
    assert message.content == "Hi"


@pytest.mark.parametrize("choice", ["required", "lookup"])
def test_a_tool_choice_needing_a_tool_without_tools_is_a_config_error(
    server: ReplayServer, choice: str
) -> None:
    with pytest.raises(ConfigError) as info:
        model(server).invoke([HumanMessage("hi")], tool_choice=choice)
    assert str(info.value) == (
        f"google: tool_choice: expected 'auto' or 'none' (no tool is offered), got {choice!r}"
    )
    assert server.requests == []
