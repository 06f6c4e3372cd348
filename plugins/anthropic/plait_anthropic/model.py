"""The ``anthropic`` provider: the Messages API over httpx.

``usage.input_tokens`` is the whole prompt: Anthropic's ``input_tokens`` (the uncached
part) plus ``cache_read_input_tokens`` plus ``cache_creation_input_tokens``, so it means
the same as OpenAI's ``prompt_tokens``; ``cache_read_tokens`` and ``cache_write_tokens``
are those two cached parts, ``cache_write_5m_tokens``/``cache_write_1h_tokens`` the
writes by lifetime (``usage.cache_creation``), ``server_tool_requests`` the server tools
run (``usage.server_tool_use``: ``{"web_search": 1}``). ``service_tier`` goes into
``response_metadata``.

Text blocks with citations are kept as blocks (``content`` is then a block list, plain
text between them merged), in ``invoke`` and in streams alike.

System messages anywhere in the list are sent as the request's ``system`` (the Messages
API has no system turns); block-list content keeps its blocks, so cache marks on a system
block survive. ``response_format`` becomes a forced tool whose input is the answer; that
input comes back as the message text (JSON), not as a tool call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from plait import ModelProfile
from plait.errors import ConfigError
from plait.lazy import frozen
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    Usage,
)
from plait.models.http import (
    ChatRequest,
    HTTPChatModel,
    PreparedCall,
    SSEEvent,
    StreamParser,
    body_error,
    loads_event,
    merge_text_blocks,
    read_image,
    resolve_tool_choice,
    safe_tool_name,
    stream_error,
    wire,
)
from plait.options import expected, integer
from plait_anthropic._cache_marks import CACHE_BREAKPOINTS, place_breakpoints

if TYPE_CHECKING:
    from plait.models.http import ToolDefinition

__all__ = ["AnthropicChatModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
"""Sent when no ``max_tokens`` is given (the API requires one), or the model's own maximum
if that is lower."""


def _p(max_input: int, max_output: int) -> ModelProfile:
    return ModelProfile(max_input_tokens=max_input, max_output_tokens=max_output)


PROFILES: dict[str, ModelProfile] = {
    "claude-opus-4-5": _p(200_000, 64_000),
    "claude-sonnet-4-5": _p(200_000, 64_000),
    "claude-haiku-4-5": _p(200_000, 64_000),
    "claude-opus-4-1": _p(200_000, 32_000),
    "claude-opus-4": _p(200_000, 32_000),
    "claude-opus-4-0": _p(200_000, 32_000),
    "claude-sonnet-4": _p(200_000, 64_000),
    "claude-sonnet-4-0": _p(200_000, 64_000),
    "claude-3-7-sonnet": _p(200_000, 64_000),
    "claude-3-5-sonnet": _p(200_000, 8_192),
    "claude-3-5-haiku": _p(200_000, 8_192),
    "claude-3-opus": _p(200_000, 4_096),
    "claude-3-haiku": _p(200_000, 4_096),
}
"""Anthropic's documented limits by model family. Extended windows that need a beta header
(Claude's 1M context) are not assumed; pass ``profile=`` to say you use them."""


BETAS = "betas"
"""The request option (``{"anthropic": {"betas": ["context-management-2025-06-27"]}}``)
sent as the ``anthropic-beta`` header, as the official SDKs' ``betas`` argument is."""

# -- another provider's answer ----------------------------------------------------------------

TEXT_KEYS = frozenset({"type", "text", "citations", "cache_control"})
"""The keys of a text block the Messages API reads; another provider's marks on a text
block (Gemini's ``thought_signature``, a Responses message ``id``) are left out."""
_OWN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
_TOOL_ID = re.compile(r"^[A-Za-z0-9_-]+$")
logger = logging.getLogger("plait.models")


def _is_foreign(block: Mapping[str, Any]) -> bool:
    """Whether a block of an answer was written by another provider, so it cannot be sent
    back here: its thinking (a Gemini thought, a Responses ``reasoning`` item — the API
    takes a ``thinking`` block only with the signature it issued itself, and the reasoning
    is not turned into text the next model would read as said to the user), its
    server-side tool traffic (Gemini code execution, Responses ``web_search_call``...: no
    Messages API block stands for it; the answer's text says what it found) and its
    place-holders. Anthropic's own server tools are ``*_tool_use``/``*_tool_result``."""
    kind = str(block.get("type", ""))
    if kind == "thinking":
        return not block.get("signature") or "thought_signature" in block
    return kind not in _OWN_BLOCKS and not kind.endswith(("_tool_use", "_tool_result"))


def _tool_id(value: str) -> str:
    """A tool-call id as the API takes it (``^[a-zA-Z0-9_-]+$``): another provider's id
    with other characters (Kimi's ``functions.get:0``) gets them replaced and a short hash
    of the original appended, so the call and its result still match and two ids never
    become one."""
    if _TOOL_ID.match(value):
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:8]
    return f"{safe_tool_name(value, max_length=None)}_{digest}"


