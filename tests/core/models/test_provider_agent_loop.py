"""Whole agent runs over the HTTP providers: the loop, tools and structured output work
end to end against the loopback server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import attrs
import pytest

import plait
from plait.messages import AIMessageChunk
from plait.models.openai import OpenAIChatModel
from plait_anthropic import AnthropicChatModel


@plait.tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


def openai_answer(content: str | None, calls: tuple[tuple[str, str, str], ...] = ()) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4.1-mini",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }


def test_agent_runs_a_tool_loop_over_openai(server: Any) -> None:
    server.json(openai_answer(None, (("call_1", "get_weather", '{"city": "Paris"}'),)))
    server.json(openai_answer("It is sunny in Paris."))
    llm = OpenAIChatModel("gpt-4.1-mini", base_url=server.url + "/v1", api_key="sk-loop-0000000")
    agent = plait.create_agent(model=llm, tools=[get_weather], system_prompt="Be helpful.")
    result = agent.invoke("Weather in Paris?")
    assert [(m.type, m.text) for m in result.messages] == [
        ("human", "Weather in Paris?"),
        ("ai", ""),
        ("tool", "sunny in Paris"),
        ("ai", "It is sunny in Paris."),
    ]
    second = server.requests[1].body
    assert second["messages"][0] == {"role": "system", "content": "Be helpful."}
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "sunny in Paris",
    }
    assert second["tools"][0]["function"]["name"] == "get_weather"
    assert result.usage is not None and result.usage.input_tokens == 20


def test_agent_streams_over_openai(server: Any) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c",
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    server.openai_stream(
        [
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
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Oslo"}'}}]}),
            chunk({}, "tool_calls"),
        ],
        split=5,
    )
    server.openai_stream([chunk({"content": "Sunny "}), chunk({"content": "Oslo."}, "stop")])
    llm = OpenAIChatModel("gpt-4.1-mini", base_url=server.url + "/v1")
    agent = plait.create_agent(model=llm, tools=[get_weather])
    texts = [
        event.data.content
        for event in agent.stream("Weather in Oslo?", mode="messages")
        if isinstance(event.data, AIMessageChunk) and event.data.content
    ]
    assert texts == ["Sunny ", "Oslo."]
    assert server.requests[1].body["messages"][-1]["content"] == "sunny in Oslo"


@attrs.frozen
class Report:
    city: str
    sky: str


def test_agent_structured_output_over_anthropic(server: Any) -> None:
    def message(*content: dict[str, Any], stop: str) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "model": "claude-haiku-4-5",
            "content": list(content),
            "stop_reason": stop,
            "usage": {"input_tokens": 5, "output_tokens": 3},
        }

    server.json(
        message(
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}},
            stop="tool_use",
        )
    )
    server.json(
        message(
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "structured_response",
                "input": {"city": "Rome", "sky": "clear"},
            },
            stop="tool_use",
        )
    )
    llm = AnthropicChatModel("claude-haiku-4-5", base_url=server.url, api_key="k" * 20)
    agent = plait.create_agent(model=llm, tools=[get_weather], response_format=Report)

    result = asyncio.run(agent.ainvoke("Weather report for Rome"))
    assert result.structured_response == Report("Rome", "clear")
    assert json.loads(result.text) == {"city": "Rome", "sky": "clear"}
    first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in first["tools"]] == ["get_weather", "structured_response"]
    assert second["messages"][-1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in Rome"}],
    }


def test_tool_strategy_forces_the_answer_tool_over_openai(server: Any) -> None:
    server.json(openai_answer(None, (("call_1", "Report", '{"city": "Rome", "sky": "clear"}'),)))
    llm = OpenAIChatModel(
        "local-model",
        base_url=server.url + "/v1",
        profile={"structured_output": False},
    )
    agent = plait.create_agent(model=llm, response_format=Report)
    result = agent.invoke("Weather report for Rome")
    assert result.structured_response == Report("Rome", "clear")
    sent = server.requests[0].body
    assert "response_format" not in sent
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "Report"}}


def test_tool_strategy_beside_tools_requires_a_tool_call(server: Any) -> None:
    server.json(openai_answer(None, (("call_1", "get_weather", '{"city": "Rome"}'),)))
    server.json(openai_answer(None, (("call_2", "Report", '{"city": "Rome", "sky": "sunny"}'),)))
    llm = OpenAIChatModel("m", base_url=server.url + "/v1", profile={"structured_output": False})
    agent = plait.create_agent(model=llm, tools=[get_weather], response_format=Report)
    assert agent.invoke("Rome?").structured_response == Report("Rome", "sunny")
    assert [r.body["tool_choice"] for r in server.requests] == ["required", "required"]


def test_tool_strategy_text_answer_is_a_structured_output_error(server: Any) -> None:
    server.json(openai_answer("It is clear in Rome."))
    llm = OpenAIChatModel(
        "m",
        base_url=server.url + "/v1",
        profile={"structured_output": False},
        compat={"tool_choice_required": False},
    )
    agent = plait.create_agent(model=llm, response_format=Report, output_retries=0)
    with pytest.raises(plait.errors.StructuredOutputError, match=r"answered in text.*'Report'"):
        agent.invoke("Weather report for Rome")
