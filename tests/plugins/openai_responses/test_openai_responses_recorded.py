"""The ``openai-responses`` provider on the Responses API traffic other projects recorded
from the real API (``../shared/recorded/openai-responses-traffic.json``), served over
loopback HTTP — streams in pieces down to one byte.

- every recorded answer parses to what its output items say (checked against the raw
  JSON, item by item);
- every ``*_roundtrip`` entry (and the third turn of the stateless reasoning cassette) is
  the next turn of the entry before it: the conversation is rebuilt from plait messages —
  the answer as the provider parsed it, tool results as ``ToolMessage``s — and the input
  items the provider sends are compared with what the recording client sent, reasoning
  items with their ``encrypted_content`` byte for byte;
- every recorded stream assembles to exactly what ``invoke`` returns for the response its
  ``response.completed`` event carries;
- the recorded 4xx errors are typed, with the API's text.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import recorded
from replay_server import ReplayServer, Reply, split_bytes

from plait.errors import ProviderError
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage, assemble_chunks
from plait_openai_responses import OpenAIResponsesModel

pytestmark = recorded.needs(recorded.RESPONSES)
INTERACTIONS = recorded.interactions(recorded.RESPONSES)
_is_stream = recorded.is_stream
sse_events = recorded.sse_events


STREAMS = sorted(name for name, item in INTERACTIONS.items() if _is_stream(item))
ANSWERS = sorted(
    name
    for name, item in INTERACTIONS.items()
    if not _is_stream(item) and item["response"]["status"] == 200
)
ERRORS = sorted(name for name, item in INTERACTIONS.items() if item["response"]["status"] >= 400)


def body(name: str) -> str:
    text: str = INTERACTIONS[name]["response"]["body"]
    return text


def completed(text: str) -> dict[str, Any]:
    """The whole response a recorded stream's terminal event carries."""
    for name, data in sse_events(text):
        if name in ("response.completed", "response.incomplete"):
            response: dict[str, Any] = json.loads(data)["response"]
            return response
    raise AssertionError("no terminal event")


