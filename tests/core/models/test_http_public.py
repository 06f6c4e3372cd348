"""``plait.models.http``: the public surface a provider plugin builds on, and what it
does for shapes a third party's API brings (Google's error bodies and keys, a JSON answer
with native blocks where a stream was asked for)."""

from __future__ import annotations

import json

from replay_server import ReplayServer, claude_message

import plait.models._http as private
import plait.models.http as http
from plait.messages import AIMessage, HumanMessage, assemble_chunks
from plait.models import ChatModel
from plait_anthropic import AnthropicChatModel


def test_every_public_name_is_the_kernel_object() -> None:
    for name in http.__all__:
        value = getattr(http, name)
        assert getattr(private, name, value) is value
    assert issubclass(http.HTTPChatModel, ChatModel)
    assert http.message_to_chunk.__module__ == "plait.models.base"


def test_google_error_body_names_its_status_as_the_type() -> None:
    body = {"error": {"code": 404, "message": "models/x is not found", "status": "NOT_FOUND"}}
    details = http.error_details(json.dumps(body).encode())
    assert details == http.ErrorDetails("models/x is not found", "NOT_FOUND", None)
    # A type or a named code still wins over the status.
    body["error"]["type"] = "not_found_error"
    assert http.error_details(json.dumps(body).encode()).type == "not_found_error"


def test_message_to_chunk_keeps_native_blocks() -> None:
    message = AIMessage(
        [
            {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
            {"type": "text", "text": "Hi"},
        ],
        tool_calls=[{"name": "look", "args": {"q": 1}, "id": "call_1"}],
        id="m1",
    )
    assert assemble_chunks([http.message_to_chunk(message)]) == message
    plain = AIMessage("just text", id="m2")
    chunk = http.message_to_chunk(plain)
    assert chunk.content == "just text" and chunk.blocks == ()
    assert assemble_chunks([chunk]) == plain


def test_a_json_answer_to_a_stream_keeps_its_thinking_blocks(server: ReplayServer) -> None:
    answer = claude_message(
        {"type": "thinking", "thinking": "Let me see.", "signature": "c2ln"}, "Paris."
    )
    server.json(answer)
    server.json(answer)
    model = AnthropicChatModel("claude-sonnet-4-5", base_url=server.url, api_key="k")
    streamed = assemble_chunks(model.stream([HumanMessage("Capital of France?")]))
    invoked = model.invoke([HumanMessage("Capital of France?")])
    assert streamed.content == invoked.content
    assert isinstance(streamed.content, list) and streamed.content[0]["type"] == "thinking"
    assert streamed.text == "Paris."
