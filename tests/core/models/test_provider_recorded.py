"""The providers on traffic recorded from the real OpenAI and Anthropic APIs (and
OpenAI-compatible services), read from ``../shared/recorded/`` and served over loopback
HTTP — streams in pieces down to one byte.

Every recorded stream must assemble to exactly what ``invoke`` returns for the same
answer: the non-streamed body is rebuilt from the stream's events the way the APIs
document their accumulation, served, and compared field by field.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import recorded
from replay_server import ReplayServer, Reply, split_bytes

from plait.errors import ConfigError, ProviderError
from plait.messages import AIMessage, HumanMessage, assemble_chunks
from plait.models.openai import OpenAIChatModel
from plait_anthropic import AnthropicChatModel

pytestmark = recorded.needs(recorded.PROVIDERS)
INTERACTIONS = recorded.interactions(recorded.PROVIDERS)
_is_stream = recorded.is_stream
sse_events = recorded.sse_events


STREAMS = sorted(name for name, item in INTERACTIONS.items() if _is_stream(item))
CUT_SHORT = "ant_stream_truncated_tool_json"
"""A tool input cut mid-JSON by ``max_tokens``: no non-streamed answer has that form, so
it is checked on its own below rather than against ``invoke``."""
WHOLE_STREAMS = [name for name in STREAMS if name != CUT_SHORT]
OPENAI_STREAMS = [name for name in STREAMS if INTERACTIONS[name]["provider"] == "openai"]
ANTHROPIC_STREAMS = [name for name in STREAMS if INTERACTIONS[name]["provider"] == "anthropic"]


def body(name: str) -> str:
    text: str = INTERACTIONS[name]["response"]["body"]
    return text


# -- the non-streamed body a stream stands for --------------------------------------------


def openai_whole(text: str) -> dict[str, Any]:
    """A Chat Completions body from its chunks: deltas joined per choice, tool-call
    fragments joined per index, the last finish reason and usage."""
    whole: dict[str, Any] = {"object": "chat.completion", "choices": []}
    choices: dict[int, dict[str, Any]] = {}
    for _, data in sse_events(text):
        if data.strip() == "[DONE]":
            continue
        chunk = json.loads(data)
        for key in ("id", "model", "system_fingerprint", "service_tier", "provider"):
            if chunk.get(key) is not None:
                whole.setdefault(key, chunk[key])
        if chunk.get("usage"):
            whole["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or ():
            slot = choices.setdefault(
                choice.get("index", 0),
                {"index": choice.get("index", 0), "message": {"role": "assistant"}},
            )
            message = slot["message"]
            delta = choice.get("delta") or {}
            for key in ("content", "refusal", "reasoning"):
                if delta.get(key):
                    message[key] = message.get(key, "") + delta[key]
            for call in delta.get("tool_calls") or ():
                calls = message.setdefault("tool_calls", [])
                while len(calls) <= call["index"]:
                    calls.append({"type": "function", "function": {"name": "", "arguments": ""}})
                target = calls[call["index"]]
                if call.get("id"):
                    target["id"] = call["id"]
                function = call.get("function") or {}
                # Some servers repeat the name in every fragment; it is given once.
                target["function"]["name"] = target["function"]["name"] or function.get("name")
                target["function"]["arguments"] += function.get("arguments") or ""
            for key in ("finish_reason", "native_finish_reason"):
                if choice.get(key) is not None:
                    slot[key] = choice[key]
            logprobs = choice.get("logprobs")
            if logprobs and logprobs.get("content") is not None:
                slot.setdefault("logprobs", {"content": []})["content"] += logprobs["content"]
    whole["choices"] = [choices[index] for index in sorted(choices)]
    for choice in whole["choices"]:
        choice["message"].setdefault("content", None)
    return whole


def anthropic_whole(text: str) -> dict[str, Any]:
    """A Messages API body from its events: each block from its start and deltas, the
    stop reason and usage from ``message_delta``."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for name, data in sse_events(text):
        event = json.loads(data)
        if name == "message_start":
            message = dict(event["message"])
            message["content"] = []
        elif name == "content_block_start":
            message["content"].append(dict(event["content_block"]))
        elif name == "content_block_delta":
            block = message["content"][event["index"]]
            delta = event["delta"]
            kind = delta["type"]
            if kind == "text_delta":
                block["text"] += delta["text"]
            elif kind == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif kind == "signature_delta":
                block["signature"] = block.get("signature", "") + delta["signature"]
            elif kind == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
            elif kind == "citations_delta":
                block["citations"] = (block.get("citations") or []) + [delta["citation"]]
        elif name == "content_block_stop":
            raw = partial.pop(event["index"], None)
            if raw is not None:
                message["content"][event["index"]]["input"] = json.loads(raw) if raw else {}
        elif name == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message.get("usage", {}), **event.get("usage", {})}
    return message


