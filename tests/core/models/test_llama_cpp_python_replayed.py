"""The openai provider's ``llamacpp:`` preset against the bytes llama-cpp-python's server
(0.3.36, ``--chat_format chatml-function-calling``) really sent, captured from a live run
with Qwen2.5-Coder-0.5B and replayed on loopback (``tests/data/llama_cpp_python/``, its
README says which request each answer is to)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from replay_server import ReplayServer, captured

import plait
from plait.errors import ProviderError
from plait.messages import HumanMessage, assemble_chunks
from plait.models import init_chat_model


@plait.tool
def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


@pytest.fixture
def llm(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.url + "/v1")
    return init_chat_model("llamacpp:qwen", temperature=0)


EMPTY_STREAM = (
    "openai: the server ended the stream without sending anything; a server that fails "
    "after starting to stream does this (llama-cpp-python, for a prompt longer than its "
    "context window or a tool call it cannot stream): its log says why"
)


def test_a_stream_ended_before_its_first_byte_says_so_and_is_not_retried(
    server: ReplayServer, llm: Any
) -> None:
    # Asked to stream a prompt longer than its n_ctx, the server answers 200 and an empty
    # event stream (the ValueError goes to its log): not a connection cut, and the same
    # request would fail again.
    server.reply(captured("llama_cpp_python/overflow_stream"))
    with pytest.raises(ProviderError) as caught:
        list(llm.stream([HumanMessage("hello " * 5000)]))
    assert str(caught.value) == EMPTY_STREAM
    assert (caught.value.error_type, caught.value.retryable) == ("empty_stream", False)

    async def drain() -> None:
        async for _ in llm.astream([HumanMessage("hello " * 5000)]):
            pass

    server.reply(captured("llama_cpp_python/overflow_stream"))
    with pytest.raises(ProviderError, match="without sending anything") as caught_async:
        asyncio.run(drain())
    assert caught_async.value.retryable is False


def test_required_with_one_tool_names_it_and_the_forced_stream_assembles(
    server: ReplayServer, llm: Any
) -> None:
    # The server answers "required" with a 500 and "auto" with text (streamed: the call's
    # name as text); naming the one tool forces the call, streamed as these bytes.
    server.reply(captured("llama_cpp_python/named_tool_stream"))
    chunks = list(
        llm.stream(
            [HumanMessage("What is the weather in Paris?")],
            tools=[get_weather],
            tool_choice="required",
        )
    )
    assert server.last.body["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_weather"},
    }
    message = assemble_chunks(chunks)
    [call] = message.tool_calls
    assert (call.name, call.args, call.error) == ("get_weather", {"city": "Paris"}, None)
    assert call.id == "call__0_get_weather_cmpl-5beb57e4-6591-4126-8e4a-3843212613f0"
    assert message.response_metadata["finish_reason"] == "tool_calls"
    assert message.usage is None  # the server sends no usage in streams
