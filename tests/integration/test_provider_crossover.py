"""A thread that moves between providers (``model_fallback``, or a thread switched to
another model) is accepted by each of them.

Every recorded answer with provider-specific parts — Anthropic thinking, redacted
thinking, server tools and citations; Gemini thought parts, signatures and code
execution; Responses reasoning items and built-in tool items; Chat Completions refusals,
annotations and a compatible server's reasoning — is parsed by the provider that
produced it (served from ``../shared/recorded/`` over loopback HTTP, as the provider
tests do), then the next turn of that thread is sent by each OTHER provider to a loopback
server speaking its wire format. The request it sends is checked against that format, as
each API's reference documents it:

- only the block, part and item types the API accepts, each with only its own keys;
- another provider's thinking is dropped, never turned into text: Anthropic accepts a
  ``thinking`` block only with a signature it issued itself, Gemini a thought part only
  with its own ``thoughtSignature``, and the Responses API a ``reasoning`` item only with
  its own ``encrypted_content``/item id — none can carry another's. Sent as plain text,
  the reasoning would read to the next model as something it had said to the user;
- another provider's server-side tool traffic (Anthropic ``server_tool_use`` and its
  results, Gemini ``executableCode``/``codeExecutionResult``, Responses
  ``web_search_call``…) is dropped: no other API has a block for it, and the answer's
  text, which is kept, says what it found;
- signatures and other marks (``thought_signature``, ``cache_control``, ``citations``, a
  Responses message ``id``) never reach an API they were not made by;
- the visible text is kept, and tool calls and their results stay paired by id (in the
  form each API requires: Anthropic's ``^[a-zA-Z0-9_-]+$``).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
import recorded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_server import ReplayServer, Reply

from plait.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
    assemble_chunks,
    message_text,
)
from plait.models.base import ChatModel
from plait.models.openai import OpenAIChatModel
from plait_anthropic import AnthropicChatModel
from plait_openai_responses import OpenAIResponsesModel

plait_google = pytest.importorskip("plait_google")

pytestmark = [
    recorded.needs(recorded.PROVIDERS),
    recorded.needs(recorded.RESPONSES),
    recorded.needs(recorded.GEMINI),
]

FILES = {
    "openai": recorded.PROVIDERS,
    "anthropic": recorded.PROVIDERS,
    "openai-responses": recorded.RESPONSES,
    "google": recorded.GEMINI,
}
PROVIDERS = tuple(FILES)
PLAIN_ANSWER = {
    "openai": "oai_text_plain",
    "anthropic": "ant_text_system",
    "openai-responses": "resp_text_plain",
    "google": "gem_text_plain",
}
"""A plain recorded answer of each provider: what its server answers the moved thread."""

SOURCES = {
    "anthropic": (
        "ant_thinking",
        "ant_redacted_thinking",
        "ant_thinking_tool_use",
        "ant_web_search_server_tool",
        "ant_parallel_tool_use",
        "ant_stream_thinking",
        "ant_stream_redacted_thinking",
        "ant_stream_thinking_tool_use",
        "ant_stream_web_search_server_tool",
        "ant_stream_text_then_tool_use",
    ),
    "openai": (
        "oai_refusal",
        "oai_parallel_tool_calls",
        "oai_tool_required",
        "compat_reasoning_field",
        "compat_stream_split_tool_call",
        "oai_stream_refusal",
        "oai_stream_parallel_tool_calls",
    ),
    "openai-responses": (
        "resp_reasoning_summary",
        "resp_stateless_reasoning_function_call",
        "resp_stateless_reasoning_parallel_calls",
        "resp_parallel_function_calls",
        "resp_web_search_call",
        "resp_web_search_url_citation",
        "resp_file_search_call",
        "resp_code_interpreter_call",
        "resp_stream_reasoning_function_call",
        "resp_stream_reasoning_summary_code_interpreter",
        "resp_stream_web_search_cached",
    ),
    "google": (
        "gem_thinking",
        "gem_function_call",
        "gem_parallel_function_calls",
        "gem_code_execution",
        "gem_vertex_unexpected_tool_call",
        "gem_vertex_stream_signed_text",
        "gem_stream_thinking",
        "gem_stream_json_array_thinking_tool",
        "gem_stream_function_call_thought_signature",
    ),
}
"""The recorded answers with provider-specific parts (or tool calls to pair), by the
provider that produced them; ``test_every_answer_with_native_parts_is_in_the_matrix``
keeps the list whole."""

PAIRS = [
    pytest.param(source, name, target, id=f"{name}->{target}")
    for source, names in SOURCES.items()
    for name in names
    for target in PROVIDERS
    if target != source
]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    srv = ReplayServer()
    yield srv
    srv.close()


def interaction(name: str) -> dict[str, Any]:
    for file in set(FILES.values()):
        found = recorded.interactions(file).get(name)
        if found is not None:
            return dict(found)
    raise KeyError(name)


def model_for(provider: str, server: ReplayServer) -> ChatModel:
    if provider == "openai":
        return OpenAIChatModel("gpt-4o", api_key="test-key", base_url=server.url + "/v1")
    if provider == "anthropic":
        # With thinking on: the setting under which Claude is strictest about a thread.
        thinking = {"type": "enabled", "budget_tokens": 1024}
        return AnthropicChatModel(
            "claude-sonnet-4-5", api_key="test-key", base_url=server.url, thinking=thinking
        )
    if provider == "openai-responses":
        return OpenAIResponsesModel("gpt-5", api_key="test-key", base_url=server.url + "/v1")
    # Gemini 3: the model that refuses an unsigned function call of its own turns.
    return plait_google.GoogleChatModel(
        "gemini-3-pro-preview", api_key="test-key", base_url=server.url
    )


def serve(server: ReplayServer, name: str) -> None:
    response = interaction(name)["response"]
    body = response["body"]
    data = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode()
    server.reply(Reply(response["status"], data, dict(response["headers"])))


def parse_recorded(server: ReplayServer, name: str) -> AIMessage:
    """What the provider that produced ``name`` reads from its recorded answer."""
    item = interaction(name)
    serve(server, name)
    model = model_for(item["provider"], server)
    if recorded.is_stream(item) or "streamGenerateContent" in item.get("path", ""):
        return assemble_chunks(model.stream([HumanMessage("first question")]))
    return model.invoke([HumanMessage("first question")])


def thread(answer: AIMessage) -> list[AnyMessage]:
    """The thread after ``answer``: its tool calls answered, then the user again."""
    messages: list[AnyMessage] = [HumanMessage("first question"), answer]
    messages.extend(
        ToolMessage(f"tool output {index}", tool_call_id=call.id, name=call.name)
        for index, call in enumerate(answer.tool_calls)
    )
    messages.append(HumanMessage("and then?"))
    return messages


def own_secrets(answer: AIMessage) -> list[str]:
    """What only the provider that wrote ``answer`` may read back: its thinking and
    reasoning text, signatures, encrypted reasoning and redacted thinking."""
    found: list[str] = []
    blocks = answer.content if isinstance(answer.content, list) else []
    for block in blocks:
        for key in ("thinking", "signature", "thought_signature", "data", "encrypted_content"):
            value = block.get(key)
            if isinstance(value, str) and len(value) > 8:
                found.append(value)
        for summary in block.get("summary") or ():
            if isinstance(summary, dict) and summary.get("text"):
                found.append(str(summary["text"]))
    reasoning = answer.response_metadata.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        found.append(reasoning)
    signatures = answer.response_metadata.get("thought_signatures") or {}
    found.extend(str(value) for value in signatures.values())
    return found


# -- each API's request, as its reference documents it ------------------------------------

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
ANTHROPIC_BLOCKS: dict[str, dict[str, frozenset[str]]] = {
    "user": {
        "text": frozenset({"type", "text", "citations", "cache_control"}),
        "image": frozenset({"type", "source", "cache_control"}),
        "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
    },
    "assistant": {
        "text": frozenset({"type", "text", "citations", "cache_control"}),
        "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    },
}
"""Block types (and their keys) of the Messages API's request a thread from another
provider may hold; thinking and server-tool blocks are Anthropic's own and never come
from another provider."""


def check_anthropic(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The Messages API request: alternating user/assistant turns, known blocks with their
    own keys, every ``tool_use`` answered by a ``tool_result`` first in the next turn.
    Returns each turn's (role, visible text)."""
    turns = body["messages"]
    if body.get("thinking", {}).get("type", "disabled") != "disabled":
        # With thinking on, a tool-use turn being continued must start with its (signed)
        # thinking block; a thread from another provider has none, so thinking is off.
        last = turns[-1]["content"]
        if isinstance(last, list) and last[0]["type"] == "tool_result":
            assert turns[-2]["content"][0]["type"] in ("thinking", "redacted_thinking")
    assert [turn["role"] for turn in turns] == ["user", "assistant"] * (len(turns) // 2) + [
        "user"
    ] * (len(turns) % 2)
    texts: list[tuple[str, str]] = []
    pending: list[str] = []
    for turn in turns:
        role, content = turn["role"], turn["content"]
        assert set(turn) == {"role", "content"}
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        assert blocks, turn
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert results == pending, "each tool_use is answered first in the next turn"
        assert [b["type"] for b in blocks[: len(results)]] == ["tool_result"] * len(results)
        pending = []
        for block in blocks:
            allowed = ANTHROPIC_BLOCKS[role].get(block["type"])
            assert allowed is not None, f"{role} turn: a {block['type']!r} block"
            assert set(block) <= allowed, f"{block['type']} block with {set(block) - allowed}"
            if block["type"] == "text":
                assert block["text"], "the API rejects empty text blocks"
            if block["type"] == "tool_use":
                assert ANTHROPIC_ID.match(block["id"]), block["id"]
                assert isinstance(block["input"], dict)
                pending.append(block["id"])
            if block["type"] == "tool_result":
                assert ANTHROPIC_ID.match(block["tool_use_id"]), block["tool_use_id"]
        texts.append((role, "".join(b["text"] for b in blocks if b["type"] == "text")))
    assert not pending
    return texts


