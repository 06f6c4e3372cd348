"""The ``openai-responses`` provider: OpenAI's Responses API (``POST {base_url}/responses``)
over httpx.

A conversation is sent as input items: ``system_prompt`` as ``instructions``, user and
system messages as role items, an ``AIMessage`` as the output items it came from (its
text, its function calls, and the reasoning and built-in tool items kept in its content
blocks, exactly as the API returned them), a ``ToolMessage`` as a ``function_call_output``.

An answer's output items become one ``AIMessage``: ``output_text`` parts are the text,
``function_call`` items the tool calls, and every other item (``reasoning`` with its
``encrypted_content``, ``web_search_call``, ``file_search_call``, ``code_interpreter_call``…)
a content block of its own, in output order, so the next turn sends it back unchanged.
After such a block, a text part keeps its message's ``id`` and a function call leaves a
``{"type": "function_call", "call_id", "id"}`` block where it stood: a reasoning item must
be sent back followed by the very item that followed it.

Status errors, redaction, retry classification and SSE decoding are ``HTTPChatModel``'s,
the same as the Chat Completions provider's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from plait import ModelProfile
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
    parse_tool_call,
)
from plait.models.http import (
    IMAGE_TYPES,
    ChatRequest,
    HTTPChatModel,
    PreparedCall,
    SSEEvent,
    StreamParser,
    body_error,
    foreign_text_keys,
    loads_event,
    merge_text_blocks,
    read_image,
    resolve_tool_choice,
    stream_error,
    wire,
)
from plait.models.openai import (
    OpenAIAccount,
    json_schema_format,
    strict_ok,
)

if TYPE_CHECKING:
    from plait.models.http import ToolDefinition

__all__ = ["OpenAIResponsesModel"]

PROVIDER = "openai-responses"
DEFAULT_TIMEOUT = 600.0
"""Seconds for connect and each read: a reasoning model thinks for minutes before the first
byte of a non-streamed answer (the official SDK waits ten minutes too)."""

_OWN_ITEMS = frozenset({"message", "function_call"})
"""Output item types turned into text and tool calls; every other type is kept whole."""
_OTHER_ITEMS = frozenset(
    {"reasoning", "mcp_list_tools", "mcp_approval_request", "item_reference", "compaction"}
)


def _is_item(block: Mapping[str, Any]) -> bool:
    """Whether a kept block is a Responses item (reasoning, a built-in tool's call or its
    output...), not another provider's block (an Anthropic ``thinking`` block)."""
    kind = str(block.get("type", ""))
    return kind in _OTHER_ITEMS or kind.endswith(("_call", "_call_output"))


# -- the wire format ------------------------------------------------------------------------


@frozen
class _InputDetails:
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


@frozen
class _OutputDetails:
    reasoning_tokens: int | None = None


@frozen
class _Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: _InputDetails | None = None
    output_tokens_details: _OutputDetails | None = None


@frozen
class _Error:
    message: str | None = None
    code: str | int | None = None
    type: str | None = None


@frozen
class _Incomplete:
    reason: str | None = None


@frozen
class _Response:
    id: str | None = None
    model: str | None = None
    status: str | None = None
    output: list[dict[str, Any]] = attrs.Factory(list)
    usage: _Usage | None = None
    error: _Error | None = None
    incomplete_details: _Incomplete | None = None
    service_tier: str | None = None


@frozen
class _Part:
    type: str
    text: str = ""
    refusal: str = ""
    annotations: list[dict[str, Any]] | None = None
    logprobs: list[dict[str, Any]] | None = None


@frozen
class _OutputMessage:
    id: str | None = None
    content: list[_Part] = attrs.Factory(list)


@frozen
class _FunctionCall:
    name: str
    call_id: str
    arguments: str = ""
    id: str | None = None


