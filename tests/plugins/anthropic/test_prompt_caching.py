"""``anthropic_prompt_caching``: the exact request bodies an Anthropic model receives (the
replay server speaks the Messages API), cache usage reported, the mark moving with the
conversation, ``min_messages_to_cache``, other providers (ignore / warn / raise, and
``model_fallback`` dropping the marks), options and their errors."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest
from replay_server import claude_message

import plait
from plait.errors import ConfigError
from plait.messages import AIMessage, HumanMessage, SystemMessage, Usage
from plait.models.openai import OpenAIChatModel
from plait.testing import scripted
from plait_anthropic import (
    AnthropicChatModel,
    AnthropicPromptCachingMiddleware,
    PromptCachingWarning,
)

MARK = {"type": "ephemeral", "ttl": "5m"}
PROMPT = "You answer weather questions."
USAGE = {
    "input_tokens": 12,
    "output_tokens": 5,
    "cache_creation_input_tokens": 400,
    "cache_read_input_tokens": 2000,
}


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: the city's name.
    """
    return f"cold in {city}"


WEATHER_TOOL = {
    "name": "get_weather",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "the city's name."}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "description": "Current weather in a city.",
}


def answer(*content: dict[str, Any] | str) -> dict[str, Any]:
    return claude_message(*content, usage=USAGE)


def weather_agent(model: AnthropicChatModel, **options: Any) -> Any:
    return plait.create_agent(
        model,
        [get_weather],
        system_prompt=PROMPT,
        middleware=[AnthropicPromptCachingMiddleware(**options)],
        checkpointer="memory",
    )


def script_tool_round(server: Any) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
    server.json(answer(call))
    server.json(answer("It is cold."))


def marks(body: Any) -> int:
    """How many cache_control marks a request body carries, anywhere."""
    return json.dumps(body).count('"cache_control"')


def test_each_call_marks_tools_system_and_the_last_message(server: Any, claude: Any) -> None:
    script_tool_round(server)
    result = weather_agent(claude()).invoke("Weather in Oslo?", thread_id="t")
    assert result.text == "It is cold."
    first, second = (r.body for r in server.requests)
    assert first["system"] == [{"type": "text", "text": PROMPT, "cache_control": MARK}]
    assert first["tools"] == [{**WEATHER_TOOL, "cache_control": MARK}]
    assert first["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Weather in Oslo?", "cache_control": MARK}],
        }
    ]
    # The next call marks the new end of the conversation, the tool result; the question
    # it marked before is sent plain, so it is read from the cache as a prefix.
    assert second["messages"] == [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "cold in Oslo",
                    "cache_control": MARK,
                }
            ],
        },
    ]
    assert second["system"] == first["system"] and second["tools"] == first["tools"]
    assert marks(second) == 3


def test_cache_usage_is_reported_per_message_and_per_run(server: Any, claude: Any) -> None:
    script_tool_round(server)
    result = weather_agent(claude()).invoke("Weather in Oslo?", thread_id="t")
    one = Usage(input_tokens=2412, output_tokens=5, cache_read_tokens=2000, cache_write_tokens=400)
    assert [m.usage for m in result.messages if m.type == "ai"] == [one, one]
    assert result.usage.cache_read_tokens == 4000
    assert result.usage.cache_write_tokens == 800
    assert result.usage.input_tokens == 4824


def test_the_mark_is_not_stored_in_the_thread(server: Any, claude: Any) -> None:
    script_tool_round(server)
    agent = weather_agent(claude())
    agent.invoke("Weather in Oslo?", thread_id="t")
    stored = agent.get_state("t")["messages"]
    assert "cache_control" not in json.dumps(plait.messages.to_json(stored))


def test_one_hour_ttl(server: Any, claude: Any) -> None:
    server.json(answer("hi"))
    weather_agent(claude(), ttl="1h").invoke("hello")
    body = server.last.body
    hour = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"][0]["cache_control"] == hour
    assert body["tools"][0]["cache_control"] == hour
    assert body["messages"][0]["content"][0]["cache_control"] == hour


FIVE = {"type": "ephemeral"}
"""A mark of the user's own without a ttl: the API's default, five minutes."""
HOUR = {"type": "ephemeral", "ttl": "1h"}