def anthropic_events(message: dict[str, Any], piece: int = 7) -> str:
    """A recorded (non-streamed) Messages answer as the stream the API sends for it:
    text in deltas after its citations, tool input as JSON fragments, thinking and its
    signature as deltas, other blocks whole at their start."""
    lines: list[tuple[str, dict[str, Any]]] = []
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    lines.append(("message_start", {"type": "message_start", "message": start}))
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            if "citations" in block:
                opening["citations"] = None
            deltas += [
                {"type": "citations_delta", "citation": c} for c in block.get("citations") or ()
            ]
            deltas += [
                {"type": "text_delta", "text": block["text"][i : i + piece]}
                for i in range(0, len(block["text"]), piece)
            ]
        elif kind in ("tool_use", "server_tool_use"):
            opening = {**block, "input": {}}
            raw = json.dumps(block["input"])
            deltas += [
                {"type": "input_json_delta", "partial_json": raw[i : i + piece]}
                for i in range(0, len(raw), piece)
            ]
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas += [{"type": "thinking_delta", "thinking": block["thinking"]}]
            deltas += [{"type": "signature_delta", "signature": block["signature"]}]
        else:
            opening = block
        lines.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        lines += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        lines.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": message["usage"],
    }
    lines.append(("message_delta", end))
    lines.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in lines)


# -- helpers -----------------------------------------------------------------------------


def model_for(provider: str, server: ReplayServer) -> OpenAIChatModel | AnthropicChatModel:
    if provider == "openai":
        return OpenAIChatModel("gpt-4o", api_key="test-key", base_url=server.url + "/v1")
    return AnthropicChatModel("claude-sonnet-4-5", api_key="test-key", base_url=server.url)


def serve_stream(server: ReplayServer, text: str, size: int | None) -> None:
    data = text.encode("utf-8")
    pieces = split_bytes(data, size) if size else (data,)
    server.reply(Reply(200, b"", {"content-type": "text/event-stream"}, pieces=pieces))


def comparable(message: AIMessage) -> dict[str, Any]:
    """Everything a user reads from an answer, but its (per-call) id."""
    return {
        "content": message.content,
        "tool_calls": message.tool_calls,
        "usage": message.usage,
        "response_metadata": message.response_metadata,
    }


def streamed(model: Any, size: int | None, server: ReplayServer, text: str) -> AIMessage:
    serve_stream(server, text, size)
    return assemble_chunks(model.stream([HumanMessage("hi")]))


def invoked(model: Any, server: ReplayServer, whole: dict[str, Any]) -> AIMessage:
    server.json(whole)
    answer: AIMessage = model.invoke([HumanMessage("hi")])
    return answer


# -- every recorded stream equals invoke ---------------------------------------------------


@pytest.mark.parametrize("name", WHOLE_STREAMS)
def test_every_recorded_stream_assembles_to_what_invoke_returns(
    name: str, server: ReplayServer
) -> None:
    item = INTERACTIONS[name]
    text = body(name)
    build = openai_whole if item["provider"] == "openai" else anthropic_whole
    model = model_for(item["provider"], server)
    expected = comparable(invoked(model, server, build(text)))
    for size in (None, 1, 3, 64):
        assert comparable(streamed(model, size, server, text)) == expected, (name, size)


