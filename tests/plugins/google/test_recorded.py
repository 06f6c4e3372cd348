"""The Gemini provider on traffic recorded from the real Gemini API and Vertex AI, read
from ``../shared/recorded/google-gemini-traffic.json`` and served over loopback HTTP.

Every interaction is replayed twice over:

- what plait sends: the recorded conversation is rebuilt as plait messages (a model turn
  is what the provider itself parsed from the recorded answer that preceded it) and the
  request plait sends must be the recorded one — path, contents, function responses,
  thought parts and signatures, tools, tool config, generation config;
- what plait reads: the answer is served and its parsed message checked; every stream,
  cut into pieces down to one byte, assembles to exactly what ``invoke`` returns for the
  same answer as one body, and an error is a typed ``ProviderError`` with its text.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import recorded
from replay_server import ReplayServer, Reply, split_bytes

import plait
from plait import effects
from plait.errors import ProviderError
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage, assemble_chunks
from plait_google import THOUGHT_SIGNATURES, GoogleChatModel

KEY = "AIza" + "SyD-plaitTestKeyNotRealxxxxxxxxxxx"

pytestmark = recorded.needs(recorded.GEMINI)
INTERACTIONS = recorded.interactions(recorded.GEMINI)
NAMES = sorted(INTERACTIONS)
PREVIOUS = {
    "gem_function_response_roundtrip": "gem_function_call",
    "gem_parallel_function_responses_roundtrip": "gem_parallel_function_calls",
    "gem_thinking_roundtrip": "gem_thinking",
    "gem_stream_function_response_roundtrip": "gem_stream_function_call_thought_signature",
}
"""Each ``*_roundtrip`` entry is the next turn of the entry named here (same cassette)."""


def _is_sse(name: str) -> bool:
    return "event-stream" in INTERACTIONS[name]["response"]["headers"].get("content-type", "")


SSE_STREAMS = [name for name in NAMES if _is_sse(name)]
JSON_ARRAY_STREAM = "gem_stream_json_array_thinking_tool"


def test_every_recorded_interaction_is_covered() -> None:
    assert len(NAMES) == 24
    assert set(PREVIOUS) == {name for name in NAMES if name.endswith("_roundtrip")}
    assert len(SSE_STREAMS) == 5
    assert (
        not _is_sse(JSON_ARRAY_STREAM)
        and "streamGenerateContent" in (INTERACTIONS[JSON_ARRAY_STREAM]["path"])
    )


# -- serving -------------------------------------------------------------------------------


def serve(server: ReplayServer, name: str, *, split: int | None = None) -> None:
    response = INTERACTIONS[name]["response"]
    data = response["body"].encode("utf-8")
    pieces = split_bytes(data, split) if split else None
    server.reply(Reply(response["status"], data, dict(response["headers"]), pieces=pieces))


def model_for(server: ReplayServer, name: str, **settings: Any) -> GoogleChatModel:
    """The model the recording was made with, pointed at ``server``: the Gemini API, or
    Vertex AI with the project and location of the recorded path."""
    path = INTERACTIONS[name]["path"]
    model = path.split("/models/")[1].split(":")[0]
    if "/projects/" in path:
        parts = path.split("/")
        project, location = parts[parts.index("projects") + 1], parts[parts.index("locations") + 1]
        return GoogleChatModel(
            model,
            api_key=KEY,
            base_url=server.url,
            vertex=True,
            project=project,
            location=location,
            **settings,
        )
    return GoogleChatModel(model, api_key=KEY, base_url=server.url, **settings)


@pytest.fixture
def ids() -> Iterator[None]:
    """Message and tool-call ids from a counter, so two reads of one answer match."""
    counter = iter(range(10**6))
    with effects.id_source(lambda: f"{next(counter):032x}"):
        yield


def _same_ids(message: AIMessage) -> AIMessage:
    return attrs.evolve(message, id="m")


# -- the request plait sends -----------------------------------------------------------------


def parse_recorded_answer(server: ReplayServer, name: str) -> AIMessage:
    """What the provider reads from the recorded answer of ``name``."""
    serve(server, name)
    model = model_for(server, name)
    if _is_sse(name):
        return assemble_chunks(model.stream([HumanMessage("again")]))
    return model.invoke([HumanMessage("again")])


def parse_model_turn(server: ReplayServer, turn: dict[str, Any]) -> AIMessage:
    """A model turn no recorded answer holds, read as if the API had answered it."""
    body = {"candidates": [{"content": turn, "finishReason": "STOP", "index": 0}]}
    server.json(body)
    return GoogleChatModel("gemini-2.5-flash", api_key=KEY, base_url=server.url).invoke(
        [HumanMessage("again")]
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def rebuild(server: ReplayServer, name: str) -> tuple[list[AnyMessage], dict[str, Any]]:
    """The recorded request of ``name`` as plait messages and call options."""
    request = INTERACTIONS[name]["request"]
    messages: list[AnyMessage] = []
    last_ai: AIMessage | None = None
    for turn in request["contents"]:
        parts = turn["parts"]
        if turn["role"] == "model":
            if last_ai is None and name in PREVIOUS:
                last_ai = parse_recorded_answer(server, PREVIOUS[name])
            else:
                last_ai = parse_model_turn(server, turn)
            messages.append(last_ai)
            continue
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        for index, response in enumerate(responses):
            assert last_ai is not None
            value = response["response"]
            value = value.get("return_value", value)
            call = last_ai.tool_calls[index]
            assert call.name == response["name"]
            messages.append(ToolMessage(_text(value), tool_call_id=call.id))
        texts = [p for p in parts if "text" in p]
        if texts:
            content: Any = (
                texts[0]["text"]
                if len(texts) == 1
                else [{"type": "text", "text": p["text"]} for p in texts]
            )
            messages.append(HumanMessage(content))
    options: dict[str, Any] = {}
    system = request.get("systemInstruction")
    if system:
        options["system_prompt"] = "".join(p["text"] for p in system["parts"])
    tools: list[plait.Tool] = []
    builtin: list[dict[str, Any]] = []
    for entry in request.get("tools", []):
        for declaration in entry.get("functionDeclarations", []):
            schema = (
                declaration.get("parametersJsonSchema")
                or declaration.get("parameters_json_schema")
                or declaration.get("parameters")
            )
            tools.append(
                plait.Tool(declaration["name"], declaration.get("description") or "", schema)
            )
        if "functionDeclarations" not in entry:
            builtin.append(entry)
    if tools:
        options["tools"] = tools
    if builtin:
        options["builtin_tools"] = builtin
    calling = request.get("toolConfig", {}).get("functionCallingConfig")
    if calling:
        allowed = calling.get("allowedFunctionNames")
        if calling["mode"] == "ANY" and allowed and set(allowed) != {t.name for t in tools}:
            (options["tool_choice"],) = allowed
        elif calling["mode"] in ("ANY", "AUTO", "NONE"):
            options["tool_choice"] = {"ANY": "required"}.get(calling["mode"], calling["mode"])
            options["tool_choice"] = options["tool_choice"].lower()
        else:  # a mode plait has no name for (VALIDATED) goes as the API's own field
            options["provider_options"] = {"google": {"toolConfig": request["toolConfig"]}}
    options.update(request.get("generationConfig", {}))
    if "safetySettings" in request:
        options["safety_settings"] = request["safetySettings"]
    if "cachedContent" in request:
        options["cached_content"] = request["cachedContent"]
    if "modelArmorConfig" in request:
        options["provider_options"] = {"google": {"modelArmorConfig": request["modelArmorConfig"]}}
    return messages, options


def _signature(value: str) -> bytes:
    """A signature's bytes, whichever base64 alphabet wrote it (the recording client sent
    them back URL-safe; the API wrote them standard)."""
    return base64.b64decode(value.replace("-", "+").replace("_", "/"))


def normalize(body: dict[str, Any]) -> dict[str, Any]:
    """A request body with the differences that carry no meaning removed: call ids (the
    recording client made its own) by order, signatures as bytes, a function response's
    single value, the spelling of the schema key, ``systemInstruction``'s ignored role
    and ``toolConfig``'s redundant list of every tool's name."""
    body = json.loads(json.dumps(body))
    order: dict[str, str] = {}
    for turn in body.get("contents", []):
        for part in turn["parts"]:
            if "thoughtSignature" in part:
                part["thoughtSignature"] = _signature(part["thoughtSignature"]).hex()
            for key in ("functionCall", "functionResponse"):
                if key in part and "id" in part[key]:
                    part[key]["id"] = order.setdefault(part[key]["id"], f"id{len(order)}")
            if "functionResponse" in part:
                response = part["functionResponse"]["response"]
                (value,) = response.values()
                part["functionResponse"]["response"] = _text(value)
    body.get("systemInstruction", {}).pop("role", None)
    if body.get("generationConfig") == {}:
        del body["generationConfig"]
    for entry in body.get("tools", []):
        for declaration in entry.get("functionDeclarations", []):
            for old in ("parameters_json_schema", "parameters"):
                if old in declaration:
                    declaration["parametersJsonSchema"] = declaration.pop(old)
            if not declaration.get("description"):
                declaration.pop("description", None)
    calling = body.get("toolConfig", {}).get("functionCallingConfig", {})
    names = {d["name"] for e in body.get("tools", []) for d in e.get("functionDeclarations", [])}
    if set(calling.get("allowedFunctionNames", ())) == names:
        calling.pop("allowedFunctionNames", None)
    return body


@pytest.mark.parametrize("name", NAMES)
def test_plait_sends_the_recorded_request(server: ReplayServer, name: str) -> None:
    messages, options = rebuild(server, name)
    serve(server, name)
    model = model_for(server, name)
    streamed = "streamGenerateContent" in INTERACTIONS[name]["path"]
    try:
        if streamed:
            list(model.stream(messages, **options))
        else:
            model.invoke(messages, **options)
    except ProviderError:
        pass  # the answers that are errors are checked below
    sent = server.last
    recorded = INTERACTIONS[name]
    expected_path = recorded["path"]
    if name == JSON_ARRAY_STREAM:
        # plait always asks for server-sent events; this client asked for a JSON array.
        expected_path += "?alt=sse"
    assert sent.path == expected_path
    assert sent.headers["x-goog-api-key"] == KEY
    assert normalize(sent.body) == normalize(recorded["request"])


def test_function_responses_and_signatures_go_back_as_received(server: ReplayServer) -> None:
    """The parallel-call turn: only the first call is signed; the signature goes back on
    that call, byte for byte as the API wrote it (standard base64), every call with the id
    plait gave it, every result with its call's id and name."""
    answer = parse_recorded_answer(server, "gem_parallel_function_calls")
    signatures = answer.response_metadata[THOUGHT_SIGNATURES]
    first = answer.tool_calls[0]
    recorded_part = json.loads(INTERACTIONS["gem_parallel_function_calls"]["response"]["body"])[
        "candidates"
    ][0]["content"]["parts"][0]
    assert signatures == {first.id: recorded_part["thoughtSignature"]}
    results = [
        ToolMessage(topic, tool_call_id=call.id)
        for call, topic in zip(answer.tool_calls, ["cars", "penguins", "cars"], strict=True)
    ]
    server.json(
        json.loads(INTERACTIONS["gem_parallel_function_responses_roundtrip"]["response"]["body"])
    )
    GoogleChatModel("gemini-3-flash-preview", api_key=KEY, base_url=server.url).invoke(
        [HumanMessage(""), answer, *results]
    )
    model_turn, results_turn = server.last.body["contents"][1:]
    assert model_turn["parts"] == [
        {
            "functionCall": {"name": "generate_topic", "args": {}, "id": first.id},
            "thoughtSignature": recorded_part["thoughtSignature"],
        },
        *(
            {"functionCall": {"name": "generate_topic", "args": {}, "id": call.id}}
            for call in answer.tool_calls[1:]
        ),
    ]
    assert results_turn == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": c.id, "name": "generate_topic", "response": {"output": t}}}
            for c, t in zip(answer.tool_calls, ["cars", "penguins", "cars"], strict=True)
        ],
    }


