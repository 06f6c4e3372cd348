"""The anthropic provider against a local server speaking the Messages API wire format."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from provider_fixtures import ANTHROPIC_KEY

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
from plait_anthropic import AnthropicChatModel

KEY = ANTHROPIC_KEY

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}

USAGE = {
    "input_tokens": 20,
    "output_tokens": 9,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 1000,
}


def message(*content: dict[str, Any], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01ABC",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": list(content),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": USAGE,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(id: str, name: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


# -- plain answers ---------------------------------------------------------------------------


def test_text_answer_with_system_prompt_sends_the_documented_body(server: Any, claude: Any) -> None:
    server.json(message(text("Hello"), text(" there")), headers={"request-id": "req_9"})
    answer = claude(temperature=0).invoke(
        [SystemMessage("Use French."), HumanMessage("Hi")], system_prompt="Be brief."
    )
    assert answer.text == "Hello there"
    assert answer.content == "Hello there"
    assert answer.usage == Usage(
        input_tokens=1320, output_tokens=9, cache_read_tokens=1000, cache_write_tokens=300
    )
    assert answer.response_metadata == {
        "provider": "anthropic",
        "request_id": "req_9",
        "model": "claude-sonnet-4-5-20250929",
        "response_id": "msg_01ABC",
        "finish_reason": "end_turn",
    }
    sent = server.last
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "messages": [{"role": "user", "content": "Hi"}],
        "system": "Be brief.\n\nUse French.",
        "temperature": 0,
    }


def test_cache_marked_system_blocks_are_kept(server: Any, claude: Any) -> None:
    server.json(message(text("ok")))
    marked = [{"type": "text", "text": "long rules", "cache_control": {"type": "ephemeral"}}]
    claude().invoke([SystemMessage(marked), HumanMessage("Hi")], system_prompt="first")
    assert server.last.body["system"] == [{"type": "text", "text": "first"}, *marked]


MARK = {"type": "ephemeral", "ttl": "5m"}
EVERYWHERE = {"cache_breakpoints": {"messages": MARK, "system": MARK, "tools": MARK}}


def test_cache_breakpoints_mark_the_last_message_the_system_and_the_last_tool(
    server: Any, make_tool: Any, claude: Any
) -> None:
    tools = [make_tool("a", "A.", WEATHER), make_tool("b", "B.", WEATHER)]
    server.json(message(text("ok")))
    history = [
        HumanMessage("Hi"),
        AIMessage("", tool_calls=[ToolCall("a", {"city": "Oslo"}, "toolu_1")]),
        ToolMessage("cold", tool_call_id="toolu_1", name="a"),
    ]
    claude().invoke(
        history, system_prompt="Be brief.", tools=tools, provider_options={"anthropic": EVERYWHERE}
    )
    body = server.last.body
    assert "cache_breakpoints" not in body
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": MARK}]
    assert body["tools"][0] == {"name": "a", "input_schema": WEATHER, "description": "A."}
    assert body["tools"][1] == {
        "name": "b",
        "input_schema": WEATHER,
        "description": "B.",
        "cache_control": MARK,
    }
    assert body["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "cold",
                "cache_control": MARK,
            }
        ],
    }
    assert body["messages"][0] == {"role": "user", "content": "Hi"}


def test_cache_breakpoints_keep_the_callers_marks_and_stay_within_four(
    server: Any, make_tool: Any, claude: Any
) -> None:
    own = {"type": "ephemeral", "ttl": "1h"}
    marked = [{"type": "text", "text": f"doc {n}", "cache_control": own} for n in range(2)]
    tool = make_tool("a", "A.", WEATHER, {"anthropic": {"cache_control": own}})
    server.json(message(text("ok")))
    claude().invoke(
        [HumanMessage(marked), AIMessage("thinking..."), HumanMessage("and?")],
        system_prompt="rules",
        tools=[tool],
        provider_options={"anthropic": EVERYWHERE},
    )
    body = server.last.body
    # Three marks were there; one more fits: the last message, the worthiest place.
    assert body["messages"][-1]["content"] == [
        {"type": "text", "text": "and?", "cache_control": MARK}
    ]
    assert body["system"] == "rules"
    assert body["tools"][0]["cache_control"] == own


def test_cache_breakpoints_skip_thinking_blocks_and_absent_places(server: Any, claude: Any) -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    server.json(message(text("ok")))
    claude().invoke(
        [HumanMessage("Hi"), AIMessage([text("Sure:"), thinking])],
        provider_options={"anthropic": {"cache_breakpoints": {"messages": MARK, "system": MARK}}},
    )
    body = server.last.body
    assert body["messages"][-1]["content"] == [{**text("Sure:"), "cache_control": MARK}, thinking]
    assert "system" not in body and "tools" not in body


def test_cache_breakpoints_get_a_ttl_the_api_accepts_where_they_stand(
    server: Any, make_tool: Any, claude: Any
) -> None:
    """The API reads marks as tools, system, messages and refuses a "1h" mark after a "5m"
    one. Asked-for marks are fitted: shortened after a shorter mark (the tools' own "5m"
    here), lengthened before a caller's "1h" (inside the tool result); the caller's marks
    are sent as given."""
    hour = {"type": "ephemeral", "ttl": "1h"}
    tool = make_tool("a", "A.", WEATHER)
    call = AIMessage("", tool_calls=[ToolCall("a", {"city": "Oslo"}, "toolu_1")])
    result = ToolMessage([{**text("cold"), "cache_control": hour}], tool_call_id="toolu_1")
    server.json(message(text("ok")))
    server.json(message(text("ok")))
    mixed = {"tools": MARK, "system": hour, "messages": hour}
    claude().invoke(
        [HumanMessage("Hi")],
        system_prompt="rules",
        tools=[tool],
        provider_options={"anthropic": {"cache_breakpoints": mixed}},
    )
    claude().invoke(
        [HumanMessage("Hi"), call, result],
        system_prompt="rules",
        tools=[tool],
        provider_options={"anthropic": EVERYWHERE},
    )
    # The request's own mark (automatic caching) stands for its last block, which the API
    # takes marked with one lifetime only: the last message's mark gets that one.
    server.json(message(text("ok")))
    claude().invoke(
        [HumanMessage("Hi")],
        provider_options={
            "anthropic": {"cache_breakpoints": {"messages": hour}, "cache_control": MARK}
        },
    )
    first, second, third = (r.body for r in server.requests)
    assert third["cache_control"] == MARK
    assert third["messages"][0]["content"] == [{**text("Hi"), "cache_control": MARK}]
    assert first["tools"][0]["cache_control"] == MARK
    assert first["system"] == [{"type": "text", "text": "rules", "cache_control": MARK}]
    assert first["messages"][0]["content"] == [{**text("Hi"), "cache_control": MARK}]
    assert second["tools"][0]["cache_control"] == hour
    assert second["system"] == [{"type": "text", "text": "rules", "cache_control": hour}]
    assert second["messages"][-1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{**text("cold"), "cache_control": hour}],
            "cache_control": MARK,
        }
    ]


def test_malformed_cache_breakpoints_are_a_config_error(server: Any, claude: Any) -> None:
    with pytest.raises(ConfigError, match="anthropic: provider option 'cache_breakpoints'"):
        claude().invoke(
            [HumanMessage("Hi")],
            provider_options={"anthropic": {"cache_breakpoints": {"everything": MARK}}},
        )
    assert server.requests == []


def test_multi_turn_with_several_tool_calls_and_results(
    server: Any, make_tool: Any, claude: Any
) -> None:
    weather = make_tool("get_weather", "Current weather in a city.", WEATHER)
    clock = make_tool(
        "get_time",
        "Local time.",
        WEATHER,
        {"anthropic": {"cache_control": {"type": "ephemeral"}}, "openai": {"strict": True}},
    )
    server.json(message(text("Sunny, and 14:00.")))
    history = [
        HumanMessage("Weather in Paris and time in Rome?"),
        AIMessage(
            "Let me check.",
            tool_calls=[
                ToolCall("get_weather", {"city": "Paris"}, "toolu_1"),
                ToolCall("get_time", {"city": "Rome"}, "toolu_2"),
            ],
        ),
        ToolMessage("sunny", tool_call_id="toolu_1", name="get_weather"),
        ToolMessage("clock broke", tool_call_id="toolu_2", name="get_time", status="error"),
        HumanMessage("And be quick."),
        AIMessage("", tool_calls=[ToolCall("get_time", {}, "toolu_3")]),
        ToolMessage([{"type": "text", "text": "15:00"}], tool_call_id="toolu_3"),
    ]
    answer = claude().invoke(history, tools=[weather, clock], tool_choice="get_time")
    assert answer.text == "Sunny, and 14:00."
    assert server.last.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "messages": [
            {"role": "user", "content": "Weather in Paris and time in Rome?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    tool_use("toolu_1", "get_weather", {"city": "Paris"}),
                    tool_use("toolu_2", "get_time", {"city": "Rome"}),
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "clock broke",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And be quick."},
                ],
            },
            {"role": "assistant", "content": [tool_use("toolu_3", "get_time", {})]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_3",
                        "content": [{"type": "text", "text": "15:00"}],
                    }
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "input_schema": WEATHER,
                "description": "Current weather in a city.",
            },
            {
                "name": "get_time",
                "input_schema": WEATHER,
                "description": "Local time.",
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "tool_choice": {"type": "tool", "name": "get_time"},
    }


def test_tool_calls_in_the_answer(server: Any, make_tool: Any, claude: Any) -> None:
    server.json(
        message(
            text("Checking."),
            tool_use("toolu_a", "get_weather", {"city": "Oslo"}),
            tool_use("toolu_b", "get_weather", {"city": "Rome"}),
            stop="tool_use",
        )
    )
    answer = claude().invoke([HumanMessage("?")], tools=[make_tool("get_weather")])
    assert answer.text == "Checking."
    assert answer.tool_calls == (
        ToolCall("get_weather", {"city": "Oslo"}, "toolu_a"),
        ToolCall("get_weather", {"city": "Rome"}, "toolu_b"),
    )
    assert answer.response_metadata["finish_reason"] == "tool_use"


def test_provider_native_blocks_are_kept_in_the_content(server: Any, claude: Any) -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    server.json(message(thinking, text("42")))
    answer = claude().invoke([HumanMessage("?")])
    assert answer.content == [thinking, text("42")]
    assert answer.text == "42"
    server.json(message(text("ok")))
    claude().invoke([HumanMessage("?"), answer, HumanMessage("sure?")])
    assert server.last.body["messages"][1] == {
        "role": "assistant",
        "content": [thinking, text("42")],
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("any", {"type": "any"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice(server: Any, make_tool: Any, choice: str, expected: Any, claude: Any) -> None:
    server.json(message(text("ok")))
    claude().invoke([HumanMessage("?")], tools=[make_tool("get_weather")], tool_choice=choice)
    assert server.last.body["tool_choice"] == expected


@pytest.mark.parametrize("choice", ["required", "any", "get_weather"])
def test_a_tool_choice_needing_a_tool_without_tools_is_a_config_error(
    server: Any, claude: Any, choice: str
) -> None:
    with pytest.raises(ConfigError) as info:
        claude().invoke([HumanMessage("?")], tool_choice=choice)
    assert str(info.value) == (
        f"anthropic: tool_choice: expected 'auto' or 'none' (no tool is offered), got {choice!r}"
    )
    assert server.requests == []


def test_provider_defined_tools_are_sent_by_type(server: Any, make_tool: Any, claude: Any) -> None:
    bash = make_tool(
        "bash",
        "ignored",
        WEATHER,
        {"anthropic": {"type": "bash_20250124", "cache_control": {"type": "ephemeral"}}},
    )
    server.json(message(text("ok")))
    claude().invoke([HumanMessage("?")], tools=[bash])
    assert server.last.body["tools"] == [
        {"name": "bash", "type": "bash_20250124", "cache_control": {"type": "ephemeral"}}
    ]


def test_response_format_is_a_forced_tool(server: Any, claude: Any) -> None:
    schema = {
        "title": "Weather",
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    server.json(message(tool_use("toolu_s", "Weather", {"city": "Paris"}), stop="tool_use"))
    answer = claude().invoke([HumanMessage("?")], response_format=schema)
    assert answer.tool_calls == ()
    assert json.loads(answer.text) == {"city": "Paris"}
    body = server.last.body
    assert body["tool_choice"] == {"type": "tool", "name": "Weather"}
    assert body["tools"] == [
        {
            "name": "Weather",
            "description": "Give your final answer by calling this tool; its input is the "
            "answer, in the required format.",
            "input_schema": schema,
        }
    ]


def test_response_format_beside_real_tools_forces_some_tool(
    server: Any, make_tool: Any, claude: Any
) -> None:
    server.json(message(tool_use("toolu_w", "get_weather", {"city": "Oslo"}), stop="tool_use"))
    answer = claude().invoke(
        [HumanMessage("?")], tools=[make_tool("get_weather")], response_format=WEATHER
    )
    assert answer.tool_calls == (ToolCall("get_weather", {"city": "Oslo"}, "toolu_w"),)
    body = server.last.body
    assert body["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in body["tools"]] == ["get_weather", "structured_response"]


def test_response_format_with_extended_thinking_offers_the_tool(server: Any, claude: Any) -> None:
    server.json(message(tool_use("toolu_s", "structured_response", {"city": "Oslo"})))
    answer = claude().invoke(
        [HumanMessage("?")],
        response_format=WEATHER,
        provider_options={"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 1024}}},
    )
    assert json.loads(answer.text) == {"city": "Oslo"}
    assert server.last.body["tool_choice"] == {"type": "auto"}


def test_settings_and_provider_options(server: Any, claude: Any) -> None:
    server.json(message(text("ok")))
    llm = claude(max_tokens=1000, top_k=5)
    llm.invoke(
        [HumanMessage("?")],
        stop="END",
        provider_options={
            "anthropic": {"thinking": {"type": "enabled", "budget_tokens": 500}},
            "openai": {"seed": 1},
        },
    )
    body = server.last.body
    assert body["max_tokens"] == 1000 and body["top_k"] == 5
    assert body["stop_sequences"] == ["END"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 500}
    assert "seed" not in body


# -- streaming -------------------------------------------------------------------------------


def events_for_tool_answer() -> list[dict[str, Any]]:
    start = message()
    start["content"], start["stop_reason"] = [], None
    start["usage"] = {**USAGE, "output_tokens": 1}
    return [
        {"type": "message_start", "message": start},
        {"type": "ping"},
        {"type": "content_block_start", "index": 0, "content_block": text("")},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Let "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "me check é 🌧."},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": tool_use("toolu_1", "get_weather", {}),
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Pa'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'ris"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": tool_use("toolu_2", "get_time", {}),
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]


TOOL_ANSWER = message(
    text("Let me check é 🌧."),
    tool_use("toolu_1", "get_weather", {"city": "Paris"}),
    tool_use("toolu_2", "get_time", {}),
    stop="tool_use",
)


def same_message(a: AIMessage, b: AIMessage) -> None:
    assert (a.content, a.tool_calls, a.usage, a.response_metadata) == (
        b.content,
        b.tool_calls,
        b.usage,
        b.response_metadata,
    )


@pytest.mark.parametrize("split", [1, 5, 13, 4096])
def test_stream_assembles_to_what_invoke_returns(
    server: Any, make_tool: Any, split: int, claude: Any
) -> None:
    tools = [make_tool("get_weather"), make_tool("get_time")]
    llm = claude()
    server.anthropic_stream(events_for_tool_answer(), split=split, headers={"request-id": "r1"})
    chunks = list(llm.stream([HumanMessage("?")], tools=tools))
    assert server.last.body["stream"] is True
    assert [c.content for c in chunks if c.content] == ["Let ", "me check é 🌧."]
    streamed = assemble_chunks(chunks)
    server.json(TOOL_ANSWER, headers={"request-id": "r1"})
    same_message(streamed, llm.invoke([HumanMessage("?")], tools=tools))
    assert streamed.tool_calls == (
        ToolCall("get_weather", {"city": "Paris"}, "toolu_1"),
        ToolCall("get_time", {}, "toolu_2"),
    )
    assert streamed.usage == Usage(1320, 9, 1000, 300)


def test_astream_and_ainvoke(server: Any, make_tool: Any, claude: Any) -> None:
    tools = [make_tool("get_weather"), make_tool("get_time")]
    llm = claude()

    async def run() -> tuple[AIMessage, AIMessage]:
        server.anthropic_stream(events_for_tool_answer(), split=7)
        streamed = assemble_chunks([c async for c in llm.astream([HumanMessage("?")], tools=tools)])
        server.json(TOOL_ANSWER)
        answer = await llm.ainvoke([HumanMessage("?")], tools=tools)
        await llm.aclose()
        return streamed, answer

    streamed, answer = asyncio.run(run())
    same_message(streamed, answer)


def test_streamed_structured_answer_equals_invoke(server: Any, claude: Any) -> None:
    schema = {"title": "Weather", **WEATHER}
    start = message()
    start["content"], start["stop_reason"] = [], None
    events = [
        {"type": "message_start", "message": start},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": tool_use("toolu_s", "Weather", {}),
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city":'},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '"Paris"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": USAGE},
        {"type": "message_stop"},
    ]
    llm = claude()
    server.anthropic_stream(events, split=3)
    streamed = assemble_chunks(llm.stream([HumanMessage("?")], response_format=schema))
    server.json(message(tool_use("toolu_s", "Weather", {"city": "Paris"}), stop="tool_use"))
    same_message(streamed, llm.invoke([HumanMessage("?")], response_format=schema))
    assert streamed.tool_calls == () and json.loads(streamed.text) == {"city": "Paris"}


def test_stream_cut_mid_way(server: Any, claude: Any) -> None:
    server.anthropic_stream(events_for_tool_answer()[:5], cut=True, split=9)
    received = []
    with pytest.raises(ProviderError) as info:
        for piece in claude().stream([HumanMessage("?")]):
            received.append(piece)
    assert "".join(c.content for c in received) == "Let me check é 🌧."
    assert (info.value.error_type, info.value.retryable) == ("stream_interrupted", True)


def test_stream_ending_without_message_stop(server: Any, claude: Any) -> None:
    server.anthropic_stream(events_for_tool_answer()[:6])
    with pytest.raises(ProviderError, match="ended before the answer was complete"):
        list(claude().stream([HumanMessage("?")]))


def test_error_event_in_a_stream(server: Any, claude: Any) -> None:
    events = events_for_tool_answer()[:4]
    events.append({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    server.anthropic_stream(events)
    with pytest.raises(ProviderError) as info:
        list(claude().stream([HumanMessage("?")]))
    err = info.value
    assert (err.error_type, err.retryable, err.provider) == ("overloaded_error", True, "anthropic")
    assert "Overloaded" in str(err)


# -- errors ----------------------------------------------------------------------------------


def error_body(type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def test_429_with_retry_after(server: Any, claude: Any) -> None:
    server.json(
        error_body("rate_limit_error", "Number of request tokens has exceeded your limit"),
        status=429,
        headers={"retry-after": "12", "request-id": "req_rl"},
    )
    with pytest.raises(ProviderError) as info:
        claude().invoke([HumanMessage("?")])
    err = info.value
    assert (err.status_code, err.retry_after, err.retryable) == (429, 12.0, True)
    assert err.error_type == "rate_limit_error"
    assert "exceeded your limit" in str(err) and "req_rl" in str(err)


def test_529_overloaded_is_retryable(server: Any, claude: Any) -> None:
    server.json(error_body("overloaded_error", "Overloaded"), status=529)
    with pytest.raises(ProviderError) as info:
        asyncio.run(claude().ainvoke([HumanMessage("?")]))
    assert (info.value.status_code, info.value.retryable) == (529, True)


def test_x_should_retry_header_is_honoured(server: Any, claude: Any) -> None:
    server.json(error_body("api_error", "nope"), status=500, headers={"x-should-retry": "false"})
    with pytest.raises(ProviderError) as info:
        claude().invoke([HumanMessage("?")])
    assert info.value.retryable is False


def test_400_is_not_retryable(server: Any, claude: Any) -> None:
    server.json(error_body("invalid_request_error", "messages: field required"), status=400)
    with pytest.raises(ProviderError) as info:
        claude().invoke([HumanMessage("?")])
    err = info.value
    assert type(err) is ProviderError
    assert (err.status_code, err.retryable, err.error_type) == (400, False, "invalid_request_error")
    assert "messages: field required" in err.message


def test_401_never_shows_the_key(
    server: Any, caplog: pytest.LogCaptureFixture, claude: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    server.json(error_body("authentication_error", f"invalid x-api-key {KEY}"), status=401)
    llm = claude()
    with pytest.raises(ProviderError) as info:
        list(llm.stream([HumanMessage("?")]))
    err = info.value
    assert (err.status_code, err.error_type) == (401, "authentication_error")
    assert "invalid x-api-key" in str(err)
    for shown in (str(err), repr(err), repr(llm), caplog.text, repr(vars(llm))):
        assert KEY not in shown


def test_prompt_too_long_is_a_context_overflow(server: Any, claude: Any) -> None:
    server.json(
        error_body("invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"),
        status=400,
    )
    with pytest.raises(ContextOverflowError) as info:
        claude().invoke([HumanMessage("?")])
    assert info.value.status_code == 400 and info.value.provider == "anthropic"


def test_timeout(server: Any, claude: Any) -> None:
    release = server.hold()
    with pytest.raises(ProviderError) as info:
        asyncio.run(claude(timeout=0.2).ainvoke([HumanMessage("?")]))
    release.set()
    assert (info.value.error_type, info.value.retryable) == ("timeout", True)


def test_connection_refused(closed_port: int) -> None:
    llm = AnthropicChatModel(
        "claude-haiku-4-5", api_key=KEY, base_url=f"http://127.0.0.1:{closed_port}"
    )
    with pytest.raises(ProviderError) as info:
        list(llm.stream([HumanMessage("?")]))
    assert (info.value.error_type, info.value.retryable) == ("connection_error", True)


def test_malformed_json(server: Any, claude: Any) -> None:
    server.raw(b"<html>502 Bad Gateway</html>", status=200)
    with pytest.raises(ProviderError) as info:
        claude().invoke([HumanMessage("?")])
    assert info.value.error_type == "invalid_response"
    server.sse("event: message_start\ndata: {not json}\n\n")
    with pytest.raises(ProviderError, match="malformed stream event"):
        list(claude().stream([HumanMessage("?")]))


# -- configuration ---------------------------------------------------------------------------


def test_env_vars(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.json(message(text("from env")))
    assert AnthropicChatModel("claude-haiku-4-5").invoke([HumanMessage("?")]).text == "from env"
    assert server.last.headers["x-api-key"] == KEY


def test_missing_key_fails_early() -> None:
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        AnthropicChatModel("claude-sonnet-4-5")


def test_init_chat_model_and_profiles(server: Any) -> None:
    llm = init_chat_model("anthropic:claude-3-5-haiku-20241022", api_key=KEY, base_url=server.url)
    assert isinstance(llm, AnthropicChatModel)
    assert llm.profile == ModelProfile(max_input_tokens=200_000, max_output_tokens=8_192)
    assert llm.max_tokens == 8192
    haiku3 = AnthropicChatModel("claude-3-haiku-20240307", api_key=KEY)
    assert haiku3.max_tokens == 4096
    assert AnthropicChatModel("claude-opus-4-1", api_key=KEY).profile == ModelProfile(
        max_input_tokens=200_000, max_output_tokens=32_000
    )
    assert AnthropicChatModel("claude-next", api_key=KEY).profile is None
    wide = AnthropicChatModel(
        "claude-sonnet-4-5", api_key=KEY, profile={"max_input_tokens": 1_000_000}
    )
    assert wide.profile == ModelProfile(max_input_tokens=1_000_000, max_output_tokens=64_000)
    with pytest.raises(ConfigError, match="max_tokens: expected an int >= 1, got "):
        AnthropicChatModel("claude-sonnet-4-5", api_key=KEY, max_tokens=0)


def test_streamed_thinking_and_server_tool_blocks_are_kept(server: Any, claude: Any) -> None:
    thinking = {"type": "thinking", "thinking": "Let me think.", "signature": "sig-1"}
    search = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "x"}}
    start = message()
    start["content"], start["stop_reason"] = [], None
    events = [
        {"type": "message_start", "message": start},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Let me "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "think."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig-1"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {**search, "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"q": "x"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": text("")},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "42"}},
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    llm = claude()
    server.anthropic_stream(events, split=11)
    streamed = assemble_chunks(list(llm.stream([HumanMessage("?")])))
    server.json(message(thinking, search, text("42")))
    answer = llm.invoke([HumanMessage("?")])

    assert streamed.content == answer.content == [thinking, search, text("42")]
    assert streamed.text == "42"


def test_betas_become_the_anthropic_beta_header_joined_to_the_models_own(
    server: Any, claude: Any
) -> None:
    server.json(message(text("ok")))
    server.json(message(text("ok")))
    llm = claude(headers={"Anthropic-Beta": "files-api-2025-04-14"})
    betas = {"anthropic": {"betas": ["context-management-2025-06-27", "files-api-2025-04-14"]}}
    llm.invoke([HumanMessage("Hi")], provider_options=betas)
    first = server.last
    assert first.headers["anthropic-beta"] == "files-api-2025-04-14,context-management-2025-06-27"
    assert "betas" not in first.body
    llm.invoke([HumanMessage("Hi")])
    assert server.last.headers["anthropic-beta"] == "files-api-2025-04-14"


def test_betas_must_be_a_list_of_names(server: Any, claude: Any) -> None:
    with pytest.raises(ConfigError) as info:
        claude().invoke(
            [HumanMessage("Hi")], provider_options={"anthropic": {"betas": "context-management"}}
        )
    assert str(info.value) == (
        "anthropic: provider option 'betas': expected a list of beta names such as "
        "['context-management-2025-06-27'], got 'context-management'"
    )
    assert server.requests == []