@pytest.mark.parametrize("name", STREAMS)
def test_every_recorded_stream_assembles_the_same_through_astream(
    name: str, server: ReplayServer
) -> None:
    item = INTERACTIONS[name]
    model = model_for(item["provider"], server)
    serve_stream(server, body(name), None)
    whole = assemble_chunks(model.stream([HumanMessage("hi")]))

    async def run() -> AIMessage:
        serve_stream(server, body(name), 1)
        return assemble_chunks([c async for c in model.astream([HumanMessage("hi")])])

    assert comparable(asyncio.run(run())) == comparable(whole)


# -- what the recordings say ---------------------------------------------------------------


def test_tool_input_cut_by_max_tokens_is_a_call_error(server: ReplayServer) -> None:
    model = model_for("anthropic", server)
    answer = streamed(model, 1, server, body(CUT_SHORT))
    assert answer.response_metadata["finish_reason"] == "max_tokens"
    (call,) = answer.tool_calls
    assert call.name == "make_file" and call.args == {}
    assert call.error is not None and "not valid JSON" in call.error


def test_streamed_refusal_is_the_whole_refusal(server: ReplayServer) -> None:
    model = model_for("openai", server)
    for size in (1, 5, None):
        answer = streamed(model, size, server, body("oai_stream_refusal"))
        assert answer.response_metadata["refusal"] == (
            "I'm sorry, I can't assist with that request."
        )
        assert answer.content == ""


def test_non_streamed_refusal_is_kept(server: ReplayServer) -> None:
    model = model_for("openai", server)
    server.raw(body("oai_refusal").encode())
    answer = model.invoke([HumanMessage("hi")])
    assert answer.response_metadata["refusal"] == "I'm very sorry, but I can't assist with that."


def test_openai_reasoning_tokens_and_service_tier(server: ReplayServer) -> None:
    model = model_for("openai", server)
    server.raw(body("oai_reasoning_tokens").encode())
    answer = model.invoke([HumanMessage("hi")])
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (7, 87)
    assert answer.usage.reasoning_tokens == 64
    assert answer.response_metadata["service_tier"] == "default"


def test_openai_cache_writes(server: ReplayServer) -> None:
    model = model_for("openai", server)
    server.raw(body("oai_prompt_cache_write").encode())
    usage = model.invoke([HumanMessage("hi")]).usage
    assert usage is not None
    assert (usage.input_tokens, usage.cache_write_tokens, usage.cache_read_tokens) == (
        4020,
        4012,
        0,
    )


def test_compatible_servers_reasoning_text(server: ReplayServer) -> None:
    model = model_for("openai", server)
    server.raw(body("compat_reasoning_field").encode())
    answer = model.invoke([HumanMessage("hi")])
    assert answer.content == "The capital of France is **Paris**."
    assert answer.response_metadata["reasoning"].startswith("User asks simple question")


def test_openrouter_429_gives_the_upstream_reason(server: ReplayServer) -> None:
    model = model_for("openai", server)
    server.raw(body("compat_error_429_int_code").encode(), status=429)
    with pytest.raises(ProviderError) as caught:
        model.invoke([HumanMessage("hi")])
    assert caught.value.status_code == 429 and caught.value.retryable
    assert "Provider returned error" in str(caught.value)
    assert "temporarily rate-limited upstream" in str(caught.value)


def test_anthropic_error_body_request_id(server: ReplayServer) -> None:
    model = model_for("anthropic", server)
    server.raw(body("ant_error_400_invalid_request").encode(), status=400)
    with pytest.raises(ProviderError) as caught:
        model.invoke([HumanMessage("hi")])
    assert caught.value.request_id == "req_011Ca7jT9AHpgXgdv8igm4z9"
    assert "req_011Ca7jT9AHpgXgdv8igm4z9" in str(caught.value)
    assert caught.value.error_type == "invalid_request_error" and not caught.value.retryable


def test_several_choices_are_refused_clearly(server: ReplayServer) -> None:
    model = model_for("openai", server)
    request = INTERACTIONS["oai_three_choices"]["request"]
    with pytest.raises(ConfigError, match=r"openai: n=3 asks for several answers"):
        model.invoke([HumanMessage("hi")], n=request["n"])
    with pytest.raises(ConfigError, match=r"n=3"):
        model.invoke([HumanMessage("hi")], provider_options={"openai": {"n": 3}})
    assert server.requests == []
    # A server that sends several anyway: the first is the answer.
    server.raw(body("oai_three_choices").encode())
    answer = model.invoke([HumanMessage("hi")])
    assert json.loads(answer.text)["temperature"] == 64