def check_openai(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The Chat Completions request: system/user/assistant/tool messages with their own
    fields; each tool message answers a call of the assistant message before it."""
    texts: list[tuple[str, str]] = []
    pending: set[str] = set()
    for message in body["messages"]:
        role = message["role"]
        if role == "tool":
            assert set(message) == {"role", "tool_call_id", "content"}
            assert message["tool_call_id"] in pending
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, "every tool call is answered before the next message"
        content = message["content"]
        if role == "assistant":
            assert set(message) <= {"role", "content", "tool_calls"}
            assert content is None or isinstance(content, str)
            for call in message.get("tool_calls", ()):
                assert set(call) == {"id", "type", "function"} and call["type"] == "function"
                assert set(call["function"]) == {"name", "arguments"}
                assert isinstance(json.loads(call["function"]["arguments"]), dict)
                pending.add(call["id"])
        else:
            assert role in ("system", "user") and set(message) == {"role", "content"}
            if isinstance(content, list):
                for part in content:
                    assert part["type"] in ("text", "image_url"), part
                    assert set(part) <= {"type", "text", "image_url"}, part
        text = content if isinstance(content, str) else ""
        if isinstance(content, list):
            text = "".join(p.get("text", "") for p in content)
        texts.append((role, text or ""))
    assert not pending
    return texts


RESPONSES_OWN_ITEMS = frozenset({"reasoning"})


def check_responses(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The Responses API input: role messages with their content parts, function calls and
    their outputs by ``call_id``, and no reasoning or built-in tool items (those are the
    API's own, sent back only to it)."""
    texts: list[tuple[str, str]] = []
    calls: set[str] = set()
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "function_call":
            assert set(item) <= {"type", "call_id", "name", "arguments"}, item
            assert isinstance(json.loads(item["arguments"]), dict)
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            assert set(item) == {"type", "call_id", "output"}
            assert item["call_id"] in calls, "an output answers an earlier call"
        else:
            assert kind == "message" and set(item) == {"role", "content"}, item
            assert item["role"] in ("user", "assistant", "system", "developer")
            content = item["content"]
            if isinstance(content, list):
                for part in content:
                    assert part["type"] in ("input_text", "input_image"), part
                    assert set(part) <= {"type", "text", "image_url", "detail"}, part
                content = "".join(p.get("text", "") for p in content)
            texts.append((item["role"], content))
    return texts


GEMINI_DATA = frozenset(
    {
        "text",
        "inlineData",
        "fileData",
        "functionCall",
        "functionResponse",
        "executableCode",
        "codeExecutionResult",
    }
)


def check_google(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``generateContent`` request: alternating user/model turns of parts with one data
    field each; no thought part and no signature but Google's documented placeholder (the
    thread's thoughts and signatures were another provider's); each function response
    names a call of the model turn before it, by id and name."""
    turns = body["contents"]
    roles = [turn["role"] for turn in turns]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert roles[0] == "user" and set(roles) <= {"user", "model"}
    texts: list[tuple[str, str]] = []
    calls: dict[str, str] = {}
    for turn in turns:
        assert set(turn) == {"role", "parts"} and turn["parts"]
        for part in turn["parts"]:
            data = set(part) & GEMINI_DATA
            assert len(data) == 1 and set(part) - data <= {"thoughtSignature"}, part
            signature = part.get("thoughtSignature")
            assert signature in (None, plait_google._request.SKIP_SIGNATURE), part
            if signature is not None:
                assert "functionCall" in part
            if "functionCall" in part:
                call = part["functionCall"]
                assert turn["role"] == "model" and set(call) == {"name", "args", "id"}
                calls[call["id"]] = call["name"]
            if "functionResponse" in part:
                response = part["functionResponse"]
                assert turn["role"] == "user"
                assert calls.pop(response["id"]) == response["name"]
        texts.append(
            (
                "assistant" if turn["role"] == "model" else "user",
                "".join(p.get("text", "") for p in turn["parts"]),
            )
        )
    assert not calls, "every function call is answered"
    return texts


CHECKS = {
    "anthropic": check_anthropic,
    "openai": check_openai,
    "openai-responses": check_responses,
    "google": check_google,
}


# -- the matrix -----------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "name", "target"), PAIRS)
def test_the_next_turn_is_valid_for_the_other_provider(
    server: ReplayServer, source: str, name: str, target: str
) -> None:
    answer = parse_recorded(server, name)
    messages = thread(answer)
    serve(server, PLAIN_ANSWER[target])
    reply = model_for(target, server).invoke(messages)
    assert reply.text, "the other provider's server answered the request"
    body = server.last.body

    texts = CHECKS[target](body)
    # The answer's visible text is the assistant text sent back (an OpenAI refusal, the
    # only text of its answer, is sent as text: no other API has a refusal field).
    sent = "".join(text for role, text in texts if role == "assistant")
    expected = message_text(answer.content)
    if not expected and not answer.tool_calls:
        expected = str(answer.response_metadata.get("refusal") or "")
    assert sent == expected
    # The user's turns arrive whole.
    users = "".join(text for role, text in texts if role == "user")
    assert "first question" in users and users.endswith("and then?")
    # Nothing only the source provider may read reaches the other one.
    wire = json.dumps(body, ensure_ascii=False)
    leaked = [secret[:40] for secret in own_secrets(answer) if secret in wire]
    assert not leaked, f"{source}'s own thinking/signatures sent to {target}"
    # Every tool result is sent once (the checks above paired it with its call).
    for index in range(len(answer.tool_calls)):
        assert wire.count(f"tool output {index}") == 1


def test_every_answer_with_native_parts_is_in_the_matrix(server: ReplayServer) -> None:
    """Each recorded 200 answer whose parsed message carries blocks or provider extras
    (a refusal, a compatible server's reasoning, Gemini signatures) is a source above."""
    listed = {name for names in SOURCES.values() for name in names}
    missing = []
    for file in set(FILES.values()):
        for name, item in recorded.interactions(file).items():
            if item["response"]["status"] != 200 or name.endswith("_roundtrip"):
                continue
            try:
                answer = parse_recorded(server, name)
            except Exception:  # a blocked answer, an error in a 200: no thread goes on
                continue
            extras = {"refusal", "reasoning", "thought_signatures"} & set(answer.response_metadata)
            native = isinstance(answer.content, list) or extras
            if native and name not in listed:
                missing.append(name)
    assert not missing


def test_tool_ids_claude_refuses_stay_paired_and_distinct(server: ReplayServer) -> None:
    """Ids Anthropic's pattern refuses (Kimi's ``functions.get:0``) are rewritten the same
    for the call and its result, and two ids that differ only in those characters stay
    two ids."""
    ids = ["functions.get:0", "functions.get.0", "functions_get_0"]
    answer = AIMessage("", tool_calls=[ToolCall("get", {}, call_id) for call_id in ids])
    serve(server, PLAIN_ANSWER["anthropic"])
    model_for("anthropic", server).invoke(thread(answer))
    check_anthropic(server.last.body)
    sent = server.last.body["messages"]
    uses = [block["id"] for block in sent[1]["content"]]
    results = [block["tool_use_id"] for block in sent[2]["content"][: len(ids)]]
    assert uses == results and len(set(uses)) == 3
    assert uses[2] == "functions_get_0"


def test_a_refusal_goes_back_to_chat_completions_as_text(server: ReplayServer) -> None:
    """The refusal is the answer's only text: sent back as it, never as an empty turn."""
    answer = parse_recorded(server, "oai_refusal")
    serve(server, PLAIN_ANSWER["openai"])
    model_for("openai", server).invoke(thread(answer))
    assert server.last.body["messages"][1] == {
        "role": "assistant",
        "content": answer.response_metadata["refusal"],
    }


# -- a user's image, in any provider's form -------------------------------------------------

PNG = "iVBORw0KGgo="
WEB = "https://example.com/cat.png"
IMAGES = {
    "openai": (
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": WEB}},
    ),
    "openai-responses": (
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
        {"type": "input_image", "image_url": WEB},
    ),
    "anthropic": (
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": WEB}},
    ),
    "google": (
        {"type": "inlineData", "inlineData": {"mimeType": "image/png", "data": PNG}},
        {"type": "fileData", "fileData": {"mimeType": "image/png", "fileUri": WEB}},
    ),
}
"""The same two images (base64 data, a web address) in each provider's block form."""
SENT_IMAGES = {
    "openai": (IMAGES["openai"][0], IMAGES["openai"][1]),
    "openai-responses": (IMAGES["openai-responses"][0], IMAGES["openai-responses"][1]),
    "anthropic": (IMAGES["anthropic"][0], IMAGES["anthropic"][1]),
    "google": (
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"fileUri": WEB}},
    ),
}
"""How each provider's request carries them (Gemini's ``fileData`` for a web address of
another provider's form has no MIME type to give)."""


