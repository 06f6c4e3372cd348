"""Agent scenarios against the real APIs. Skipped unless ``PLAIT_LIVE=1`` and the
provider's key (or, for openai, ``OPENAI_BASE_URL``) is set. Assertions are about
structure (a tool was called with a city, the stream assembled, the answer fits the
schema), never about wording."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import attrs
import pytest
from live_tools import calls, get_weather

import plait
from plait.messages import AIMessageChunk, HumanMessage, assemble_chunks
from plait.models import ChatModel, init_chat_model

# Read at import: the directory's autouse fixture clears these for the offline tests.
ENV = {k: v for k, v in os.environ.items() if k.startswith(("OPENAI_", "ANTHROPIC_"))}
LIVE = os.environ.get("PLAIT_LIVE") == "1"

PROVIDERS = []
if ENV.get("OPENAI_API_KEY") or ENV.get("OPENAI_BASE_URL"):
    PROVIDERS.append("openai:" + os.environ.get("PLAIT_LIVE_OPENAI_MODEL", "gpt-4.1-mini"))
if ENV.get("OPENAI_API_KEY") and not ENV.get("OPENAI_BASE_URL"):
    model = os.environ.get("PLAIT_LIVE_OPENAI_RESPONSES_MODEL", "gpt-4.1-mini")
    PROVIDERS.append("openai-responses:" + model)
if ENV.get("ANTHROPIC_API_KEY"):
    PROVIDERS.append(
        "anthropic:" + os.environ.get("PLAIT_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5")
    )

pytestmark = [
    pytest.mark.skipif(not LIVE, reason="live provider tests run with PLAIT_LIVE=1"),
    pytest.mark.skipif(LIVE and not PROVIDERS, reason="no provider key in the environment"),
]


@pytest.fixture(params=PROVIDERS or ["none"])
def llm(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ChatModel:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    return init_chat_model(request.param, timeout=120)


def test_tool_loop(llm: ChatModel) -> None:
    calls.clear()
    agent = plait.create_agent(
        model=llm,
        tools=[get_weather],
        system_prompt="Use the get_weather tool to answer questions about the weather.",
    )
    result = agent.invoke("What is the weather in Paris right now?")
    assert calls, "the model never called get_weather"
    kinds = [m.type for m in result.messages]
    assert kinds[0] == "human" and "tool" in kinds and kinds[-1] == "ai"
    assert result.text
    assert result.usage is not None and result.usage.input_tokens > 0


def test_stream_assembles(llm: ChatModel) -> None:
    chunks = list(llm.stream([HumanMessage("Count from 1 to 5, separated by spaces.")]))
    assert len(chunks) > 1
    message = assemble_chunks(chunks)
    assert message.text and message.usage is not None
    assert message.response_metadata["finish_reason"]


def test_streamed_tool_call(llm: ChatModel) -> None:
    async def run() -> list[AIMessageChunk]:
        return [
            c
            async for c in llm.astream(
                [HumanMessage("Weather in Oslo?")], tools=[get_weather], tool_choice="get_weather"
            )
        ]

    message = assemble_chunks(asyncio.run(run()))
    (call,) = message.tool_calls
    assert call.name == "get_weather" and call.error is None
    assert isinstance(call.args.get("city"), str)


@attrs.frozen
class Report:
    city: str
    temperature_celsius: float


def test_structured_output(llm: ChatModel) -> None:
    agent = plait.create_agent(model=llm, tools=[get_weather], response_format=Report)
    result: Any = agent.invoke("Give me a weather report for Rome.")
    assert isinstance(result.structured_response, Report)
    assert result.structured_response.city
