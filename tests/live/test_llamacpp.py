"""plait against a real llama.cpp server through its public API: the ``llamacpp:`` model
id, agents, structured output, built-in middleware by name and ``plait run``.

Skipped unless ``PLAIT_LIVE_LLAMACPP_URL`` names a running server's ``/v1`` (how to run
one offline: docs/providers.md, "A live check against llama.cpp"). Written for a small
model at temperature 0 (Qwen2.5-Coder-0.5B-Instruct): what is checked is what plait sends
and makes of the answers, plus the few answers such a model gives reliably."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from live_tools import calls, get_weather

import plait
from plait.errors import ContextOverflowError, ProviderError
from plait.messages import AIMessageChunk, HumanMessage, assemble_chunks
from plait.models import ChatModel, init_chat_model

URL = os.environ.get("PLAIT_LIVE_LLAMACPP_URL", "")
MODEL = "llamacpp:" + os.environ.get("PLAIT_LIVE_LLAMACPP_MODEL", "local")

pytestmark = pytest.mark.skipif(
    not URL,
    reason="live llama.cpp check: start a server and set PLAIT_LIVE_LLAMACPP_URL to its /v1 "
    "(docs/providers.md, 'A live check against llama.cpp')",
)


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> ChatModel:
    monkeypatch.setenv("LLAMACPP_BASE_URL", URL)
    return init_chat_model(MODEL, temperature=0, timeout=300)


PARIS = [HumanMessage("What is the weather in Paris?")]


def test_a_plain_answer_with_its_usage(llm: ChatModel) -> None:
    answer = llm.invoke([HumanMessage("What is the capital of France? Answer in one word.")])
    assert "paris" in answer.text.lower()
    assert answer.response_metadata["finish_reason"] == "stop"
    assert answer.usage is not None and not answer.usage.estimated
    assert answer.usage.input_tokens > 5 and answer.usage.output_tokens > 0


def test_a_stream_comes_token_by_token_and_assembles_to_the_invoked_answer(
    llm: ChatModel,
) -> None:
    prompt = [HumanMessage("Count from 1 to 10, separated by spaces.")]
    whole = llm.invoke(prompt)
    chunks = list(llm.stream(prompt))
    assert len([chunk for chunk in chunks if chunk.content]) >= 10
    streamed = assemble_chunks(chunks)
    assert streamed.text == whole.text
    assert "1 2 3" in streamed.text
    assert streamed.response_metadata["finish_reason"] == "stop"
    # llama-cpp-python sends no usage in a stream (it ignores stream_options); what is
    # sent must be real counts.
    assert streamed.usage is None or streamed.usage.output_tokens > 0

    async def collect() -> list[AIMessageChunk]:
        return [chunk async for chunk in llm.astream(prompt)]

    assert assemble_chunks(asyncio.run(collect())).text == whole.text


@pytest.mark.parametrize("choice", ["get_weather", "required"])
def test_a_forced_tool_call_invoked_and_streamed(llm: ChatModel, choice: str) -> None:
    # "required" with one tool goes out as the tool's name: llama-cpp-python answers
    # "required" with a 500.
    for answer in (
        llm.invoke(PARIS, tools=[get_weather], tool_choice=choice),
        assemble_chunks(list(llm.stream(PARIS, tools=[get_weather], tool_choice=choice))),
    ):
        [call] = answer.tool_calls
        assert (call.name, call.args, call.error) == ("get_weather", {"city": "Paris"}, None)
        assert call.id
        assert answer.response_metadata["finish_reason"] == "tool_calls"


@plait.wrap_model_call
def call_the_tool_first(request: Any, handler: Any) -> Any:
    """A small model does not choose a tool reliably: the first call must, later ones
    answer in text."""
    answered = any(message.type == "tool" for message in request.messages)
    return handler(request.override(tool_choice="none" if answered else "required"))


def test_an_agent_calls_the_tool_and_answers(llm: ChatModel) -> None:
    calls.clear()
    agent = plait.create_agent(model=llm, tools=[get_weather], middleware=[call_the_tool_first])
    result = agent.invoke("What is the weather in Paris?")
    assert calls == ["Paris"]
    assert [m.type for m in result.messages] == ["human", "ai", "tool", "ai"]
    assert result.messages[2].text == "It is 21 degrees and sunny in Paris."
    assert result.text and not result.messages[-1].tool_calls
    assert result.usage.input_tokens > 0 and not result.usage.estimated


def test_a_streamed_agent_run_still_counts_its_usage(llm: ChatModel) -> None:
    agent = plait.create_agent(model=llm)
    stream = agent.stream("Say hello.", mode="messages")
    chunks = [event.data for event in stream if isinstance(event.data, AIMessageChunk)]
    reported = assemble_chunks(chunks).usage
    usage = stream.result.usage
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    # No usage in the stream: plait's estimate, marked so, never zero.
    assert usage.estimated is (reported is None)


@attrs.frozen
class Country:
    name: str
    capital: str


def test_structured_output_into_an_attrs_class(llm: ChatModel) -> None:
    agent = plait.create_agent(model=llm, response_format=Country)
    result = agent.invoke("Give the name and the capital of France.")
    assert isinstance(result.structured_response, Country)
    assert result.structured_response.capital == "Paris"


def test_structured_output_from_a_json_schema(llm: ChatModel) -> None:
    schema = {
        "title": "Answer",
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    result = plait.create_agent(model=llm, response_format=schema).invoke(
        "What is the capital of France?"
    )
    assert set(result.structured_response) == {"answer"}
    assert "Paris" in result.structured_response["answer"]


def test_builtin_middleware_by_name(llm: ChatModel) -> None:
    pytest.importorskip("plait_pii")
    pytest.importorskip("plait_model_call_limit")
    agent = plait.create_agent(
        model=llm,
        middleware=[("pii", {"pii_type": "email", "strategy": "redact"})],
    )
    result = agent.invoke("My email is jane@example.com. What is the capital of France?")
    assert result.messages[0].text.startswith("My email is [REDACTED_EMAIL].")
    assert "jane@example.com" not in json.dumps([m.text for m in result.messages])

    calls.clear()
    limited = plait.create_agent(
        model=llm,
        tools=[get_weather],
        middleware=[("model_call_limit", {"run_limit": 1}), call_the_tool_first],
    )
    result = limited.invoke("What is the weather in Paris?")
    assert calls == ["Paris"]  # the one model call asked for it
    assert result.text.startswith("Model call limit reached: run limit (1/1).")


def test_the_context_window_overflow(llm: ChatModel) -> None:
    too_long = [HumanMessage("hello " * 5000)]
    with pytest.raises(ContextOverflowError):
        llm.invoke(too_long)
    # Streamed: llama-server refuses it up front; llama-cpp-python starts a stream and
    # ends it empty, logging why. Either way an error that is not retried.
    with pytest.raises(ProviderError) as caught:
        list(llm.stream(too_long))
    assert caught.value.retryable is False


def test_plait_run_with_an_agent_file(tmp_path: Path) -> None:
    agent_file = tmp_path / "agent.toml"
    agent_file.write_text(
        f'[agent]\nmodel = "{MODEL}"\nmodel_settings = {{ temperature = 0 }}\n'
        'system_prompt = "You answer in one word."\n'
    )
    env = {**os.environ, "LLAMACPP_BASE_URL": URL}
    run = [sys.executable, "-m", "plait", "run", str(agent_file)]
    prompt = "What is the capital of France?"
    done = subprocess.run(
        [*run, prompt], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Paris" in done.stdout
    done = subprocess.run(
        [*run, "--json", prompt], capture_output=True, text=True, env=env, timeout=300
    )
    result = json.loads(done.stdout)
    assert "Paris" in result["text"]
    assert result["usage"]["input_tokens"] > 0