def user_parts(target: str, body: dict[str, Any]) -> list[Any]:
    if target == "google":
        return list(body["contents"][0]["parts"])
    if target == "openai-responses":
        return list(body["input"][0]["content"])
    return list(body["messages"][0]["content"])


@pytest.mark.parametrize(
    ("form", "target"),
    [pytest.param(f, t, id=f"{f}->{t}") for f in PROVIDERS for t in PROVIDERS],
)
def test_a_users_image_reaches_each_provider_in_its_form(
    server: ReplayServer, form: str, target: str
) -> None:
    """A user's image given in one provider's form (a thread begun there) is sent to each
    provider in the form its API documents, base64 data and web address alike."""
    data, web = IMAGES[form]
    serve(server, PLAIN_ANSWER[target])
    model_for(target, server).invoke([HumanMessage([{"type": "text", "text": "what?"}, data, web])])
    sent = user_parts(target, server.last.body)[1:]
    expected = list(SENT_IMAGES[target])
    if target == "google" and form == "google":
        expected[1] = {"fileData": {"mimeType": "image/png", "fileUri": WEB}}
    assert sent == expected


# -- any mix of another provider's parts ----------------------------------------------------


@functools.cache
def recorded_parts() -> dict[str, tuple[tuple[dict[str, Any], ...], tuple[str, ...]]]:
    """Every block of the recorded answers above, and every secret in them, by the
    provider that wrote them."""
    server = ReplayServer()
    try:
        out = {}
        for source, names in SOURCES.items():
            blocks: list[dict[str, Any]] = []
            secrets: list[str] = []
            for name in names:
                answer = parse_recorded(server, name)
                if isinstance(answer.content, list):
                    blocks.extend(answer.content)
                secrets.extend(own_secrets(answer))
            out[source] = (tuple(blocks), tuple(secrets))
        return out
    finally:
        server.close()