def test_anthropic_cache_write_lifetimes_and_tier(server: ReplayServer) -> None:
    model = model_for("anthropic", server)
    server.raw(body("ant_cache_write_and_read").encode())
    answer = model.invoke([HumanMessage("hi")])
    usage = answer.usage
    assert usage is not None
    assert (usage.cache_write_tokens, usage.cache_write_5m_tokens, usage.cache_write_1h_tokens) == (
        418,
        418,
        0,
    )
    assert usage.cache_read_tokens == 1111 and usage.input_tokens == 3 + 418 + 1111
    assert answer.response_metadata["service_tier"] == "standard"


def test_anthropic_web_search_citations_kept_in_invoke_and_stream(server: ReplayServer) -> None:
    recorded = json.loads(body("ant_web_search_server_tool"))
    cited = [b for b in recorded["content"] if b["type"] == "text" and b.get("citations")]
    model = model_for("anthropic", server)
    server.json(recorded)
    answer = model.invoke([HumanMessage("weather?")])
    assert isinstance(answer.content, list)
    kept = [b for b in answer.content if b["type"] == "text" and "citations" in b]
    assert [(b["text"], b["citations"]) for b in kept] == [
        (b["text"], b["citations"]) for b in cited
    ]
    assert len(kept) == 9
    assert answer.text == "".join(b["text"] for b in recorded["content"] if b["type"] == "text")
    assert answer.usage is not None
    assert answer.usage.server_tool_requests == {"web_search": 1}
    events = anthropic_events(recorded)
    for size in (1, 13, None):
        assert comparable(streamed(model, size, server, events)) == comparable(answer), size


def test_anthropic_document_citations_kept_without_other_blocks(server: ReplayServer) -> None:
    citation = {
        "type": "char_location",
        "cited_text": "The grass is green.",
        "document_index": 0,
        "document_title": "Facts",
        "start_char_index": 0,
        "end_char_index": 19,
    }
    recorded = json.loads(body("ant_cache_write_and_read"))
    recorded["content"] = [
        {"type": "text", "text": "According to the document, "},
        {"type": "text", "text": "the grass is green", "citations": [citation]},
        {"type": "text", "text": "."},
    ]
    model = model_for("anthropic", server)
    server.json(recorded)
    answer = model.invoke([HumanMessage("what colour?")])
    assert answer.content == recorded["content"]
    assert comparable(streamed(model, 2, server, anthropic_events(recorded))) == comparable(answer)


def test_openai_text_part_keeps_its_provider_keys(server: ReplayServer) -> None:
    model = model_for("openai", server)
    server.raw(body("oai_reasoning_tokens").encode())
    part = {"type": "text", "text": "long prefix", "prompt_cache_breakpoint": {"mode": "auto"}}
    gemini = {"type": "text", "text": "a", "thought_signature": "c2ln"}
    anthropic = {"type": "text", "text": "q", "cache_control": {}}
    model.invoke([HumanMessage([part, anthropic, gemini])])
    assert server.last.body["messages"][0]["content"] == [
        part,
        {"type": "text", "text": "q"},
        {"type": "text", "text": "a"},
    ]


