"""Agent scenarios against the real Gemini API. Skipped unless ``PLAIT_LIVE=1`` and
``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` is set; the model is ``PLAIT_LIVE_GOOGLE_MODEL``
(default ``gemini-2.5-flash``), plus ``gemini-3-flash-preview`` for the signed tool loop.
Assertions are about structure, never wording."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import attrs
import pytest
from live_tools import calls, get_weather

import plait
from plait.messages import AIMessageChunk, HumanMessage, assemble_chunks
from plait_google import THOUGHT_SIGNATURES, GoogleChatModel

# Read at import: the directory's autouse fixture clears them for the offline tests.
KEY = os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY") or ""
LIVE = os.environ.get("PLAIT_LIVE") == "1"
MODEL = os.environ.get("PLAIT_LIVE_GOOGLE_MODEL", "gemini-2.5-flash")

pytestmark = [
    pytest.mark.skipif(not LIVE, reason="live provider tests run with PLAIT_LIVE=1"),
    pytest.mark.skipif(LIVE and not KEY, reason="no GOOGLE_API_KEY or GEMINI_API_KEY"),
]


def llm(model: str = MODEL, **settings: Any) -> GoogleChatModel:
    return GoogleChatModel(model, api_key=KEY, timeout=120, **settings)


@pytest.mark.parametrize("model", [MODEL, "gemini-3-flash-preview"])
def test_tool_loop_with_thoughts(model: str) -> None:
    calls.clear()
    agent = plait.create_agent(
        model=llm(model, thinking_config={"includeThoughts": True}),
        tools=[get_weather],
        system_prompt="Use the get_weather tool to answer questions about the weather.",
    )
    result = agent.invoke("What is the weather in Paris right now?")
    assert calls, "the model never called get_weather"
    kinds = [m.type for m in result.messages]
    assert kinds[0] == "human" and "tool" in kinds and kinds[-1] == "ai"
    assert result.text and result.usage is not None and result.usage.input_tokens > 0
    if model.startswith("gemini-3"):
        asked = next(m for m in result.messages if m.type == "ai" and m.tool_calls)
        assert asked.response_metadata.get(THOUGHT_SIGNATURES)


def test_stream_assembles() -> None:
    chunks = list(llm().stream([HumanMessage("Count from 1 to 20, separated by spaces.")]))
    message = assemble_chunks(chunks)
    assert message.text and message.usage is not None
    assert message.response_metadata["finish_reason"] == "STOP"


def test_streamed_tool_call() -> None:
    async def run() -> list[AIMessageChunk]:
        model = llm()
        chunks = [
            c
            async for c in model.astream(
                [HumanMessage("Weather in Oslo?")], tools=[get_weather], tool_choice="get_weather"
            )
        ]
        await model.aclose()
        return chunks

    message = assemble_chunks(asyncio.run(run()))
    (call,) = message.tool_calls
    assert call.name == "get_weather" and isinstance(call.args.get("city"), str)


@attrs.frozen
class Report:
    city: str
    temperature_celsius: float


def test_structured_output() -> None:
    agent = plait.create_agent(model=llm(), tools=[get_weather], response_format=Report)
    result: Any = agent.invoke("Give me a weather report for Rome.")
    assert isinstance(result.structured_response, Report)
    assert result.structured_response.city