def ttls(body: Any) -> list[str]:
    """The ttl of every cache mark in the order the API reads them (tools, system,
    messages), as it checks them: a "1h" mark must not come after a "5m" one."""

    def within(blocks: Any) -> list[str]:
        found: list[str] = []
        for block in blocks if isinstance(blocks, list) else ():
            found += within(block.get("content"))
            if "cache_control" in block:
                found.append(block["cache_control"].get("ttl", "5m"))
        return found

    found = within(body.get("tools")) + within(body.get("system"))
    for turn in body["messages"]:
        found += within(turn["content"])
    return found


def test_one_hour_marks_never_follow_a_five_minute_mark_of_the_users(
    server: Any, claude: Any
) -> None:
    """A mark of the user's own with the default five minutes, on the first tool, a system
    block or an earlier message, used to be followed by the middleware's "1h" marks, and
    Anthropic refused every call (a ttl='1h' cache_control block must not come after a
    ttl='5m' cache_control block). Marks after it now get five minutes too."""
    lookup = plait.tool(provider_options={"anthropic": {"cache_control": FIVE}})(get_weather)

    @plait.tool
    def get_time(city: str) -> str:
        """Current time in a city.

        Args:
            city: the city's name.
        """
        return "noon"

    system = SystemMessage(
        [
            {"type": "text", "text": "Long rules.", "cache_control": FIVE},
            {"type": "text", "text": "Today is Monday."},
        ]
    )
    document = HumanMessage([{"type": "text", "text": "A long report.", "cache_control": FIVE}])
    cases = [
        # where the user's own mark is, the input, the tools, the ttls sent in API order
        ("tools", ["hello"], [lookup, get_time], ["5m", "5m", "5m", "5m"]),
        ("system", [system, HumanMessage("hello")], [get_time], ["1h", "5m", "5m", "5m"]),
        (
            "messages",
            [document, AIMessage("Read."), HumanMessage("hello")],
            [get_time],
            ["1h", "1h", "5m", "5m"],
        ),
    ]
    for place, given, tools, sent in cases:
        server.json(answer("hi"))
        agent = plait.create_agent(
            claude(),
            tools,
            system_prompt=PROMPT,
            middleware=[AnthropicPromptCachingMiddleware(ttl="1h")],
        )
        agent.invoke(given)
        body = server.last.body
        assert ttls(body) == sent, place
        # The middleware's marks are all there, each at its place, only shorter.
        assert body["tools"][-1]["cache_control"]["type"] == "ephemeral", place
        assert body["system"][-1]["cache_control"]["type"] == "ephemeral", place
        assert body["messages"][-1]["content"][-1]["cache_control"] == MARK, place


def test_five_minute_marks_never_precede_a_one_hour_mark_of_the_users(
    server: Any, claude: Any
) -> None:
    """The other way round: a "1h" mark of the user's own in the conversation, and the
    middleware's default "5m" on the tools and the system prompt before it, which the API
    refuses as well. Those marks get the hour: the API bills every token before a "1h" mark
    as an hour's write anyway. The last message, after the user's mark, keeps "5m"."""
    document = HumanMessage([{"type": "text", "text": "A long report.", "cache_control": HOUR}])
    server.json(answer("hi"))
    weather_agent(claude()).invoke([document, AIMessage("Read."), HumanMessage("hello")])
    body = server.last.body
    assert ttls(body) == ["1h", "1h", "1h", "5m"]
    assert body["tools"][-1]["cache_control"] == HOUR
    assert body["system"][-1]["cache_control"] == HOUR
    assert body["messages"][-1]["content"][-1]["cache_control"] == MARK


def test_calls_with_fewer_messages_than_the_minimum_are_not_marked(
    server: Any, claude: Any
) -> None:
    script_tool_round(server)
    weather_agent(claude(), min_messages_to_cache=3).invoke("Weather in Oslo?")
    first, second = (r.body for r in server.requests)
    # system prompt + question = 2 < 3: untouched, exactly what the provider sends anyway.
    assert marks(first) == 0
    assert first["system"] == PROMPT
    assert first["messages"] == [{"role": "user", "content": "Weather in Oslo?"}]
    # system prompt + question + tool call + result = 4
    assert marks(second) == 3


