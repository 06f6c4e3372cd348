"""The ``openai-responses`` provider's requests, the answers no recording holds (a refusal,
an incomplete answer, a failed response, error events inside a stream) and whole agent
runs over it. Answers are recorded bodies from ``../shared/recorded/`` where one fits,
changed only where a test says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from recorded import RESPONSES, interactions, needs
from replay_server import ReplayServer, Reply, split_bytes

import plait
from plait.errors import ConfigError, ContextOverflowError, ProviderError
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    assemble_chunks,
)
from plait.models import init_chat_model
from plait_openai_responses import OpenAIResponsesModel

pytestmark = needs(RESPONSES)


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = interactions(RESPONSES)[name]
    return data


def answer(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(recorded(name)["response"]["body"])
    return data


def model(server: ReplayServer, name: str = "gpt-5", **settings: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(name, api_key="test-key", base_url=server.url + "/v1", **settings)


def events(*items: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in items)


def serve_stream(server: ReplayServer, text: str, size: int | None = None) -> None:
    data = text.encode("utf-8")
    pieces = split_bytes(data, size) if size else (data,)
    server.reply(Reply(200, b"", {"content-type": "text/event-stream"}, pieces=pieces))


def text_events(response: dict[str, Any], *, terminal: str = "response.completed") -> str:
    """A stream for a text answer: its message's text in three-character deltas, the item
    done, then the terminal event with the whole response."""
    (message,) = response["output"]
    start = {**response, "output": [], "status": "in_progress", "usage": None}
    out = [{"type": "response.created", "response": start}]
    out.append({"type": "response.output_item.added", "output_index": 0, "item": message})
    for index, part in enumerate(message["content"]):
        key = "text" if part["type"] == "output_text" else "refusal"
        kind = "response.output_text.delta" if key == "text" else "response.refusal.delta"
        for i in range(0, len(part[key]), 3):
            out.append(
                {
                    "type": kind,
                    "item_id": message["id"],
                    "output_index": 0,
                    "content_index": index,
                    "delta": part[key][i : i + 3],
                }
            )
        out.append(
            {
                "type": "response.content_part.done",
                "item_id": message["id"],
                "output_index": 0,
                "content_index": index,
                "part": part,
            }
        )
    out.append({"type": "response.output_item.done", "output_index": 0, "item": message})
    out.append({"type": terminal, "response": response})
    return events(*out)


# -- requests ------------------------------------------------------------------------------


def test_the_request_body(server: ReplayServer, make_tool: Any) -> None:
    server.json(answer("resp_text_plain"))
    weather = make_tool(
        "get_weather",
        "The weather.",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )
    loose = make_tool("note", "", {"type": "object", "properties": {"x": {"type": "string"}}})
    search = make_tool(
        "web_search",
        provider_options={"openai-responses": {"type": "web_search", "search_context_size": "low"}},
    )
    model(server, temperature=0, max_tokens=300).invoke(
        [
            SystemMessage("Be brief."),
            HumanMessage(
                [
                    {"type": "text", "text": "What is this?", "cache_control": {}},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
                    {"type": "input_file", "file_id": "file-1"},
                ]
            ),
        ],
        system_prompt="You are helpful.",
        tools=[weather, loose, search],
        tool_choice="get_weather",
        provider_options={"openai-responses": {"store": False}, "openai": {"seed": 1}},
    )
    request = server.last
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body == {
        "model": "gpt-5",
        "instructions": "You are helpful.",
        "input": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": "low"},
                    {"type": "input_file", "file_id": "file-1"},
                ],
            },
        ],
        "temperature": 0,
        "max_output_tokens": 300,
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "The weather.",
                "parameters": weather.parameters,
                "strict": True,
            },
            {"type": "function", "name": "note", "parameters": loose.parameters, "strict": False},
            {"type": "web_search", "search_context_size": "low"},
        ],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "store": False,
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [("auto", "auto"), ("none", "none"), ("required", "required"), ("any", "required")],
)
def test_tool_choice(server: ReplayServer, make_tool: Any, choice: str, expected: Any) -> None:
    server.json(answer("resp_text_plain"))
    model(server).invoke([HumanMessage("hi")], tools=[make_tool("f")], tool_choice=choice)
    assert server.last.body["tool_choice"] == expected


def test_tool_choice_of_a_built_in_tool_and_of_no_tool(
    server: ReplayServer, make_tool: Any
) -> None:
    search = make_tool("search", provider_options={"openai-responses": {"type": "web_search"}})
    server.json(answer("resp_text_plain"))
    model(server).invoke([HumanMessage("hi")], tools=[search], tool_choice="search")
    assert server.last.body["tool_choice"] == {"type": "web_search"}
    with pytest.raises(ConfigError) as info:
        model(server).invoke([HumanMessage("hi")], tools=[search], tool_choice="nope")
    assert str(info.value) == (
        "openai-responses: tool_choice: expected 'auto', 'none', 'required' or the name of a "
        "tool (search), got 'nope'"
    )


@pytest.mark.parametrize("choice", ["required", "search"])
def test_a_tool_choice_needing_a_tool_without_tools_is_a_config_error(
    server: ReplayServer, choice: str
) -> None:
    with pytest.raises(ConfigError) as info:
        model(server).invoke([HumanMessage("hi")], tool_choice=choice)
    assert str(info.value) == (
        "openai-responses: tool_choice: expected 'auto' or 'none' (no tool is offered), "
        f"got {choice!r}"
    )
    assert server.requests == []


def test_prompt_cache_breakpoints_on_text_parts_are_sent_as_recorded(server: ReplayServer) -> None:
    request = recorded("resp_prompt_cache_write")["request"]
    (turn,) = request["input"]
    parts = [{**part, "type": "text"} for part in turn["content"]]
    server.json(answer("resp_prompt_cache_write"))
    llm = model(server, request["model"], include=request["include"])
    llm.invoke(
        [HumanMessage(parts)],
        provider_options={
            "openai-responses": {
                "prompt_cache_key": request["prompt_cache_key"],
                "prompt_cache_options": request["prompt_cache_options"],
            }
        },
    )
    # The whole body as the recording client sent it, but its explicit "stream": false.
    assert server.last.body == {key: value for key, value in request.items() if key != "stream"}


def test_tool_results_and_calls_in_plait_messages(server: ReplayServer) -> None:
    server.json(answer("resp_text_plain"))
    calls = [ToolCall("f", {"a": 1}, "call_1"), ToolCall("g", {}, "call_2")]
    model(server).invoke(
        [
            HumanMessage("go"),
            AIMessage("Calling both.", tool_calls=calls),
            ToolMessage("one", tool_call_id="call_1"),
            ToolMessage([{"type": "text", "text": "two"}], tool_call_id="call_2", status="error"),
        ]
    )
    assert server.last.body["input"] == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "Calling both."},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call", "call_id": "call_2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "one"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": "two"}],
        },
    ]


def test_a_call_removed_by_middleware_is_not_sent(server: ReplayServer) -> None:
    """A kept ``function_call`` block whose call is no longer among the tool calls (a
    middleware dropped it) is skipped; the reasoning before it still goes."""
    llm = model(server)
    server.json(answer("resp_stateless_reasoning_parallel_calls"))
    first = llm.invoke([HumanMessage("go")])
    assert len(first.tool_calls) == 5
    kept = attrs.evolve(first, tool_calls=first.tool_calls[:2])
    server.json(answer("resp_text_plain"))
    llm.invoke([HumanMessage("go"), kept])
    sent = server.last.body["input"][1:]
    assert [item["type"] for item in sent] == ["reasoning", "function_call", "function_call"]
    assert [item["call_id"] for item in sent[1:]] == [c.id for c in first.tool_calls[:2]]


def test_structured_output_is_a_json_schema_text_format(server: ReplayServer) -> None:
    schema = {
        "title": "City facts",
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    body = answer("resp_text_plain")
    body["output"][0]["content"][0]["text"] = '{"city": "Paris"}'
    server.json(body)
    result = model(server, text={"verbosity": "low"}).invoke(
        [HumanMessage("hi")], response_format=schema
    )
    assert json.loads(result.text) == {"city": "Paris"}
    assert server.last.body["text"] == {
        "verbosity": "low",
        "format": {"type": "json_schema", "name": "City_facts", "schema": schema, "strict": True},
    }
    server.json(body)
    model(server).invoke([HumanMessage("hi")], response_format={"type": "json_object"})
    assert server.last.body["text"] == {"format": {"type": "json_object"}}


# -- answers no recording holds ------------------------------------------------------------


def refusal_body() -> dict[str, Any]:
    body = answer("resp_text_plain")
    body["output"][0]["content"] = [{"type": "refusal", "refusal": "I can't help with that."}]
    return body


def test_a_refusal_is_in_metadata_in_invoke_and_stream(server: ReplayServer) -> None:
    llm = model(server)
    server.json(refusal_body())
    refused = llm.invoke([HumanMessage("hi")])
    assert refused.content == "" and refused.response_metadata["refusal"] == (
        "I can't help with that."
    )
    for size in (1, 4, None):
        serve_stream(server, text_events(refusal_body()), size)
        streamed = assemble_chunks(llm.stream([HumanMessage("hi")]))
        assert (streamed.content, streamed.response_metadata) == (
            refused.content,
            refused.response_metadata,
        )
    server.json(answer("resp_text_plain"))
    llm.invoke([HumanMessage("hi"), refused, HumanMessage("please?")])
    assert server.last.body["input"][1] == {
        "role": "assistant",
        "content": "I can't help with that.",
    }


def test_an_incomplete_answer_says_why(server: ReplayServer) -> None:
    body = answer("resp_text_plain")
    body["status"] = "incomplete"
    body["incomplete_details"] = {"reason": "max_output_tokens"}
    llm = model(server)
    server.json(body)
    cut = llm.invoke([HumanMessage("hi")])
    assert cut.response_metadata["finish_reason"] == "max_output_tokens"
    assert cut.response_metadata["status"] == "incomplete"
    assert cut.text == "The capital of France is Paris."
    serve_stream(server, text_events(body, terminal="response.incomplete"), 2)
    streamed = assemble_chunks(llm.stream([HumanMessage("hi")]))
    assert (streamed.content, streamed.usage, streamed.response_metadata) == (
        cut.content,
        cut.usage,
        cut.response_metadata,
    )


def test_a_failed_response_is_a_typed_error(server: ReplayServer) -> None:
    body = answer("resp_text_plain")
    body["status"] = "failed"
    body["output"] = []
    body["error"] = {"code": "server_error", "message": "The model had an error."}
    server.json(body)
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert caught.value.error_type == "server_error" and caught.value.retryable
    assert caught.value.status_code == 200
    assert "The model had an error." in str(caught.value)


@pytest.mark.parametrize("shape", [{}, [], {"id": "resp_1"}])
def test_a_wrong_shaped_200_is_an_invalid_response(server: ReplayServer, shape: Any) -> None:
    server.json(shape)
    with pytest.raises(ProviderError) as caught:
        model(server).invoke([HumanMessage("hi")])
    assert caught.value.error_type == "invalid_response" and caught.value.retryable


def _opening(name: str = "resp_stream_text_roundtrip") -> str:
    """A recorded stream up to (and with) its first text delta."""
    text: str = recorded(name)["response"]["body"]
    end = text.index("event: response.output_text.delta")
    return text[: text.index("\n\n", end) + 2]


def test_an_error_event_in_a_stream_is_a_typed_error(server: ReplayServer) -> None:
    error = {
        "type": "error",
        "code": "server_error",
        "message": "The server had an error while processing your request.",
        "param": None,
    }
    serve_stream(server, _opening() + events(error), 3)
    with pytest.raises(ProviderError) as caught:
        list(model(server).stream([HumanMessage("hi")]))
    assert caught.value.error_type == "server_error" and caught.value.retryable
    assert "The server had an error" in str(caught.value)
    assert str(caught.value).startswith("openai-responses stream error (server_error)")


def test_a_failed_event_in_a_stream_is_a_typed_error(server: ReplayServer) -> None:
    response = answer("resp_text_plain")
    response.update(
        status="failed",
        output=[],
        error={"code": "rate_limit_exceeded", "message": "Rate limit reached for gpt-4o."},
    )
    serve_stream(server, _opening() + events({"type": "response.failed", "response": response}))
    with pytest.raises(ProviderError) as caught:
        list(model(server).stream([HumanMessage("hi")]))
    assert caught.value.error_type == "rate_limit_exceeded" and caught.value.retryable
    assert "Rate limit reached for gpt-4o." in str(caught.value)


def test_a_stream_without_its_terminal_event_is_cut(server: ReplayServer) -> None:
    serve_stream(server, _opening(), 5)
    with pytest.raises(ProviderError) as caught:
        list(model(server).stream([HumanMessage("hi")]))
    assert caught.value.error_type == "stream_interrupted" and caught.value.retryable


def test_context_overflow_is_its_own_error(server: ReplayServer) -> None:
    error = {
        "error": {
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.",
            "type": "invalid_request_error",
        }
    }
    server.json(error, status=400)
    with pytest.raises(ContextOverflowError):
        model(server).invoke([HumanMessage("hi")])


def test_the_model_id_and_environment(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    llm = init_chat_model("openai-responses:gpt-5-mini", reasoning={"effort": "low"})
    assert isinstance(llm, OpenAIResponsesModel)
    assert llm.profile is not None and llm.profile.max_input_tokens == 272_000
    server.json(answer("resp_text_plain"))
    llm.invoke([HumanMessage("hi")])
    assert server.last.headers["authorization"] == "Bearer env-key"
    assert server.last.body["reasoning"] == {"effort": "low"}
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        init_chat_model("openai-responses:gpt-5")


# -- agents --------------------------------------------------------------------------------


def test_an_agent_runs_the_recorded_tool_loop(server: ReplayServer) -> None:
    first, second = recorded("resp_function_call"), recorded("resp_function_call_output_roundtrip")

    @plait.tool
    def get_capital(country: str) -> str:
        """The capital of a country.

        Args:
            country: its name.
        """
        return "Potato City"

    server.raw(first["response"]["body"].encode())
    server.raw(second["response"]["body"].encode())
    agent = plait.create_agent(model=model(server, "gpt-4o"), tools=[get_capital])
    result = agent.invoke("What is the capital of PotatoLand?")
    assert result.messages[-1].text == "The capital of PotatoLand is Potato City."
    sent = server.requests[1].body["input"]
    expected = second["request"]["input"]
    assert sent[0] == expected[0]
    assert {**sent[1], "arguments": json.loads(sent[1]["arguments"])} == {
        key: json.loads(value) if key == "arguments" else value
        for key, value in expected[1].items()
        if key != "status"
    }
    assert sent[2] == expected[2]
    assert result.usage.input_tokens == 40 + 67


@attrs.frozen
class Capital:
    city: str


def test_an_agent_gets_a_structured_answer(server: ReplayServer) -> None:
    body = answer("resp_text_plain")
    body["output"][0]["content"][0]["text"] = '{"city": "Paris"}'
    server.json(body)
    agent = plait.create_agent(model=model(server), response_format=Capital)
    result = agent.invoke("Capital of France?")
    assert result.structured_response == Capital("Paris")
    assert server.last.body["text"]["format"]["type"] == "json_schema"


def test_an_agent_thread_sends_back_the_recorded_reasoning_turn(
    server: ReplayServer, tmp_path: Path
) -> None:
    """Two runs on one SQLite thread: the second run's request is the recorded second turn
    — the reasoning item (13,176 characters of encrypted content) and the message that
    followed it, by id — after the answer went through the checkpoint and back."""
    first, second = recorded("resp_reasoning_summary"), recorded("resp_reasoning_roundtrip")
    request = second["request"]
    settings = {key: request[key] for key in ("include", "reasoning")}
    db = f"sqlite:///{tmp_path / 'threads.db'}"
    server.raw(first["response"]["body"].encode())
    agent = plait.create_agent(model=model(server, "gpt-5", **settings), checkpointer=db)
    agent.invoke(request["input"][0]["content"], thread_id="t")
    agent.close()
    server.raw(second["response"]["body"].encode())
    agent = plait.create_agent(model=model(server, "gpt-5", **settings), checkpointer=db)
    result = agent.invoke(request["input"][-1]["content"], thread_id="t")
    agent.close()
    assert server.last.body == {key: value for key, value in request.items() if key != "stream"}
    assert result.text.startswith("Short version: default to a bridge or ferry")


def test_an_agent_streams_the_recorded_tool_loop(server: ReplayServer) -> None:
    first = recorded("resp_stream_function_call")
    second = recorded("resp_stream_text_roundtrip")

    @plait.tool
    def get_capital(country: str) -> str:
        """The capital of a country.

        Args:
            country: its name.
        """
        return "Paris"

    serve_stream(server, first["response"]["body"], 2)
    serve_stream(server, second["response"]["body"], 2)
    agent = plait.create_agent(model=model(server, "gpt-4o"), tools=[get_capital])
    texts = [
        event.data.content
        for event in agent.stream("What is the capital of France?", mode="messages")
        if isinstance(event.data, AIMessageChunk) and event.data.content
    ]
    assert "".join(texts) == "The capital of France is Paris."
    assert len(texts) == 7
    sent = server.requests[1].body["input"]
    assert sent[1]["call_id"] == sent[2]["call_id"] == "call_kL0PCQV7M2WMoVX8V8OtYSAL"
    assert sent[2] == {
        "type": "function_call_output",
        "call_id": "call_kL0PCQV7M2WMoVX8V8OtYSAL",
        "output": "Paris",
    }


def test_a_stream_without_part_events_still_keeps_the_message_id(server: ReplayServer) -> None:
    """Servers that send no ``response.content_part.done``: the message's done item gives
    the text its id, so the stream still equals ``invoke``."""
    text: str = recorded("resp_stream_web_search_cached")["response"]["body"]
    kept = "".join(
        block + "\n\n"
        for block in text.split("\n\n")
        if block.strip() and "event: response.content_part." not in block
    )
    assert kept != text
    llm = model(server)
    serve_stream(server, text, None)
    expected = assemble_chunks(llm.stream([HumanMessage("hi")]))
    assert isinstance(expected.content, list)
    assert expected.content[-1]["id"].startswith("msg_")
    serve_stream(server, kept, 3)
    assert assemble_chunks(llm.stream([HumanMessage("hi")])).content == expected.content


def test_the_default_timeout_waits_for_a_reasoning_model() -> None:
    llm = OpenAIResponsesModel("gpt-5", api_key="k")
    assert llm.timeout == 600.0
    assert OpenAIResponsesModel("gpt-5", api_key="k", timeout=30).timeout == 30


def test_another_providers_answer_is_sent_as_text_and_calls(server: ReplayServer) -> None:
    """A history from a fallback model (Anthropic thinking and server-tool blocks) goes
    as its text and tool calls; blocks with no Responses item are left out."""
    anthropic = AIMessage(
        [
            {"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "text", "text": "Checking the weather."},
        ],
        tool_calls=[ToolCall("get_weather", {"city": "Rome"}, "toolu_1")],
    )
    server.json(answer("resp_text_plain"))
    model(server).invoke(
        [HumanMessage("Rome?"), anthropic, ToolMessage("sunny", tool_call_id="toolu_1")]
    )
    assert server.last.body["input"][1:] == [
        {"role": "assistant", "content": "Checking the weather."},
        {
            "type": "function_call",
            "call_id": "toolu_1",
            "name": "get_weather",
            "arguments": '{"city": "Rome"}',
        },
        {"type": "function_call_output", "call_id": "toolu_1", "output": "sunny"},
    ]