# -- the wire format ------------------------------------------------------------------------


@frozen
class _CacheCreation:
    ephemeral_5m_input_tokens: int | None = None
    ephemeral_1h_input_tokens: int | None = None


@frozen
class _Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation: _CacheCreation | None = None
    server_tool_use: dict[str, Any] | None = None
    service_tier: str | None = None


@frozen
class _Message:
    id: str | None = None
    model: str | None = None
    content: list[dict[str, Any]] = attrs.Factory(list)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: _Usage | None = None


@frozen
class _Text:
    text: str


@frozen
class _ToolUse:
    id: str
    name: str
    input: dict[str, Any] = attrs.Factory(dict)


@frozen
class _MessageStart:
    message: _Message


@frozen
class _BlockStart:
    index: int
    content_block: dict[str, Any]


@frozen
class _BlockDelta:
    index: int
    delta: dict[str, Any]


@frozen
class _BlockStop:
    index: int


@frozen
class _StopDelta:
    stop_reason: str | None = None
    stop_sequence: str | None = None


@frozen
class _MessageDelta:
    delta: _StopDelta = _StopDelta()
    usage: _Usage | None = None


@frozen
class _ErrorDetail:
    type: str | None = None
    message: str | None = None


@frozen
class _ErrorEvent:
    error: _ErrorDetail = _ErrorDetail()


def _usage(usage: _Usage | None) -> Usage | None:
    if usage is None:
        return None
    read = usage.cache_read_input_tokens or 0
    write = usage.cache_creation_input_tokens or 0
    lifetimes = usage.cache_creation or _CacheCreation()
    requests = {
        name.removesuffix("_requests"): count
        for name, count in (usage.server_tool_use or {}).items()
        if name.endswith("_requests") and isinstance(count, int) and count > 0
    }
    return Usage(
        input_tokens=(usage.input_tokens or 0) + read + write,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_5m_tokens=lifetimes.ephemeral_5m_input_tokens or 0,
        cache_write_1h_tokens=lifetimes.ephemeral_1h_input_tokens or 0,
        server_tool_requests=requests,
    )


def _merge_usage(start: _Usage | None, end: _Usage | None) -> _Usage | None:
    """``message_delta`` usage is cumulative and may omit fields ``message_start`` had."""
    if start is None:
        return end
    if end is None:
        return start
    given = {
        field.name: getattr(end, field.name)
        for field in attrs.fields(_Usage)
        if getattr(end, field.name) is not None
    }
    return attrs.evolve(start, **given)


def _answer_json(value: Any) -> str:
    """The text a structured answer is given as (the same for invoke and stream)."""
    return json.dumps(value, ensure_ascii=False)


# -- the model ------------------------------------------------------------------------------