def model(server: ReplayServer, name: str = "gpt-5", **settings: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(name, api_key="test-key", base_url=server.url + "/v1", **settings)


def serve_stream(server: ReplayServer, text: str, size: int | None) -> None:
    data = text.encode("utf-8")
    pieces = split_bytes(data, size) if size else (data,)
    server.reply(Reply(200, b"", {"content-type": "text/event-stream"}, pieces=pieces))


def comparable(message: AIMessage) -> dict[str, Any]:
    return {
        "content": message.content,
        "tool_calls": message.tool_calls,
        "usage": message.usage,
        "response_metadata": message.response_metadata,
    }


def invoked(llm: OpenAIResponsesModel, server: ReplayServer, whole: dict[str, Any]) -> AIMessage:
    server.json(whole)
    return llm.invoke([HumanMessage("hi")])


def streamed(
    llm: OpenAIResponsesModel, server: ReplayServer, text: str, size: int | None
) -> AIMessage:
    serve_stream(server, text, size)
    return assemble_chunks(llm.stream([HumanMessage("hi")]))


# -- every recorded answer -----------------------------------------------------------------


@pytest.mark.parametrize("name", ANSWERS + STREAMS)
def test_every_recorded_answer_parses_to_its_output_items(name: str, server: ReplayServer) -> None:
    """Read independently from the raw JSON: the text is the ``output_text`` parts, the
    tool calls are the ``function_call`` items, every other item is a content block kept
    unchanged and in order, and usage and metadata are the response's numbers."""
    raw = completed(body(name)) if name in STREAMS else json.loads(body(name))
    answer = invoked(model(server), server, raw)
    texts = [
        part["text"]
        for item in raw["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    ]
    assert answer.text == "".join(texts)
    functions = [item for item in raw["output"] if item["type"] == "function_call"]
    assert [(c.id, c.name, c.args, c.error) for c in answer.tool_calls] == [
        (f["call_id"], f["name"], json.loads(f["arguments"]), None) for f in functions
    ]
    kept = [item for item in raw["output"] if item["type"] not in ("message", "function_call")]
    if kept:
        assert isinstance(answer.content, list)
        own = [b for b in answer.content if b["type"] not in ("text", "function_call")]
        assert own == kept
    else:
        assert answer.content == "".join(texts)
    usage = raw["usage"]
    assert answer.usage is not None
    assert answer.usage.input_tokens == usage["input_tokens"]
    assert answer.usage.output_tokens == usage["output_tokens"]
    assert answer.usage.cache_read_tokens == usage["input_tokens_details"]["cached_tokens"]
    assert answer.usage.cache_write_tokens == usage["input_tokens_details"].get(
        "cache_write_tokens", 0
    )
    assert answer.usage.reasoning_tokens == usage["output_tokens_details"]["reasoning_tokens"]
    metadata = answer.response_metadata
    assert metadata["provider"] == "openai-responses"
    assert (metadata["response_id"], metadata["model"]) == (raw["id"], raw["model"])
    assert metadata["status"] == metadata["finish_reason"] == "completed"
    annotations = [
        a
        for item in raw["output"]
        if item["type"] == "message"
        for part in item["content"]
        for a in part.get("annotations") or ()
    ]
    assert metadata.get("annotations", []) == annotations


def test_reasoning_summary_and_encrypted_content_are_kept(server: ReplayServer) -> None:
    raw = json.loads(body("resp_reasoning_summary"))
    answer = invoked(model(server), server, raw)
    assert isinstance(answer.content, list)
    reasoning, text = answer.content
    assert reasoning == raw["output"][0]
    assert len(reasoning["encrypted_content"]) == 13176
    assert len(reasoning["summary"]) == 6
    # After a reasoning item the text keeps its message's id: the next turn needs it.
    assert text == {"type": "text", "text": answer.text, "id": raw["output"][1]["id"]}
    assert answer.usage is not None and answer.usage.reasoning_tokens == 1920


def test_cache_writes_and_reads(server: ReplayServer) -> None:
    llm = model(server)
    write = invoked(llm, server, json.loads(body("resp_prompt_cache_write"))).usage
    read = invoked(llm, server, json.loads(body("resp_prompt_cache_read"))).usage
    assert write is not None and read is not None
    assert (write.input_tokens, write.cache_write_tokens, write.cache_read_tokens) == (
        4020,
        4012,
        0,
    )
    assert (read.input_tokens, read.cache_write_tokens, read.cache_read_tokens) == (4020, 0, 4012)


def test_built_in_tool_items_pass_through_and_are_counted(server: ReplayServer) -> None:
    llm = model(server)
    search = invoked(llm, server, json.loads(body("resp_web_search_url_citation")))
    assert isinstance(search.content, list)
    assert search.content[0]["type"] == "web_search_call"
    assert search.content[0]["action"]["queries"] == [
        "tallest mountain in Alberta",
        "Mount Columbia tallest mountain in Alberta elevation",
    ]
    (citation,) = search.response_metadata["annotations"]
    assert citation["type"] == "url_citation" and citation["url"].startswith(
        "https://www.britannica.com/place/Mount-Columbia"
    )
    assert search.text[citation["start_index"] : citation["end_index"]].startswith("(")
    assert search.usage is not None and search.usage.server_tool_requests == {"web_search": 1}

    files = invoked(llm, server, json.loads(body("resp_file_search_call")))
    assert isinstance(files.content, list)
    assert files.content[0]["results"][0]["text"].startswith("Paris is the capital of France")
    assert files.response_metadata["annotations"][0]["type"] == "file_citation"
    assert files.usage is not None and files.usage.server_tool_requests == {"file_search": 1}

    code = invoked(llm, server, json.loads(body("resp_code_interpreter_call")))
    assert isinstance(code.content, list)
    assert [b["type"] for b in code.content] == [
        "reasoning",
        "code_interpreter_call",
        "reasoning",
        "text",
    ]
    assert code.content[1]["outputs"] == [{"logs": "-428330955.97745", "type": "logs"}]
    assert code.usage is not None and code.usage.server_tool_requests == {"code_interpreter": 1}


# -- the next turn sends back what the recording client sent -------------------------------

ROUNDTRIPS = {
    # the turn -> the earlier turns whose answers its input replays, in order
    "resp_function_call_output_roundtrip": ["resp_function_call"],
    "resp_parallel_function_call_outputs_roundtrip": ["resp_parallel_function_calls"],
    "resp_reasoning_roundtrip": ["resp_reasoning_summary"],
    "resp_stateless_reasoning_roundtrip": ["resp_stateless_reasoning_function_call"],
    "resp_stateless_reasoning_parallel_calls": [
        "resp_stateless_reasoning_function_call",
        "resp_stateless_reasoning_roundtrip",
    ],
    "resp_web_search_roundtrip": ["resp_web_search_call"],
    "resp_stream_text_roundtrip": ["resp_stream_function_call"],
}


def test_every_roundtrip_entry_is_checked() -> None:
    named = {name for name in INTERACTIONS if name.endswith("_roundtrip")}
    assert named <= set(ROUNDTRIPS)


def _answer_of(name: str) -> dict[str, Any]:
    return completed(body(name)) if name in STREAMS else json.loads(body(name))


def _is_answer_item(item: dict[str, Any]) -> bool:
    return item.get("role") == "assistant" or item.get("type") not in (
        None,
        "message",
        "function_call_output",
    )


def _call_ids(earlier: list[dict[str, Any]]) -> dict[str, str]:
    """An earlier client sent function outputs under the call's item id (``fc_...``)
    instead of its ``call_id``; the API took it. plait answers the call by its call id."""
    return {
        item["id"]: item["call_id"]
        for answer in earlier
        for item in answer["output"]
        if item["type"] == "function_call"
    }


def _conversation(
    recorded: list[dict[str, Any]],
    answers: list[AIMessage],
    ids: dict[str, str],
    parse: Any,
) -> list[AnyMessage]:
    """plait messages for a recorded input: user items as ``HumanMessage``s, each run of
    answer items as the ``AIMessage`` the provider parsed from that answer, function
    outputs as ``ToolMessage``s. A run whose answer is not in the recordings (the third
    turn of the stateless cassette replays a second answer nobody kept) is parsed from
    the items themselves, as the answer they were."""
    messages: list[AnyMessage] = []
    pending = list(answers)
    run: list[dict[str, Any]] = []
    for item in [*recorded, None]:
        if item is not None and _is_answer_item(item):
            run.append(item)
            continue
        if run:
            messages.append(pending.pop(0) if pending else parse(run))
            run = []
        if item is None:
            break
        if item.get("type") == "function_call_output":
            call_id = ids.get(item["call_id"], item["call_id"])
            messages.append(ToolMessage(item["output"], tool_call_id=call_id))
        else:
            assert item["role"] == "user"
            messages.append(HumanMessage(item["content"]))
    assert not pending
    return messages


def _normalized(items: list[dict[str, Any]], ids: dict[str, str]) -> list[dict[str, Any]]:
    """Input items with the recording clients' freedoms evened out: a function call's
    ``status`` (sent as null) and item ``id`` (sent by plait where a reasoning item came
    before it) are left out and its arguments compared as JSON; an empty assistant turn
    (one client's habit) is dropped; output call ids are the calls' own."""
    out = []
    for raw in items:
        item = dict(raw)
        if item.get("role") == "assistant" and item.get("content") == "":
            continue
        if item.get("type") == "function_call":
            item.pop("status", None)
            item.pop("id", None)
            item["arguments"] = json.loads(item["arguments"])
        if item.get("type") in ("function_call", "function_call_output"):
            item["call_id"] = ids.get(item["call_id"], item["call_id"])
        out.append(item)
    return out


@pytest.mark.parametrize("name", sorted(ROUNDTRIPS))
def test_the_next_turn_sends_back_what_the_recording_client_sent(
    name: str, server: ReplayServer
) -> None:
    request = INTERACTIONS[name]["request"]
    settings = {key: request[key] for key in ("include", "reasoning", "store") if key in request}
    llm = model(server, request["model"], **settings)
    earlier = [_answer_of(turn) for turn in ROUNDTRIPS[name]]
    answers = [
        streamed(llm, server, body(turn), 3) if turn in STREAMS else invoked(llm, server, answer)
        for turn, answer in zip(ROUNDTRIPS[name], earlier, strict=True)
    ]
    ids = _call_ids(earlier)

    def parse(run: list[dict[str, Any]]) -> AIMessage:
        usage = {"input_tokens": 0, "output_tokens": 0}
        return invoked(llm, server, {"id": "resp_x", "output": run, "usage": usage})

    messages = _conversation(request["input"], answers, ids, parse)

    if name in STREAMS:
        serve_stream(server, body(name), 7)
        assemble_chunks(llm.stream(messages, system_prompt=request.get("instructions")))
    else:
        server.raw(body(name).encode())
        llm.invoke(messages, system_prompt=request.get("instructions"))
    sent = server.last.body
    assert _normalized(sent["input"], ids) == _normalized(request["input"], ids)
    for key in ("include", "reasoning", "store"):
        assert sent.get(key) == request.get(key)
    if request.get("instructions"):
        assert sent["instructions"] == request["instructions"]
    # The reasoning items go back exactly as they came, encrypted content and all.
    reasoning = [item for item in request["input"] if item.get("type") == "reasoning"]
    assert [item for item in sent["input"] if item.get("type") == "reasoning"] == reasoning


def test_reasoning_goes_back_followed_by_its_message_by_id(server: ReplayServer) -> None:
    """The API rejects a reasoning item sent without the item that followed it
    (``resp_error_400_reasoning_without_following_item``: the client sent the following
    message as plain text). plait sends that message with its id, right after."""
    llm = model(server)
    answer = invoked(llm, server, json.loads(body("resp_reasoning_summary")))
    server.raw(body("resp_reasoning_roundtrip").encode())
    llm.invoke([HumanMessage("How do I cross the street?"), answer, HumanMessage("and a river?")])
    sent = server.last.body["input"]
    assert [item.get("type") for item in sent] == [None, "reasoning", "message", None]
    assert sent[2]["id"] == json.loads(body("resp_reasoning_summary"))["output"][1]["id"]
    rejected = INTERACTIONS["resp_error_400_reasoning_without_following_item"]["request"]
    assert rejected["input"][2] == {"content": "The meaning of life is 42", "role": "assistant"}


# -- streams -------------------------------------------------------------------------------


def whole(text: str) -> dict[str, Any]:
    """The response a stream stands for: its terminal event's, with each output item as
    its ``response.output_item.done`` event gave it. The API re-encrypts a reasoning
    item's ``encrypted_content`` for the terminal event (seen in
    ``resp_stream_reasoning_function_call``); the stream keeps the done event's, and that
    is the only difference allowed."""
    response = completed(text)
    done = {
        event["output_index"]: event["item"]
        for event in (json.loads(data) for _, data in sse_events(text))
        if event["type"] == "response.output_item.done"
    }
    output = [done[index] for index in sorted(done)]
    assert len(output) == len(response["output"])
    for ours, theirs in zip(output, response["output"], strict=True):
        if ours != theirs:
            assert ours["type"] == "reasoning"
            assert {**ours, "encrypted_content": None} == {**theirs, "encrypted_content": None}
    return {**response, "output": output}


@pytest.mark.parametrize("name", STREAMS)
def test_every_recorded_stream_assembles_to_what_invoke_returns(
    name: str, server: ReplayServer
) -> None:
    llm = model(server)
    expected = comparable(invoked(llm, server, whole(body(name))))
    for size in (None, 1, 3, 64):
        assert comparable(streamed(llm, server, body(name), size)) == expected, (name, size)


@pytest.mark.parametrize("name", STREAMS)
def test_every_recorded_stream_assembles_the_same_through_astream(
    name: str, server: ReplayServer
) -> None:
    llm = model(server)
    whole = streamed(llm, server, body(name), None)

    async def run() -> AIMessage:
        serve_stream(server, body(name), 1)
        return assemble_chunks([c async for c in llm.astream([HumanMessage("hi")])])

    assert comparable(asyncio.run(run())) == comparable(whole)


def test_streamed_text_and_call_arguments_arrive_as_they_come(server: ReplayServer) -> None:
    llm = model(server)
    serve_stream(server, body("resp_stream_text_roundtrip"), 5)
    texts = [c.content for c in llm.stream([HumanMessage("hi")]) if c.content]
    assert texts == ["The", " capital", " of", " France", " is", " Paris", "."]
    serve_stream(server, body("resp_stream_function_call"), 5)
    fragments = [p for c in llm.stream([HumanMessage("hi")]) for p in c.tool_call_chunks]
    assert fragments[0].id == "call_kL0PCQV7M2WMoVX8V8OtYSAL"
    assert fragments[0].name == "get_capital"
    assert "".join(p.args for p in fragments) == '{"country":"France"}'
    assert len(fragments) == 6


def test_streamed_reasoning_is_the_done_item(server: ReplayServer) -> None:
    """The reasoning item's ``encrypted_content`` differs between its ``added`` and its
    ``done`` event in this recording; the done one is the one to send back."""
    text = body("resp_stream_reasoning_function_call")
    done = [
        json.loads(data)["item"]
        for name, data in sse_events(text)
        if name == "response.output_item.done" and '"reasoning"' in data
    ]
    answer = streamed(model(server), server, text, 1)
    assert isinstance(answer.content, list)
    assert answer.content[0] == done[0]
    assert answer.content[1] == {
        "type": "function_call",
        "call_id": answer.tool_calls[0].id,
        "id": completed(text)["output"][1]["id"],
    }
    assert answer.tool_calls[0].name == "final_result"
    assert answer.response_metadata["service_tier"] == "flex"


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ERRORS)
def test_recorded_errors_are_typed_with_their_text(name: str, server: ReplayServer) -> None:
    error = json.loads(body(name))["error"]
    llm = model(server)
    for stream in (False, True):
        server.raw(body(name).encode(), status=INTERACTIONS[name]["response"]["status"])
        with pytest.raises(ProviderError) as caught:
            if stream:
                list(llm.stream([HumanMessage("hi")]))
            else:
                llm.invoke([HumanMessage("hi")])
        assert caught.value.status_code == 400
        assert caught.value.provider == "openai-responses"
        assert caught.value.error_type == (error["code"] or error["type"])
        assert caught.value.retryable is False
        assert error["message"] in str(caught.value)
        assert str(caught.value).startswith("openai-responses API error 400")


def test_streamed_reasoning_summary_is_what_its_deltas_said(server: ReplayServer) -> None:
    """The summary deltas carry nothing the done reasoning item lacks: the kept block's
    summary is the deltas joined, part by part."""
    text = body("resp_stream_reasoning_summary_code_interpreter")
    parts: dict[tuple[str, int], str] = {}
    for name, data in sse_events(text):
        if name == "response.reasoning_summary_text.delta":
            event = json.loads(data)
            key = (event["item_id"], event["summary_index"])
            parts[key] = parts.get(key, "") + event["delta"]
    assert len(parts) == 1
    answer = streamed(model(server), server, text, 2)
    assert isinstance(answer.content, list)
    summaries = {
        (block["id"], index): part["text"]
        for block in answer.content
        if block["type"] == "reasoning"
        for index, part in enumerate(block["summary"])
    }
    assert summaries == parts
    assert [b["type"] for b in answer.content].count("code_interpreter_call") == 3