@frozen
class _Event:
    type: str = ""
    output_index: int = 0
    item_id: str | None = None
    item: dict[str, Any] | None = None
    part: dict[str, Any] | None = None
    delta: str = ""
    response: _Response | None = None
    # An ``error`` event's own fields (some servers nest them under ``error``).
    message: str | None = None
    code: str | int | None = None
    error: _Error | None = None


def _error_type(error: _Error) -> str | None:
    return error.code if isinstance(error.code, str) and error.code else error.type


def _usage(response: _Response) -> Usage | None:
    usage = response.usage
    if usage is None:
        return None
    details = usage.input_tokens_details or _InputDetails()
    output = usage.output_tokens_details or _OutputDetails()
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=details.cached_tokens or 0,
        cache_write_tokens=details.cache_write_tokens or 0,
        reasoning_tokens=output.reasoning_tokens or 0,
        server_tool_requests=_server_tools(response.output),
    )


def _server_tools(output: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Built-in tool calls of the answer by tool: ``web_search_call`` items count as
    ``web_search`` requests (the API bills per call and reports no count of its own)."""
    counts: dict[str, int] = {}
    for item in output:
        kind = str(item.get("type", ""))
        if kind.endswith("_call") and kind not in _OWN_ITEMS and kind != "custom_tool_call":
            name = kind[: -len("_call")]
            counts[name] = counts.get(name, 0) + 1
    return counts


def _response_metadata(response: _Response) -> dict[str, Any]:
    """What the finished response says about itself and its messages: ``response_id``,
    ``model``, ``service_tier``, ``status``, ``finish_reason`` (the status, or an
    incomplete answer's reason), and where present ``refusal``, ``annotations`` and
    ``logprobs`` gathered over its message parts."""
    metadata: dict[str, Any] = {}
    if response.id is not None:
        metadata["response_id"] = response.id
    if response.model is not None:
        metadata["model"] = response.model
    if response.service_tier is not None:
        metadata["service_tier"] = response.service_tier
    metadata["status"] = response.status
    reason = response.incomplete_details.reason if response.incomplete_details else None
    metadata["finish_reason"] = reason or response.status
    refusal: list[str] = []
    annotations: list[dict[str, Any]] = []
    logprobs: list[dict[str, Any]] = []
    for item in response.output:
        if item.get("type") != "message":
            continue
        for part in wire.structure(item, _OutputMessage).content:
            if part.type == "refusal":
                refusal.append(part.refusal)
            annotations.extend(dict(a) for a in part.annotations or ())
            logprobs.extend(dict(p) for p in part.logprobs or ())
    if refusal:
        metadata["refusal"] = "".join(refusal)
    if annotations:
        metadata["annotations"] = annotations
    if logprobs:
        metadata["logprobs"] = logprobs
    return metadata


def _text_block(text: str, message_id: str | None) -> dict[str, Any]:
    """A text part as plait keeps it; after a reasoning or built-in item it keeps the id of
    its message, which the next turn must send back."""
    if message_id is None:
        return {"type": "text", "text": text}
    return {"type": "text", "text": text, "id": message_id}


def _call_block(call: _FunctionCall) -> dict[str, Any]:
    """Where a function call stood among kept items (its arguments are the tool call's)."""
    block: dict[str, Any] = {"type": "function_call", "call_id": call.call_id}
    if call.id is not None:
        block["id"] = call.id
    return block


# -- the model ------------------------------------------------------------------------------


class OpenAIResponsesModel(OpenAIAccount, HTTPChatModel):
    """A Responses API model: ``OpenAIResponsesModel("gpt-5", reasoning={"effort": "low"})``.

    ``api_key`` defaults to ``OPENAI_API_KEY``, ``base_url`` to ``OPENAI_BASE_URL``, then
    ``https://api.openai.com/v1``; ``timeout`` to 600 seconds. Other keyword settings
    (``reasoning``, ``include``, ``store``, ``temperature``, ``max_tokens`` — sent as
    ``max_output_tokens``…) go into every request body; per-call settings override them.
    """

    provider: ClassVar[str] = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
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

    # -- request -------------------------------------------------------------------------

    def _prepare(self, request: ChatRequest) -> PreparedCall:
        items: list[dict[str, Any]] = []
        for message in request.messages:
            items.extend(_items(message))
        body: dict[str, Any] = {"model": self.model_name, "input": items}
        if request.system_prompt:
            body["instructions"] = request.system_prompt
        for key, value in request.settings.items():
            body["max_output_tokens" if key == "max_tokens" else key] = value
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
        if request.tool_choice is not None:
            choice = _tool_choice(request.tool_choice, request.tools)  # may refuse it
            if request.tools:
                body["tool_choice"] = choice
        if request.response_format is not None:
            text = dict(body.get("text") or {})
            text["format"] = _text_format(request.response_format)
            body["text"] = text
        if request.stream:
            body["stream"] = True
        body.update(request.options_for(PROVIDER))
        return PreparedCall(f"{self.base_url}/responses", body)

    # -- response ------------------------------------------------------------------------

    def _parse(self, call: PreparedCall, data: Any, metadata: dict[str, Any]) -> AIMessage:
        if not isinstance(data, Mapping) or not isinstance(data.get("output"), list):
            if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
                error = wire.structure(data["error"], _Error)
                raise body_error(PROVIDER, error.message or json.dumps(data)[:500], None)
            # A 200 that is not a response ({}, []) is no empty answer.
            raise ValueError("not a response")
        response = wire.structure(data, _Response)
        if response.status == "failed" or response.error is not None:
            error = response.error or _Error("the response failed")
            raise body_error(PROVIDER, error.message or "the response failed", _error_type(error))
        kept: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        native = False
        for item in response.output:
            kind = item.get("type")
            if kind == "message":
                message = wire.structure(item, _OutputMessage)
                kept.extend(
                    _text_block(part.text, message.id if native else None)
                    for part in message.content
                    if part.type == "output_text"
                )
            elif kind == "function_call":
                function = wire.structure(item, _FunctionCall)
                calls.append(parse_tool_call(function.name, function.arguments, function.call_id))
                if native:
                    kept.append(_call_block(function))
            else:
                native = True
                kept.append(dict(item))
        metadata.update(_response_metadata(response))
        content: str | list[dict[str, Any]] = (
            merge_text_blocks(kept) if native else "".join(str(b["text"]) for b in kept)
        )
        return AIMessage(
            content, tool_calls=calls, usage=_usage(response), response_metadata=metadata
        )

    def _stream_parser(self, call: PreparedCall, metadata: dict[str, Any], id: str) -> StreamParser:
        return _ResponsesStream(metadata, id)


# -- input items ----------------------------------------------------------------------------


def _items(message: AnyMessage) -> list[dict[str, Any]]:
    """The input items one plait message stands for."""
    if isinstance(message, SystemMessage):
        return [{"role": "system", "content": _input_content(message.content)}]
    if isinstance(message, HumanMessage):
        return [{"role": "user", "content": _input_content(message.content)}]
    if isinstance(message, ToolMessage):
        output = message.content
        return [
            {
                "type": "function_call_output",
                "call_id": message.tool_call_id,
                "output": output if isinstance(output, str) else _input_content(output),
            }
        ]
    if isinstance(message, AIMessage):
        return _assistant_items(message)
    raise TypeError(f"{PROVIDER}: cannot send a {type(message).__name__}")


def _assistant_items(message: AIMessage) -> list[dict[str, Any]]:
    """An answer as the output items it came from, in their order: text with a message id
    as that message, other text as an assistant turn, kept items unchanged, each function
    call where it stood (else after everything). Another provider's blocks (a fallback's
    thinking) are left out, as the Chat Completions provider leaves them."""
    calls = {call.id: call for call in message.tool_calls}
    items: list[dict[str, Any]] = []
    blocks = (
        [{"type": "text", "text": message.content}]
        if isinstance(message.content, str)
        else message.content
    )
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            text = str(block.get("text", ""))
            part = {"type": "output_text", "text": text, "annotations": []}
            message_id = block.get("id")
            if message_id is None:
                if not text:
                    continue
                if items and set(items[-1]) == {"role", "content"}:
                    items[-1]["content"] += text
                else:
                    items.append({"role": "assistant", "content": text})
            elif items and items[-1].get("type") == "message" and items[-1]["id"] == message_id:
                items[-1]["content"].append(part)
            else:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": message_id,
                        "status": "completed",
                        "content": [part],
                    }
                )
        elif kind == "function_call":
            call = calls.pop(str(block.get("call_id")), None)
            if call is not None:  # a call middleware removed is not sent
                items.append(_function_call(call, block.get("id")))
        elif _is_item(block):
            items.append(dict(block))
    if not items and not calls and message.response_metadata.get("refusal"):
        items.append({"role": "assistant", "content": str(message.response_metadata["refusal"])})
    items.extend(_function_call(call, None) for call in calls.values())
    return items


def _function_call(call: ToolCall, item_id: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": json.dumps(call.args),
    }
    if isinstance(item_id, str):
        item["id"] = item_id
    return item


def _input_content(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """User, system or tool-output content: a string, or parts — plait's text parts as
    ``input_text`` (keeping provider keys such as ``prompt_cache_breakpoint``), the other
    providers' images (Chat Completions ``image_url``, Anthropic ``image``, Gemini
    ``inlineData``) as ``input_image``, the API's own parts unchanged."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        part = dict(block)
        kind = part.get("type")
        if kind == "text":
            for key in foreign_text_keys():
                part.pop(key, None)
            part["type"] = "input_text"
            part["text"] = str(part.get("text", ""))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            part = {"type": "input_image", "image_url": url}
            if isinstance(image, Mapping) and image.get("detail"):
                part["detail"] = image["detail"]
        elif kind in IMAGE_TYPES and kind != "input_image":
            # Another provider's image (Anthropic's, Gemini's): this API's form of it.
            image_ref = read_image(part)
            part = image_ref.responses() if image_ref is not None else part
        parts.append(part)
    return parts


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    options = dict(tool.provider_options.get(PROVIDER, {}))
    if options.get("type", "function") != "function":
        # A built-in tool (web_search, file_search, code_interpreter…): its options are it.
        return options
    out: dict[str, Any] = {
        "type": "function",
        "name": tool.name,
        "parameters": tool.parameters,
        "strict": strict_ok(tool.parameters),
    }
    if tool.description:
        out["description"] = tool.description
    out.update(options)
    return out


def _tool_choice(choice: str, tools: Sequence[ToolDefinition]) -> Any:
    resolved = resolve_tool_choice(PROVIDER, choice, tools)
    if resolved.tool is None:
        return resolved.mode
    kind = resolved.tool.provider_options.get(PROVIDER, {}).get("type", "function")
    if kind != "function":
        return {"type": kind}
    return {"type": "function", "name": resolved.name}


def _text_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``text.format`` for a JSON schema; a value already in the API's form passes."""
    if schema.get("type") in ("json_schema", "json_object", "text") and "properties" not in schema:
        return dict(schema)
    return {"type": "json_schema", **json_schema_format(schema)}


# -- streaming ------------------------------------------------------------------------------


class _ResponsesStream(StreamParser):
    """Responses API events → chunks. Text deltas are content and function-call argument
    deltas tool-call fragments as they come; a reasoning or built-in tool item is sent
    whole, as a chunk block, when it is done (its progress and summary-delta events carry
    nothing the done item does not). The terminal event (``response.completed`` or
    ``response.incomplete``) carries the whole response, whose usage and metadata end the
    stream — so the assembled message equals what ``invoke`` returns for it."""

    def __init__(self, metadata: dict[str, Any], id: str) -> None:
        self.metadata = metadata
        self.id = id
        self.native = False  # a kept (reasoning or built-in) item has been done
        self.calls: dict[int, int] = {}  # output index -> tool-call position
        self.arguments: dict[int, str] = {}  # output index -> the arguments sent so far
        self.parts_done: set[str] = set()  # messages whose text parts went out as blocks

    def _chunk(self, content: str = "", **kwargs: Any) -> AIMessageChunk:
        return AIMessageChunk(content, id=self.id, **kwargs)

    def feed(self, event: SSEEvent) -> list[AIMessageChunk]:
        if not event.data.strip():
            return []
        data: _Event = loads_event(PROVIDER, event, _Event)
        kind = data.type or event.event
        if kind == "response.output_text.delta":
            return [self._chunk(data.delta)] if data.delta else []
        if kind == "response.output_item.added" and data.item is not None:
            if data.item.get("type") == "function_call":
                return self._call_fragment(data.output_index, data.item, "")
            return []
        if kind == "response.function_call_arguments.delta":
            return self._call_fragment(data.output_index, None, data.delta)
        if kind == "response.content_part.done" and data.part is not None:
            part = wire.structure(data.part, _Part)
            if self.native and part.type == "output_text" and data.item_id is not None:
                # The finished part, with its message's id, stands in for the streamed text.
                self.parts_done.add(data.item_id)
                return [self._chunk(blocks=[_text_block(part.text, data.item_id)])]
            return []
        if kind == "response.output_item.done" and data.item is not None:
            return self._item_done(data.output_index, data.item)
        if kind in ("response.completed", "response.incomplete") and data.response is not None:
            return self._finish(data.response)
        if kind == "response.failed":
            error = (data.response.error if data.response else None) or _Error()
            raise stream_error(PROVIDER, error.message or "the response failed", _error_type(error))
        if kind == "error":
            error = data.error or _Error(data.message, data.code)
            raise stream_error(PROVIDER, error.message or event.data[:200], _error_type(error))
        return []

    def _call_fragment(
        self, index: int, item: Mapping[str, Any] | None, delta: str
    ) -> list[AIMessageChunk]:
        first = index not in self.calls
        if first:
            self.calls[index] = len(self.calls)
            self.arguments[index] = ""
        if item is not None:
            delta = str(item.get("arguments") or "") + delta
        self.arguments[index] += delta
        call_id = name = None
        if first and item is not None:
            call_id, name = item.get("call_id"), item.get("name")
        fragment = ToolCallChunk(
            self.calls[index],
            call_id if isinstance(call_id, str) else None,
            name if isinstance(name, str) else None,
            delta,
        )
        return [self._chunk(tool_call_chunks=[fragment])]

    def _item_done(self, index: int, item: dict[str, Any]) -> list[AIMessageChunk]:
        kind = item.get("type")
        if kind == "message":
            message = wire.structure(item, _OutputMessage)
            if not self.native or message.id is None or message.id in self.parts_done:
                return []
            # A server that sent no part events: the done message gives its text the id.
            texts = [part.text for part in message.content if part.type == "output_text"]
            return [self._chunk(blocks=[_text_block("".join(texts), message.id)])] if texts else []
        if kind == "function_call":
            function = wire.structure(item, _FunctionCall)
            out: list[AIMessageChunk] = []
            if index not in self.calls:
                # No added event: the whole call arrives here.
                out += self._call_fragment(index, item, "")
            else:
                sent = self.arguments[index]
                if function.arguments != sent and function.arguments.startswith(sent):
                    out += self._call_fragment(index, None, function.arguments[len(sent) :])
            if self.native:
                out.append(self._chunk(blocks=[_call_block(function)]))
            return out
        self.native = True
        return [self._chunk(blocks=[dict(item)])]

    def _finish(self, response: _Response) -> list[AIMessageChunk]:
        self.complete = True
        metadata = {**self.metadata, **_response_metadata(response)}
        return [self._chunk(usage=_usage(response), response_metadata=metadata)]