@st.composite
def foreign_answers(draw: st.DrawFn, target: str) -> tuple[AIMessage, tuple[str, ...]]:
    """An answer made of the real blocks of one provider other than ``target`` (in any
    order and number), with tool calls whose ids use any characters."""
    source = draw(st.sampled_from([p for p in PROVIDERS if p != target]))
    pool, secrets = recorded_parts()[source]
    blocks = draw(st.lists(st.sampled_from(pool), max_size=6)) if pool else []
    ids = draw(
        st.lists(
            st.text(string.ascii_letters + string.digits + "_-.:|/ ", min_size=1, max_size=12),
            max_size=3,
            unique=True,
        )
    )
    calls = [ToolCall("lookup", {"n": index}, call_id) for index, call_id in enumerate(ids)]
    return AIMessage([dict(b) for b in blocks], tool_calls=calls), secrets


@pytest.mark.parametrize("target", PROVIDERS)
def test_any_mix_of_another_providers_parts_is_accepted(target: str) -> None:
    """Beyond the recorded answers as they came: any mix of one provider's real blocks,
    with tool calls whose ids the target may refuse, makes a request the target accepts."""
    server = ReplayServer()
    model = model_for(target, server)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(foreign_answers(target))
    def check(drawn: tuple[AIMessage, tuple[str, ...]]) -> None:
        answer, secrets = drawn
        serve(server, PLAIN_ANSWER[target])
        model.invoke(thread(answer))
        body = server.last.body
        texts = CHECKS[target](body)
        sent = "".join(text for role, text in texts if role == "assistant")
        assert sent == message_text(answer.content)
        wire = json.dumps(body, ensure_ascii=False)
        assert not [secret for secret in secrets if secret in wire]

    try:
        check()
    finally:
        server.close()


def test_a_tool_results_image_reaches_claude_in_its_form(server: ReplayServer) -> None:
    """A tool's result with another provider's image (an MCP screenshot given as a Chat
    Completions part) goes to Claude as an ``image`` block inside the ``tool_result``."""
    call = ToolCall("screenshot", {}, "call_1")
    result = ToolMessage(
        [{"type": "text", "text": "the page"}, IMAGES["openai"][0]],
        tool_call_id="call_1",
        name="screenshot",
    )
    serve(server, PLAIN_ANSWER["anthropic"])
    model_for("anthropic", server).invoke(
        [HumanMessage("look"), AIMessage("", tool_calls=[call]), result]
    )
    check_anthropic(server.last.body)
    (sent,) = server.last.body["messages"][-1]["content"]
    assert sent["content"] == [{"type": "text", "text": "the page"}, IMAGES["anthropic"][0]]