class AnthropicChatModel(HTTPChatModel):
    """A Messages API model: ``AnthropicChatModel("claude-sonnet-4-5", max_tokens=4096)``.

    ``api_key`` defaults to ``ANTHROPIC_API_KEY``; ``base_url`` to ``ANTHROPIC_BASE_URL``,
    then ``https://api.anthropic.com``. ``max_tokens`` defaults to 8192 (or the model's
    maximum, if lower). Other keyword settings (``temperature``, ``top_p``, ``top_k``,
    ``stop``...) go into every request body.
    """

    provider: ClassVar[str] = "anthropic"
    api_key_env: ClassVar[str] = "ANTHROPIC_API_KEY"
    base_url_env: ClassVar[str] = "ANTHROPIC_BASE_URL"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    key_shapes: ClassVar[Sequence[str]] = (r"\bsk-ant-[A-Za-z0-9_*\-]{6,}",)
    known_profiles: ClassVar[Mapping[str, ModelProfile]] = PROFILES
    auth_header: ClassVar[str] = "x-api-key"
    auth_scheme: ClassVar[str] = ""
    api_headers: ClassVar[Mapping[str, str]] = {"anthropic-version": API_VERSION}
    overflow_words: ClassVar[Sequence[str]] = (
        "prompt is too long",
        "context window",
        "too many tokens",
    )

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 60.0,
        max_tokens: int | None = None,
        profile: ModelProfile | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            profile=profile,
            headers=headers,
            **settings,
        )
        if max_tokens is None:
            limit = self.profile.max_output_tokens if self.profile else None
            max_tokens = min(DEFAULT_MAX_TOKENS, limit or DEFAULT_MAX_TOKENS)
        problem = integer(minimum=1).problem(max_tokens)
        if problem is not None:
            raise ConfigError(f"anthropic: max_tokens: {problem}")
        self.max_tokens = max_tokens

    def _betas(self, value: Any) -> dict[str, str]:
        """The ``anthropic-beta`` header for the ``betas`` request option: the model's own
        betas (its ``headers``) and the request's, each once."""
        if (
            isinstance(value, str)
            or not isinstance(value, Sequence)
            or not all(isinstance(item, str) and item for item in value)
        ):
            wanted = "a list of beta names such as ['context-management-2025-06-27']"
            raise ConfigError(f"anthropic: provider option {BETAS!r}: {expected(wanted, value)}")
        configured = next(
            (v for k, v in self.extra_headers.items() if k.lower() == "anthropic-beta"), ""
        )
        names = [name.strip() for name in configured.split(",") if name.strip()]
        names.extend(value)
        return {"anthropic-beta": ",".join(dict.fromkeys(names))} if names else {}

    # -- request -------------------------------------------------------------------------

    def _prepare(self, request: ChatRequest) -> PreparedCall:
        system: list[dict[str, Any]] = []
        if request.system_prompt:
            system.append({"type": "text", "text": request.system_prompt})
        turns: list[dict[str, Any]] = []
        for message in request.messages:
            if isinstance(message, SystemMessage):
                system.extend(_blocks(message.content))
                continue
            role, blocks = self._turn(message)
            if not blocks:
                continue
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})
        for turn in turns:
            turn["content"] = _compact(turn["content"])
        body: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": self.max_tokens,
            "messages": turns,
        }
        if system:
            body["system"] = _system(system)
        for key, value in request.settings.items():
            if key == "stop":
                key, value = "stop_sequences", [value] if isinstance(value, str) else value
            body[key] = value
        wire_tools = [self._tool(t) for t in request.tools]
        answer_tool: str | None = None
        if request.response_format is not None:
            answer_tool = safe_tool_name(str(request.response_format.get("title") or ""))
            answer_tool = answer_tool or "structured_response"
            wire_tools.append(
                {
                    "name": answer_tool,
                    "description": "Give your final answer by calling this tool; its input "
                    "is the answer, in the required format.",
                    "input_schema": dict(request.response_format),
                }
            )
        choice = self._tool_choice(request.tool_choice, request.tools, answer_tool)
        if wire_tools:
            body["tools"] = wire_tools
            if choice is not None:
                body["tool_choice"] = choice
        if request.stream:
            body["stream"] = True
        options = request.options_for("anthropic")
        breakpoints = options.pop(CACHE_BREAKPOINTS, None)
        headers = self._betas(options.pop(BETAS)) if BETAS in options else {}
        body.update(options)
        if breakpoints is not None:
            place_breakpoints(body, breakpoints)
        thinking = body.get("thinking")
        if answer_tool and request.tool_choice is None and isinstance(thinking, Mapping):
            if thinking.get("type") == "enabled":
                # Extended thinking cannot be combined with a forced tool: offer it instead.
                body["tool_choice"] = {"type": "auto"}
        if isinstance(thinking, Mapping) and thinking.get("type") != "disabled":
            if not _loop_starts_thinking(turns):
                # With thinking on, the API takes a tool-use turn being continued only if it
                # starts with its thinking block; a turn another provider wrote (or one
                # written with thinking off) has none, so this call goes without, as the
                # API's own error advises. Later turns think again.
                logger.info(
                    "anthropic: thinking turned off for this call: the tool-use turn it "
                    "continues has no Claude thinking block (written by another model?)"
                )
                body["thinking"] = {"type": "disabled"}
        return PreparedCall(f"{self.base_url}/v1/messages", body, answer_tool, headers)

    @staticmethod
    def _turn(message: AnyMessage) -> tuple[str, list[dict[str, Any]]]:
        if isinstance(message, HumanMessage):
            return "user", _blocks(message.content)
        if isinstance(message, ToolMessage):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": _tool_id(message.tool_call_id),
                # Block content as the API reads it (another provider's image converted).
                "content": message.content
                if isinstance(message.content, str)
                else _blocks(message.content),
            }
            if message.status == "error":
                result["is_error"] = True
            return "user", [result]
        if isinstance(message, AIMessage):
            blocks = [block for block in _blocks(message.content) if not _is_foreign(block)]
            refusal = message.response_metadata.get("refusal")
            if not blocks and not message.tool_calls and isinstance(refusal, str) and refusal:
                # An OpenAI refusal is the answer's only text: the turn says it, as text.
                blocks = [{"type": "text", "text": refusal}]
            blocks.extend(
                {"type": "tool_use", "id": _tool_id(call.id), "name": call.name, "input": call.args}
                for call in message.tool_calls
            )
            return "assistant", blocks
        raise TypeError(f"anthropic: cannot send a {type(message).__name__}")

    @staticmethod
    def _tool(tool: ToolDefinition) -> dict[str, Any]:
        options = dict(tool.provider_options.get("anthropic", {}))
        if options.get("type", "custom") != "custom":
            # A provider-defined tool (bash, text editor, web search...): its type says it
            # all, and the API rejects a schema for it.
            return {"name": tool.name, **options}
        out: dict[str, Any] = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description:
            out["description"] = tool.description
        out.update(options)
        return out

    @staticmethod
    def _tool_choice(
        choice: str | None, tools: Sequence[ToolDefinition], answer_tool: str | None
    ) -> dict[str, Any] | None:
        if choice is None:
            if answer_tool is None:
                return None
            # The answer is a tool call: force it, or (with real tools) force some tool.
            return {"type": "any"} if tools else {"type": "tool", "name": answer_tool}
        extra = () if answer_tool is None else (answer_tool,)
        resolved = resolve_tool_choice("anthropic", choice, tools, extra=extra)
        if resolved.mode == "tool":
            return {"type": "tool", "name": resolved.name}
        return {"type": "any" if resolved.mode == "required" else resolved.mode}

    # -- response ------------------------------------------------------------------------

    def _parse(self, call: PreparedCall, data: Any, metadata: dict[str, Any]) -> AIMessage:
        if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
            error = wire.structure(data["error"], _ErrorDetail)
            raise body_error("anthropic", error.message or json.dumps(data)[:500], error.type)
        if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
            # A 200 that is not a message ({}, []) is no empty answer.
            raise ValueError("not a message")
        message = wire.structure(data, _Message)
        texts: list[str] = []
        kept: list[dict[str, Any]] = []
        native = False
        calls: list[ToolCall] = []
        for block in message.content:
            kind = block.get("type")
            if kind == "text":
                texts.append(wire.structure(block, _Text).text)
                kept.append(_text_block(texts[-1], block.get("citations")))
                native = native or "citations" in kept[-1]
            elif kind == "tool_use":
                use = wire.structure(block, _ToolUse)
                if call.context is not None and use.name == call.context:
                    texts.append(_answer_json(use.input))
                    kept.append({"type": "text", "text": texts[-1]})
                else:
                    calls.append(ToolCall(use.name, dict(use.input), use.id))
            else:
                native = True
                kept.append(dict(block))
        metadata.update(_metadata(message))
        return AIMessage(
            merge_text_blocks(kept) if native else "".join(texts),
            tool_calls=calls,
            usage=_usage(message.usage),
            response_metadata=metadata,
        )

    def _stream_parser(self, call: PreparedCall, metadata: dict[str, Any], id: str) -> StreamParser:
        return _AnthropicStream(metadata, id, call.context)