def test_streaming_and_async_calls_are_marked_too(server: Any, claude: Any) -> None:
    start = answer()
    start["content"], start["stop_reason"] = [], None
    server.anthropic_stream(
        [
            {"type": "message_start", "message": start},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hi"},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": USAGE},
            {"type": "message_stop"},
        ]
    )
    agent = weather_agent(claude())

    async def run() -> list[Any]:
        return [event async for event in agent.astream("hello", mode="messages")]

    asyncio.run(run())
    body = server.last.body
    assert body["stream"] is True
    assert marks(body) == 3
    assert body["messages"][0]["content"][0]["cache_control"] == MARK


def test_a_non_anthropic_model_warns_by_default_and_is_left_alone() -> None:
    model = scripted("hi")
    agent = plait.create_agent(model, middleware=[AnthropicPromptCachingMiddleware()])
    with pytest.warns(PromptCachingWarning, match="prompt caching needs an Anthropic model"):
        assert agent.invoke("hello").text == "hi"
    assert not model.requests[0].provider_options


def test_ignore_says_nothing() -> None:
    model = scripted("hi")
    middleware = AnthropicPromptCachingMiddleware(unsupported_model_behavior="ignore")
    agent = plait.create_agent(model, middleware=[middleware])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert agent.invoke("hello").text == "hi"
    assert not model.requests[0].provider_options


def test_raise_refuses_a_non_anthropic_agent_when_it_is_built() -> None:
    with pytest.raises(
        ConfigError,
        match=r"plugin 'anthropic_prompt_caching': prompt caching needs an Anthropic model, "
        r"and scripted:\S+ is not one",
    ):
        plait.create_agent(
            scripted("hi"),
            middleware=[("anthropic_prompt_caching", {"unsupported_model_behavior": "raise"})],
        )


def test_fallback_to_another_provider_sends_no_marks(server: Any, claude: Any) -> None:
    server.json({"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}, 400)
    server.json(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4.1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hi"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
        }
    )
    backup = OpenAIChatModel("gpt-4.1", api_key="k", base_url=server.url + "/v1")
    agent = plait.create_agent(
        claude(),
        [get_weather],
        system_prompt=PROMPT,
        middleware=[
            AnthropicPromptCachingMiddleware(unsupported_model_behavior="ignore"),
            ("model_fallback", {"models": [backup]}),
        ],
    )
    assert agent.invoke("hello").text == "hi"
    anthropic_body, openai_body = (r.body for r in server.requests)
    assert marks(anthropic_body) == 3
    assert server.requests[1].path == "/v1/chat/completions"
    assert marks(openai_body) == 0
    assert "cache_breakpoints" not in json.dumps(openai_body)


def test_options_by_name_and_their_errors(server: Any, claude: Any) -> None:
    server.json(answer("hi"))
    agent = plait.create_agent(
        claude(),
        middleware=[("anthropic_prompt_caching", {"ttl": "1h", "min_messages_to_cache": 1})],
    )
    agent.invoke("hello")
    assert server.last.body["messages"][0]["content"][0]["cache_control"]["ttl"] == "1h"
    for options, problem in [
        ({"ttl": "2h"}, "option 'ttl'"),
        ({"type": "persistent"}, "option 'type'"),
        ({"min_messages_to_cache": -1}, "option 'min_messages_to_cache'"),
        ({"unsupported_model_behavior": "shout"}, "option 'unsupported_model_behavior'"),
        ({"cache_tools": True}, "unknown option 'cache_tools'"),
    ]:
        with pytest.raises(ConfigError, match=f"plugin 'anthropic_prompt_caching': {problem}"):
            plait.create_agent(claude(), middleware=[("anthropic_prompt_caching", options)])


def test_the_class_refuses_what_the_api_would(server: Any, claude: Any) -> None:
    """``AnthropicPromptCachingMiddleware(ttl="2h")`` was built, and every call then sent
    ``"ttl": "2h"``, which Anthropic refuses; the class now says so as the options do."""
    for options, message in [
        ({"ttl": "2h"}, "ttl: expected one of '5m', '1h', got '2h'"),
        ({"type": "persistent"}, "type: expected one of 'ephemeral', got 'persistent'"),
        (
            {"unsupported_model_behavior": "shout"},
            "unsupported_model_behavior: expected one of 'ignore', 'warn', 'raise', got 'shout'",
        ),
    ]:
        with pytest.raises(ValueError) as info:
            AnthropicPromptCachingMiddleware(**options)
        assert str(info.value) == message
    assert not server.requests