# -- what plait reads --------------------------------------------------------------------------


def sse_responses(text: str) -> list[dict[str, Any]]:
    """The ``GenerateContentResponse`` of each event of a recorded SSE body."""
    return [json.loads(data) for _, data in recorded.sse_events(text)]


def whole(responses: list[dict[str, Any]]) -> dict[str, Any]:
    """The one ``generateContent`` body a stream stands for: the candidate's parts in
    order, its other fields and the response's as last given (usage is cumulative)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": []}}
    body: dict[str, Any] = {"candidates": [candidate]}
    for response in responses:
        for key, value in response.items():
            if key != "candidates":
                body[key] = value
        for part in response["candidates"]:
            candidate["content"]["parts"].extend(part.get("content", {}).get("parts", []))
            candidate.update({k: v for k, v in part.items() if k != "content"})
    return body


def fresh_ids() -> Any:
    counter = iter(range(10**6))
    return effects.id_source(lambda: f"{next(counter):032x}")


def invoke_whole(server: ReplayServer, name: str, body: Any) -> AIMessage:
    server.json(body)
    with fresh_ids():
        return model_for(server, name).invoke([HumanMessage("hi")])


@pytest.mark.parametrize("split", [1, 3, 17, None])
@pytest.mark.parametrize("name", SSE_STREAMS)
def test_every_stream_assembles_to_what_invoke_returns(
    server: ReplayServer, name: str, split: int | None
) -> None:
    invoked = invoke_whole(
        server, name, whole(sse_responses(INTERACTIONS[name]["response"]["body"]))
    )
    serve(server, name, split=split)
    with fresh_ids():
        chunks = list(model_for(server, name).stream([HumanMessage("hi")]))
    streamed = assemble_chunks(chunks)
    assert _same_ids(streamed) == _same_ids(invoked)
    text = "".join(chunk.content for chunk in chunks)
    assert text == streamed.text  # signed runs stream as text too; blocks only restate them
    assert invoked.response_metadata["finish_reason"] == "STOP"


@pytest.mark.parametrize("name", SSE_STREAMS)
def test_every_stream_assembles_the_same_in_astream(server: ReplayServer, name: str) -> None:
    invoked = invoke_whole(
        server, name, whole(sse_responses(INTERACTIONS[name]["response"]["body"]))
    )
    serve(server, name, split=5)

    async def collect() -> AIMessage:
        with fresh_ids():
            model = model_for(server, name)
            chunks = [chunk async for chunk in model.astream([HumanMessage("hi")])]
            await model.aclose()
        return assemble_chunks(chunks)

    assert _same_ids(asyncio.run(collect())) == _same_ids(invoked)


def test_the_json_array_stream_is_read_as_one_answer(server: ReplayServer) -> None:
    """``streamGenerateContent`` without ``alt=sse`` answers with one JSON array of
    responses; plait asks for SSE, but a server answering so is read, not refused."""
    name = JSON_ARRAY_STREAM
    body = json.loads(INTERACTIONS[name]["response"]["body"])
    invoked = invoke_whole(server, name, body)
    serve(server, name, split=1)
    with fresh_ids():
        streamed = assemble_chunks(model_for(server, name).stream([HumanMessage("hi")]))
    assert _same_ids(streamed) == _same_ids(invoked)
    parts = [p for r in body for p in r["candidates"][0]["content"]["parts"]]
    assert streamed.content == [{"type": "thinking", "thinking": parts[0]["text"]}]
    (call,) = streamed.tool_calls
    assert (call.name, call.args) == ("pelican_name_generator", {})
    assert streamed.response_metadata[THOUGHT_SIGNATURES] == {call.id: parts[1]["thoughtSignature"]}
    assert streamed.usage == plait.Usage(input_tokens=32, output_tokens=54, reasoning_tokens=42)


def answer_of(server: ReplayServer, name: str) -> AIMessage:
    serve(server, name)
    model = model_for(server, name)
    if _is_sse(name):
        return assemble_chunks(model.stream([HumanMessage("hi")]))
    return model.invoke([HumanMessage("hi")])


def recorded_parts(name: str) -> list[dict[str, Any]]:
    body = INTERACTIONS[name]["response"]["body"]
    responses = sse_responses(body) if _is_sse(name) else [json.loads(body)]
    return whole(responses)["candidates"][0]["content"]["parts"]


def test_text_usage_and_metadata(server: ReplayServer) -> None:
    message = answer_of(server, "gem_text_plain")
    assert message.content == "Hello! How can I help you today?"
    assert message.tool_calls == ()
    # Thoughts are output; the total is the API's totalTokenCount (52).
    assert message.usage == plait.Usage(input_tokens=9, output_tokens=43, reasoning_tokens=34)
    assert message.usage.total_tokens == 52
    assert message.response_metadata == {
        "provider": "google",
        "request_id": None,
        "model": "gemini-2.5-flash",
        "response_id": "bzlXaa_EE_aHqtsPi_zw8Ao",
        "finish_reason": "STOP",
    }


def test_a_function_call_keeps_its_signature(server: ReplayServer) -> None:
    message = answer_of(server, "gem_function_call")
    (call,) = message.tool_calls
    assert (call.name, call.args, call.error) == ("get_weather", {"city": "Paris"}, None)
    assert call.id.startswith("call_")
    (part,) = recorded_parts("gem_function_call")
    assert message.response_metadata[THOUGHT_SIGNATURES] == {call.id: part["thoughtSignature"]}
    assert message.response_metadata["finish_message"] == "Model generated function call(s)."
    assert message.content == ""


def test_tool_call_ids_come_from_plaits_id_source(server: ReplayServer) -> None:
    with fresh_ids():
        first = answer_of(server, "gem_parallel_function_calls")
    with fresh_ids():
        second = answer_of(server, "gem_parallel_function_calls")
    assert [c.id for c in first.tool_calls] == [c.id for c in second.tool_calls]
    assert len({c.id for c in first.tool_calls}) == 3


def test_thought_parts_and_a_signed_answer(server: ReplayServer) -> None:
    message = answer_of(server, "gem_thinking")
    thought, answer = recorded_parts("gem_thinking")
    assert message.content == [
        {"type": "thinking", "thinking": thought["text"]},
        {"type": "text", "text": answer["text"], "thought_signature": answer["thoughtSignature"]},
    ]
    assert message.text == answer["text"]
    assert message.usage is not None and message.usage.reasoning_tokens == 1001


def test_explicit_and_implicit_cache_hits(server: ReplayServer) -> None:
    explicit = answer_of(server, "gem_cached_content_explicit")
    assert explicit.usage == plait.Usage(
        input_tokens=3520, output_tokens=44, cache_read_tokens=3512, reasoning_tokens=42
    )
    assert explicit.response_metadata["service_tier"] == "standard"
    implicit = answer_of(server, "gem_cached_content_implicit")
    assert implicit.usage is not None and implicit.usage.cache_read_tokens == 594


def test_search_grounding_counts_queries_and_keeps_its_metadata(server: ReplayServer) -> None:
    message = answer_of(server, "gem_google_search_grounding")
    body = json.loads(INTERACTIONS["gem_google_search_grounding"]["response"]["body"])
    grounding = body["candidates"][0]["groundingMetadata"]
    assert message.response_metadata["grounding_metadata"] == grounding
    # Search results the model read (toolUsePromptTokenCount) are input.
    assert message.usage == plait.Usage(
        input_tokens=17 + 119,
        output_tokens=201 + 213,
        reasoning_tokens=213,
        server_tool_requests={"google_search": len(grounding["webSearchQueries"])},
    )
    assert message.usage.total_tokens == body["usageMetadata"]["totalTokenCount"]


def test_code_execution_parts_are_kept_in_order(server: ReplayServer) -> None:
    message = answer_of(server, "gem_code_execution")
    parts = recorded_parts("gem_code_execution")
    expected = []
    for part in parts:
        signature = (
            {"thought_signature": part["thoughtSignature"]} if "thoughtSignature" in part else {}
        )
        if "text" in part:
            expected.append({"type": "text", "text": part["text"], **signature})
        else:
            (kind,) = set(part) - {"thoughtSignature"}
            expected.append({"type": kind, kind: part[kind], **signature})
    assert message.content == expected
    assert [b["type"] for b in expected] == [
        "executableCode",
        "codeExecutionResult",
        "executableCode",
        "codeExecutionResult",
        "text",
    ]
    assert message.text == parts[-1]["text"]
    assert message.usage is not None
    assert message.usage.server_tool_requests == {"code_execution": 2}


def test_max_tokens_returns_what_came_and_says_so(server: ReplayServer) -> None:
    cut = answer_of(server, "gem_finish_max_tokens")
    assert cut.content == "The capital of France is"
    assert cut.response_metadata["finish_reason"] == "MAX_TOKENS"
    empty = answer_of(server, "gem_finish_max_tokens_no_parts")
    assert empty.content == "" and empty.tool_calls == ()
    assert empty.response_metadata["finish_reason"] == "MAX_TOKENS"
    assert empty.usage == plait.Usage(input_tokens=15, output_tokens=2, reasoning_tokens=2)


def test_vertex_answers(server: ReplayServer) -> None:
    message = answer_of(server, "gem_vertex_text")
    assert message.content == "The capital of France is Paris.\n"
    assert message.response_metadata["traffic_type"] == "ON_DEMAND"
    assert message.response_metadata["avg_logprobs"] == pytest.approx(-0.00055323017)
    signed = answer_of(server, "gem_vertex_stream_signed_text")
    (part,) = recorded_parts("gem_vertex_stream_signed_text")
    assert signed.content == [
        {"type": "text", "text": "OK", "thought_signature": part["thoughtSignature"]}
    ]


def test_an_undeclared_function_call_is_a_call_the_agent_can_refuse(server: ReplayServer) -> None:
    message = answer_of(server, "gem_vertex_unexpected_tool_call")
    (call,) = message.tool_calls
    assert call.name == "list_files"
    assert message.response_metadata["finish_reason"] == "UNEXPECTED_TOOL_CALL"
    assert "undeclared function: list_files" in message.response_metadata["finish_message"]


def test_a_safety_finish_is_a_provider_error(server: ReplayServer) -> None:
    with pytest.raises(ProviderError) as caught:
        answer_of(server, "gem_finish_safety")
    error = caught.value
    assert error.error_type == "SAFETY" and error.retryable is False
    assert error.status_code == 200 and error.provider == "google"
    assert str(error) == (
        "google: the answer was withheld, finish reason SAFETY (blocked: HARM_CATEGORY_HATE_SPEECH)"
    )


def test_a_blocked_prompt_is_a_provider_error(server: ReplayServer) -> None:
    with pytest.raises(ProviderError) as caught:
        answer_of(server, "gem_vertex_prompt_blocked")
    assert caught.value.error_type == "prompt_blocked" and caught.value.retryable is False
    assert str(caught.value) == (
        "google: the prompt was blocked (MODEL_ARMOR): The prompt violated Prompt Injection "
        "and Jailbreak filters."
    )


def test_an_unknown_model_is_a_typed_404(server: ReplayServer) -> None:
    with pytest.raises(ProviderError) as caught:
        answer_of(server, "gem_error_404_model_not_found")
    error = caught.value
    assert (error.status_code, error.error_type, error.retryable) == (404, "NOT_FOUND", False)
    assert str(error).startswith(
        "google API error 404 (NOT_FOUND): models/gemini-3.6-flahs is not found for API "
        "version v1beta"
    )
    assert KEY not in str(error)


@pytest.mark.parametrize("name", SSE_STREAMS)
def test_a_stream_cut_before_its_finish_is_an_error(server: ReplayServer, name: str) -> None:
    body = INTERACTIONS[name]["response"]["body"]
    last = body.rstrip("\n").rfind("\n\ndata:")
    server.sse(body[: last + 2], split=7)
    with pytest.raises(ProviderError) as caught:
        list(model_for(server, name).stream([HumanMessage("hi")]))
    assert caught.value.error_type == "stream_interrupted" and caught.value.retryable