def _metadata(message: _Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if message.model is not None:
        out["model"] = message.model
    if message.id is not None:
        out["response_id"] = message.id
    if message.stop_reason is not None:
        out["finish_reason"] = message.stop_reason
    if message.stop_sequence is not None:
        out["stop_sequence"] = message.stop_sequence
    if message.usage is not None and message.usage.service_tier is not None:
        out["service_tier"] = message.usage.service_tier
    return out


def _text_block(text: str, citations: Any) -> dict[str, Any]:
    """A text block as plait keeps it: with its citations when it has any."""
    block: dict[str, Any] = {"type": "text", "text": text}
    if isinstance(citations, list) and citations:
        block["citations"] = [dict(c) for c in citations]
    return block


class _AnthropicStream(StreamParser):
    """Messages API events → chunks. Text deltas are content; ``tool_use`` blocks become
    tool-call chunks (the answer tool of ``response_format`` becomes its JSON text, sent
    whole when its block ends, so it equals what ``invoke`` returns). Thinking,
    server-tool and other native blocks are assembled from their deltas and sent whole, as
    chunk ``blocks``, when they end — so the next turn can send them back."""

    def __init__(self, metadata: dict[str, Any], id: str, answer_tool: str | None) -> None:
        self.metadata = metadata
        self.id = id
        self.answer_tool = answer_tool
        self.tools: dict[int, int] = {}  # block index -> tool-call position
        self.answer: dict[int, list[str]] = {}  # block index -> JSON fragments
        self.native: dict[int, dict[str, Any]] = {}  # block index -> block being built
        self.native_json: dict[int, list[str]] = {}  # its input's JSON fragments
        self.texts: dict[int, tuple[list[str], list[dict[str, Any]]]] = {}  # text, citations
        self.usage: _Usage | None = None

    def _chunk(self, content: str = "", **kwargs: Any) -> AIMessageChunk:
        return AIMessageChunk(content, id=self.id, **kwargs)

    def _grow(self, block: dict[str, Any], index: int, delta: Mapping[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking", "")) + str(delta.get("thinking", ""))
        elif kind == "signature_delta":
            block["signature"] = str(block.get("signature", "")) + str(delta.get("signature", ""))
        elif kind == "input_json_delta":
            self.native_json.setdefault(index, []).append(str(delta.get("partial_json", "")))

    def _finish(self, index: int) -> dict[str, Any]:
        block = self.native.pop(index)
        fragments = self.native_json.pop(index, None)
        if fragments is not None:
            raw = "".join(fragments)
            try:
                block["input"] = json.loads(raw) if raw.strip() else {}
            except ValueError:
                block["input"] = raw
        return block

    def feed(self, event: SSEEvent) -> list[AIMessageChunk]:
        kind = event.event
        if kind == "ping":
            return []
        if kind == "message_start":
            start: _MessageStart = loads_event("anthropic", event, _MessageStart)
            self.usage = start.message.usage
            return [self._chunk(response_metadata={**self.metadata, **_metadata(start.message)})]
        if kind == "content_block_start":
            block_start: _BlockStart = loads_event("anthropic", event, _BlockStart)
            block = block_start.content_block
            if block.get("type") == "text":
                text = wire.structure(block, _Text).text
                cited = block.get("citations")
                self.texts[block_start.index] = (
                    [text],
                    [dict(c) for c in cited] if isinstance(cited, list) else [],
                )
                return [self._chunk(text)] if text else []
            if block.get("type") == "tool_use":
                use = wire.structure(block, _ToolUse)
                if self.answer_tool is not None and use.name == self.answer_tool:
                    self.answer[block_start.index] = []
                    return []
                position = len(self.tools)
                self.tools[block_start.index] = position
                return [self._chunk(tool_call_chunks=[ToolCallChunk(position, use.id, use.name)])]
            self.native[block_start.index] = dict(block)
            return []
        if kind == "content_block_delta":
            delta: _BlockDelta = loads_event("anthropic", event, _BlockDelta)
            body = delta.delta
            if body.get("type") == "text_delta":
                text = str(body.get("text", ""))
                if delta.index in self.texts:
                    self.texts[delta.index][0].append(text)
                return [self._chunk(text)]
            if body.get("type") == "citations_delta" and delta.index in self.texts:
                citation = body.get("citation")
                if isinstance(citation, Mapping):
                    self.texts[delta.index][1].append(dict(citation))
                return []
            native = self.native.get(delta.index)
            if native is not None:
                self._grow(native, delta.index, body)
                return []
            if body.get("type") == "input_json_delta":
                fragment = str(body.get("partial_json", ""))
                if delta.index in self.answer:
                    self.answer[delta.index].append(fragment)
                elif delta.index in self.tools:
                    part = ToolCallChunk(self.tools[delta.index], args=fragment)
                    return [self._chunk(tool_call_chunks=[part])]
            return []
        if kind == "content_block_stop":
            stop: _BlockStop = loads_event("anthropic", event, _BlockStop)
            if stop.index in self.native:
                return [self._chunk(blocks=[self._finish(stop.index)])]
            if stop.index in self.texts:
                pieces, citations = self.texts.pop(stop.index)
                if not citations:
                    return []
                # The text went out as it came; the finished block stands in for it.
                return [self._chunk(blocks=[_text_block("".join(pieces), citations)])]
            fragments = self.answer.pop(stop.index, None)
            if fragments is None:
                return []
            raw = "".join(fragments)
            try:
                text = _answer_json(json.loads(raw) if raw.strip() else {})
            except ValueError:
                text = raw
            return [self._chunk(text)]
        if kind == "message_delta":
            end: _MessageDelta = loads_event("anthropic", event, _MessageDelta)
            metadata: dict[str, Any] = {}
            if end.delta.stop_reason is not None:
                metadata["finish_reason"] = end.delta.stop_reason
                self.complete = True
            if end.delta.stop_sequence is not None:
                metadata["stop_sequence"] = end.delta.stop_sequence
            merged = _merge_usage(self.usage, end.usage)
            if merged is not None and merged.service_tier is not None:
                metadata["service_tier"] = merged.service_tier
            return [self._chunk(usage=_usage(merged), response_metadata=metadata)]
        if kind == "message_stop":
            self.complete = True
            return []
        if kind == "error":
            error: _ErrorEvent = loads_event("anthropic", event, _ErrorEvent)
            raise stream_error("anthropic", error.error.message or event.data, error.error.type)
        return []


def _loop_starts_thinking(turns: list[dict[str, Any]]) -> bool:
    """Whether the request either continues no tool-use turn (its last turn is not tool
    results) or continues one that starts with a thinking block."""
    if len(turns) < 2 or turns[-1]["role"] != "user" or turns[-2]["role"] != "assistant":
        return True
    results, turn = turns[-1]["content"], turns[-2]["content"]
    if isinstance(results, str) or not results or results[0].get("type") != "tool_result":
        return True
    return not isinstance(turn, str) and turn[0].get("type") in ("thinking", "redacted_thinking")


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Content as a block list; empty text is dropped (the API rejects empty text blocks),
    a text block keeps only the keys the API reads, and another provider's image is sent
    as an ``image`` block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for block in content:
        image = read_image(block) if block.get("type") != "image" else None
        if image is not None:
            # Another provider's image (Chat Completions, Responses, Gemini): as this API's.
            out.append(image.anthropic())
        elif block.get("type") != "text":
            out.append(dict(block))
        elif block.get("text"):
            out.append({key: value for key, value in block.items() if key in TEXT_KEYS})
    return out


def _system(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Plain text parts are joined into one string; marked blocks are kept as blocks."""
    if all(set(b) == {"type", "text"} and b["type"] == "text" for b in blocks):
        return "\n\n".join(str(b["text"]) for b in blocks)
    return blocks


def _compact(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A single plain text block is sent as a string (the API's short form)."""
    if all(set(b) == {"type", "text"} and b["type"] == "text" for b in blocks):
        if len(blocks) == 1:
            return str(blocks[0]["text"])
    return blocks
