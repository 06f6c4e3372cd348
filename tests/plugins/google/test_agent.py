"""A plait agent on Gemini, the way a user runs one: the recorded tool-call turn and the
recorded answer to its result, served over loopback HTTP; the agent runs the real tool
and sends the signed call and its result back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from recorded import GEMINI, interactions, needs
from replay_server import ReplayServer, Reply

import plait
from plait_google import THOUGHT_SIGNATURES, GoogleChatModel

KEY = "AIza" + "SyE-plaitTestKeyNotRealzzzzzzzzzzz"

pytestmark = needs(GEMINI)


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = interactions(GEMINI)[name]
    return data


def serve(server: ReplayServer, name: str) -> None:
    response = recorded(name)["response"]
    server.reply(Reply(response["status"], response["body"].encode(), dict(response["headers"])))


@plait.tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny, 22C in {city}"


def _agent(server: ReplayServer) -> plait.Agent:
    model = GoogleChatModel("gemini-2.5-flash", api_key=KEY, base_url=server.url)
    return plait.create_agent(model=model, tools=[get_weather])


def _check_second_request(server: ReplayServer, result: Any) -> None:
    first, second = server.requests
    assert first.body["contents"] == [
        {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]}
    ]
    call_turn = json.loads(recorded("gem_function_call")["response"]["body"])
    signature = call_turn["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    ai = result.messages[1]
    (call,) = ai.tool_calls
    assert ai.response_metadata[THOUGHT_SIGNATURES] == {call.id: signature}
    assert second.body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Paris"},
                        "id": call.id,
                    },
                    "thoughtSignature": signature,
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": call.id,
                        "name": "get_weather",
                        "response": {"output": "Sunny, 22C in Paris"},
                    }
                }
            ],
        },
    ]
    assert result.text == "The weather in Paris is sunny with a temperature of 22C."
    # Both calls' usage, the thinking of the first included.
    assert result.usage == plait.Usage(
        input_tokens=49 + 88, output_tokens=63 + 15, reasoning_tokens=48
    )


def test_a_tool_loop(server: ReplayServer) -> None:
    serve(server, "gem_function_call")
    serve(server, "gem_function_response_roundtrip")
    result = _agent(server).invoke("What's the weather in Paris?")
    _check_second_request(server, result)


def test_a_tool_loop_async_and_checkpointed(server: ReplayServer, tmp_path: Path) -> None:
    """The signature survives a checkpoint: the second model call reads the AI message
    back from SQLite."""
    serve(server, "gem_function_call")
    serve(server, "gem_function_response_roundtrip")
    model = GoogleChatModel("gemini-2.5-flash", api_key=KEY, base_url=server.url)
    agent = plait.create_agent(
        model=model, tools=[get_weather], checkpointer=f"sqlite:///{tmp_path / 'a.db'}"
    )

    async def run() -> Any:
        with agent:
            result = await agent.ainvoke("What's the weather in Paris?", thread_id="t")
            await model.aclose()
            return result

    result = asyncio.run(run())
    _check_second_request(server, result)
    stored = agent.get_state("t")["messages"][1]
    assert (
        stored.response_metadata[THOUGHT_SIGNATURES]
        == result.messages[1].response_metadata[THOUGHT_SIGNATURES]
    )


def test_a_streamed_tool_loop(server: ReplayServer) -> None:
    serve(server, "gem_stream_function_call_thought_signature")
    serve(server, "gem_stream_function_response_roundtrip")

    @plait.tool
    def get_country() -> str:
        """The user's country."""
        return "Mexico"

    model = GoogleChatModel("gemini-3-pro-preview", api_key=KEY, base_url=server.url)
    agent = plait.create_agent(model=model, tools=[get_country])
    tokens = [
        event.data.content
        for event in agent.stream(
            "What is the capital of the user country? Call the tool", mode="messages"
        )
        if isinstance(event.data, plait.AIMessageChunk)
    ]
    assert "".join(tokens) == "The capital of Mexico is Mexico City."
    second = server.requests[1]
    assert second.path == "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    model_turn = second.body["contents"][1]
    recorded_part = recorded("gem_stream_function_response_roundtrip")["request"]["contents"][1][
        "parts"
    ][0]
    (part,) = model_turn["parts"]
    # The API wrote the signature in standard base64; plait sends back exactly that.
    assert (
        part["thoughtSignature"].replace("+", "-").replace("/", "_")
        == recorded_part["thoughtSignature"]
    )


def test_gemini_as_a_fallback_given_by_id(server: ReplayServer) -> None:
    """``model_fallback`` reaches Gemini from an id and its settings when the main model
    fails; the plugin is loaded only then, through the ``plait.models`` entry point."""
    from plait.errors import ProviderError

    def overloaded(messages: Any, tools: Any) -> Any:
        raise ProviderError("overloaded", status_code=529, provider="scripted")

    serve(server, "gem_text_plain")
    fallback = {"model": "google:gemini-2.5-flash", "base_url": server.url, "api_key": KEY}
    agent = plait.create_agent(
        model=plait.ScriptedChatModel([overloaded]),
        middleware=[("model_fallback", {"models": [fallback]})],
        system_prompt="You are a chatbot.",
    )
    result = agent.invoke("Hello!")
    assert result.text == "Hello! How can I help you today?"
    (sent,) = server.requests
    assert sent.body["systemInstruction"] == {"parts": [{"text": "You are a chatbot."}]}
    assert result.messages[-1].response_metadata["provider"] == "google"