@pytest.mark.parametrize("shape", [{}, [], {"error": {"type": "overloaded_error"}}, {"id": 1}])
def test_anthropic_wrong_shaped_200_is_an_error(server: ReplayServer, shape: Any) -> None:
    model = model_for("anthropic", server)
    server.json(shape)
    with pytest.raises(ProviderError) as caught:
        model.invoke([HumanMessage("hi")])
    assert caught.value.status_code == 200
    if isinstance(shape, dict) and "error" in shape:
        assert caught.value.error_type == "overloaded_error" and caught.value.retryable
    else:
        assert caught.value.error_type == "invalid_response"
        assert "unexpected response shape" in str(caught.value)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_deeply_nested_provider_json_is_a_provider_error(
    server: ReplayServer, provider: str
) -> None:
    model = model_for(provider, server)
    deep = b'{"a": ' * 100_000 + b"1" + b"}" * 100_000
    server.raw(deep)
    with pytest.raises(ProviderError) as caught:
        model.invoke([HumanMessage("hi")])
    assert caught.value.error_type == "invalid_response"
    event = "event: message_start\n" if provider == "anthropic" else ""
    serve_stream(server, f"{event}data: {deep.decode()}\n\n", 4096)
    with pytest.raises(ProviderError) as streamed_error:
        list(model.stream([HumanMessage("hi")]))
    assert streamed_error.value.error_type == "invalid_response"


def test_deeply_nested_tool_arguments_are_a_call_error(server: ReplayServer) -> None:
    model = model_for("openai", server)
    arguments = '{"a": ' * 50_000 + "1" + "}" * 50_000
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    whole = json.loads(body("oai_reasoning_tokens"))
    whole["choices"][0]["message"]["tool_calls"] = [call]
    server.json(whole)
    answer = model.invoke([HumanMessage("hi")])
    assert answer.tool_calls[0].error is not None
    assert "nested too deeply" in answer.tool_calls[0].error


def test_invalid_request_500_is_not_retried(server: ReplayServer) -> None:
    model = model_for("openai", server)
    error = {"error": {"code": 500, "message": "bad schema", "type": "invalid_request_error"}}
    server.json(error, status=500)
    with pytest.raises(ProviderError) as caught:
        model.invoke([HumanMessage("hi")])
    assert caught.value.status_code == 500 and caught.value.retryable is False
    server.json({"error": {"message": "busy", "type": "server_error"}}, status=500)
    with pytest.raises(ProviderError) as busy:
        model.invoke([HumanMessage("hi")])
    assert busy.value.retryable is True


def test_recorded_web_search_stream_keeps_each_cited_block(server: ReplayServer) -> None:
    text = body("ant_stream_web_search_server_tool")
    model = model_for("anthropic", server)
    answer = streamed(model, 1, server, text)
    assert isinstance(answer.content, list)
    cited = [b for b in answer.content if b["type"] == "text" and "citations" in b]
    assert len(cited) == text.count('"citations_delta"') == 5
    assert all(c["type"] == "web_search_result_location" for b in cited for c in b["citations"])
    assert [b["type"] for b in answer.content[:2]] == ["server_tool_use", "web_search_tool_result"]
    assert answer.usage is not None
    assert answer.usage.server_tool_requests == {"web_search": 1}


def test_streamed_logprobs_and_annotations_equal_invoke(server: ReplayServer) -> None:
    """No recording asked for logprobs or got URL annotations in a stream; the recorded
    text stream is given them, one token's logprob per content delta."""
    lines = []
    for _, data in sse_events(body("oai_stream_text")):
        if data.strip() != "[DONE]":
            chunk = json.loads(data)
            for choice in chunk["choices"]:
                token = (choice.get("delta") or {}).get("content")
                if token:
                    choice["logprobs"] = {"content": [{"token": token, "logprob": -0.5}]}
                if choice.get("finish_reason"):
                    citation = {"url": "https://example.org", "title": "Example"}
                    annotation = {"type": "url_citation", "url_citation": citation}
                    choice["delta"]["annotations"] = [annotation]
            data = json.dumps(chunk)
        lines.append(f"data: {data}\n\n")
    text = "".join(lines)
    model = model_for("openai", server)
    # The reference body has no annotations (the helper reads none): add them to it.
    whole = openai_whole(text)
    whole["choices"][0]["message"]["annotations"] = [
        {"type": "url_citation", "url_citation": {"url": "https://example.org", "title": "Example"}}
    ]
    expected = invoked(model, server, whole)
    answer = streamed(model, 1, server, text)
    assert comparable(answer) == comparable(expected)
    tokens = answer.response_metadata["logprobs"]
    assert "".join(t["token"] for t in tokens) == answer.text
    assert answer.response_metadata["annotations"][0]["url_citation"]["title"] == "Example"
