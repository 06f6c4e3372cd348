"""The ``openai`` provider: the Chat Completions API over httpx.

Works with OpenAI and with every server that speaks the same wire format (vLLM,
llama.cpp, Ollama, LM Studio): point ``base_url=`` or ``OPENAI_BASE_URL`` at it. Server
quirks are switched with ``compat=`` (see ``OpenAICompat``), never special-cased.

``usage.input_tokens`` is ``prompt_tokens`` (the whole prompt, cached part included);
``usage.cache_read_tokens`` is ``prompt_tokens_details.cached_tokens``,
``cache_write_tokens`` its ``cache_write_tokens`` (0 where the API does not report writes),
``reasoning_tokens`` ``completion_tokens_details.reasoning_tokens`` and ``cost`` the cost
OpenRouter reports. Other extras go into ``response_metadata`` (see docs/providers.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import attrs

from plait._convert import expected
from plait.errors import ConfigError
from plait.lazy import frozen
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolCallChunk,
    ToolMessage,
    Usage,
    message_text,
    parse_tool_call,
)
from plait.models._http import (
    ChatRequest,
    HTTPChatModel,
    PreparedCall,
    SSEEvent,
    StreamParser,
    foreign_text_keys,
    loads_event,
    resolve_tool_choice,
    safe_tool_name,
    stream_error,
    wire,
)
from plait.models._images import IMAGE_TYPES, read_image
from plait.models.base import ModelProfile

if TYPE_CHECKING:
    from plait.models.base import ToolDefinition

__all__ = [
    "COMPAT_PRESETS",
    "LOCAL_SERVERS",
    "LocalServer",
    "OpenAIAccount",
    "OpenAIChatModel",
    "OpenAICompat",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


@frozen
class OpenAICompat:
    """Switches for servers that speak the Chat Completions format imperfectly.

    :param assistant_null_content: send ``"content": null`` for an assistant turn that
        only calls tools (OpenAI's form); ``False`` sends ``""`` (llama.cpp rejects null).
    :param tool_choice_required: the server understands ``tool_choice: "required"``;
        ``False`` sends the tool by name when one tool is offered (which forces it) and
        ``"auto"`` when several are (llama-cpp-python's server answers "required" with a
        500; Ollama and LM Studio do not enforce it).
    :param stream_usage: ask for usage in streams (``stream_options.include_usage``).
    :param max_tokens_field: the body field a ``max_tokens`` setting is sent as; ``None``
        picks ``max_completion_tokens`` for api.openai.com (its reasoning models reject
        ``max_tokens``) and ``max_tokens`` elsewhere.
    :param strict_tools: mark function tools ``strict`` (OpenAI structured tool calls).
    :param structured_output: how ``response_format`` is sent: ``"json_schema"``
        (OpenAI's ``{"type": "json_schema", "json_schema": {...}}``), ``"json_object_schema"``
        (``{"type": "json_object", "schema": {...}}``, the only form llama.cpp's server
        accepts) or ``"json_object"`` (JSON mode without a schema).
    """

    assistant_null_content: bool = True
    tool_choice_required: bool = True
    stream_usage: bool = True
    max_tokens_field: str | None = None
    strict_tools: bool = False
    structured_output: Literal["json_schema", "json_object_schema", "json_object"] = attrs.field(
        default="json_schema",
        validator=attrs.validators.in_(("json_schema", "json_object_schema", "json_object")),
    )


COMPAT_PRESETS: dict[str, OpenAICompat] = {
    "openai": OpenAICompat(),
    "llama.cpp": OpenAICompat(
        assistant_null_content=False,
        tool_choice_required=False,
        max_tokens_field="max_tokens",
        structured_output="json_object_schema",
    ),
    "vllm": OpenAICompat(max_tokens_field="max_tokens"),
    "ollama": OpenAICompat(tool_choice_required=False, max_tokens_field="max_tokens"),
    "lmstudio": OpenAICompat(tool_choice_required=False, max_tokens_field="max_tokens"),
}
"""Named ``compat`` settings for the servers users run locally: ``compat="llama.cpp"``
(also ``"vllm"``, ``"ollama"``, ``"lmstudio"``), from code, a model id's settings or an
agent file's ``model_settings``."""


def _compat(value: OpenAICompat | Mapping[str, Any] | str | None) -> OpenAICompat:
    if value is None:
        return OpenAICompat()
    if isinstance(value, OpenAICompat):
        return value
    if isinstance(value, str):
        try:
            return COMPAT_PRESETS[value]
        except KeyError:
            raise ConfigError(
                f"openai: unknown compat preset {value!r}; expected one of "
                f"{', '.join(map(repr, COMPAT_PRESETS))} or a mapping of OpenAICompat fields"
            ) from None
    if isinstance(value, Mapping):
        from plait._convert import ConversionError, option_problems, structure

        fields = dict(value)
        base = _compat(fields.pop("preset", None))
        try:  # each field checked against its type, as an agent file's options are
            compat: OpenAICompat = structure({**attrs.asdict(base), **fields}, OpenAICompat)
        except ConversionError as exc:
            raise ConfigError(f"openai: compat: {option_problems(exc)}") from None
        return compat
    wanted = "a preset name, a mapping or an OpenAICompat"
    raise ConfigError(f"openai: compat: {expected(wanted, value)}")


# -- the wire format (responses and stream chunks) ------------------------------------------


@frozen
class _Function:
    name: str | None = None
    arguments: str | None = None


@frozen
class _ToolCall:
    id: str | None = None
    index: int | None = None
    function: _Function = _Function()


@frozen
class _Message:
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None
    annotations: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None


@frozen
class _Logprobs:
    content: list[dict[str, Any]] | None = None
    refusal: list[dict[str, Any]] | None = None


@frozen
class _Choice:
    index: int = 0
    message: _Message | None = None
    delta: _Message | None = None
    finish_reason: str | None = None
    native_finish_reason: str | None = None
    logprobs: _Logprobs | None = None


@frozen
class _PromptDetails:
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


@frozen
class _CompletionDetails:
    reasoning_tokens: int | None = None


@frozen
class _Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    cost: float | None = None


@frozen
class _ErrorDetail:
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


@frozen
class _Completion:
    id: str | None = None
    model: str | None = None
    choices: list[_Choice] = attrs.Factory(list)
    usage: _Usage | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None
    provider: str | None = None
    error: _ErrorDetail | None = None


def _usage(usage: _Usage | None) -> Usage | None:
    if usage is None:
        return None
    prompt = usage.prompt_tokens_details or _PromptDetails()
    completion = usage.completion_tokens_details or _CompletionDetails()
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=prompt.cached_tokens or 0,
        cache_write_tokens=prompt.cache_write_tokens or 0,
        cost=usage.cost,
        reasoning_tokens=completion.reasoning_tokens or 0,
    )


def _response_metadata(completion: _Completion) -> dict[str, Any]:
    """What a completion (or a stream's chunk) says about itself: ``model``,
    ``response_id``, ``system_fingerprint``, ``service_tier`` and OpenRouter's
    ``upstream_provider`` (the service that answered)."""
    metadata: dict[str, Any] = {}
    if completion.model is not None:
        metadata["model"] = completion.model
    if completion.id is not None:
        metadata["response_id"] = completion.id
    if completion.system_fingerprint is not None:
        metadata["system_fingerprint"] = completion.system_fingerprint
    if completion.service_tier is not None:
        metadata["service_tier"] = completion.service_tier
    if completion.provider is not None:
        metadata["upstream_provider"] = completion.provider
    return metadata


def _choice_metadata(choice: _Choice) -> dict[str, Any]:
    """A finished choice's extras: ``finish_reason``, OpenRouter's
    ``native_finish_reason``."""
    metadata: dict[str, Any] = {"finish_reason": choice.finish_reason}
    if choice.native_finish_reason is not None:
        metadata["native_finish_reason"] = choice.native_finish_reason
    return metadata


# -- the model ------------------------------------------------------------------------------


def _p(max_input: int, max_output: int) -> ModelProfile:
    return ModelProfile(max_input_tokens=max_input, max_output_tokens=max_output)


_GPT5 = _p(272_000, 128_000)

KEY_SHAPE = r"\bsk-[A-Za-z0-9_*\-]{6,}"
"""OpenAI's keys (``sk-``, ``sk-proj-``, echoed masked as ``sk-proj-****abcd``) — the shape
most OpenAI-compatible servers and Anthropic use too."""

OPENAI_PROFILES: dict[str, ModelProfile] = {
    # GPT-5 family: 400k window = 272k input + 128k output.
    "gpt-5": _GPT5,
    "gpt-5-mini": _GPT5,
    "gpt-5-nano": _GPT5,
    "gpt-5-codex": _GPT5,
    "gpt-5.1": _GPT5,
    "gpt-5.1-codex": _GPT5,
    "gpt-5.2": _GPT5,
    "gpt-5-chat": _p(128_000, 16_384),
    # GPT-4.1 family: 1,047,576-token window, 32,768 out.
    "gpt-4.1": _p(1_047_576, 32_768),
    "gpt-4.1-mini": _p(1_047_576, 32_768),
    "gpt-4.1-nano": _p(1_047_576, 32_768),
    # GPT-4o family.
    "gpt-4o": _p(128_000, 16_384),
    "gpt-4o-mini": _p(128_000, 16_384),
    "chatgpt-4o": _p(128_000, 16_384),
    # o-series reasoning models.
    "o1": _p(200_000, 100_000),
    "o1-pro": _p(200_000, 100_000),
    "o1-mini": _p(128_000, 65_536),
    "o1-preview": _p(128_000, 32_768),
    "o3": _p(200_000, 100_000),
    "o3-pro": _p(200_000, 100_000),
    "o3-mini": _p(200_000, 100_000),
    "o4-mini": _p(200_000, 100_000),
    # Older models still served.
    "gpt-4-turbo": _p(128_000, 4_096),
    "gpt-4": _p(8_192, 8_192),
    "gpt-3.5-turbo": _p(16_385, 4_096),
}
"""OpenAI's documented limits by model family (for the GPT-5 family, the input limit of
272,000 of its 400,000-token window, since the other 128,000 are reserved for output); the
Responses API serves the same models with the same windows."""

OVERFLOW_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "exceed_context_size",
    "exceeds the available context size",
    "too many tokens",
)


class OpenAIAccount:
    """OpenAI as a vendor, whichever of its APIs a model speaks (Chat Completions here,
    the Responses API in ``plait-openai-responses``): where the key and URL come from,
    its keys' shape, its models' limits and the words of its context-overflow errors."""

    api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    base_url_env: ClassVar[str] = "OPENAI_BASE_URL"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    key_shapes: ClassVar[Sequence[str]] = (KEY_SHAPE,)
    known_profiles: ClassVar[Mapping[str, ModelProfile]] = OPENAI_PROFILES
    overflow_words: ClassVar[Sequence[str]] = OVERFLOW_WORDS


class OpenAIChatModel(OpenAIAccount, HTTPChatModel):
    """A Chat Completions model: ``OpenAIChatModel("gpt-4.1-mini", temperature=0)``.

    ``api_key`` defaults to ``OPENAI_API_KEY`` (optional for a custom ``base_url``);
    ``base_url`` to ``OPENAI_BASE_URL``, then ``https://api.openai.com/v1``. Other keyword
    settings (``temperature``, ``max_tokens``, ``top_p``, ``stop``...) go into every
    request body; per-call settings override them.
    """

    provider: ClassVar[str] = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 60.0,
        profile: ModelProfile | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        compat: OpenAICompat | Mapping[str, Any] | str | None = None,
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
        self.compat = _compat(compat)

    # -- request -------------------------------------------------------------------------

    def _prepare(self, request: ChatRequest) -> PreparedCall:
        wire_messages: list[dict[str, Any]] = []
        if request.system_prompt:
            wire_messages.append({"role": "system", "content": request.system_prompt})
        wire_messages.extend(self._message(m) for m in request.messages)
        body: dict[str, Any] = {"model": self.model_name, "messages": wire_messages}
        for key, value in request.settings.items():
            if key == "max_tokens":
                key = self._max_tokens_field()
            body[key] = value
        if request.tools:
            body["tools"] = [self._tool(t) for t in request.tools]
        if request.tool_choice is not None:
            choice = self._tool_choice(request.tool_choice, request.tools)  # may refuse it
            if request.tools:
                body["tool_choice"] = choice
        if request.response_format is not None:
            body["response_format"] = _response_format(
                request.response_format, self.compat.structured_output
            )
        if request.stream:
            body["stream"] = True
            if self.compat.stream_usage:
                body["stream_options"] = {"include_usage": True}
        body.update(request.options_for("openai"))
        choices = body.get("n")
        if choices is not None and choices != 1:
            raise ConfigError(
                f"openai: n={choices!r} asks for several answers, but a model call returns "
                "one AIMessage; leave n unset (or 1) and call the model again for another"
            )
        return PreparedCall(f"{self.base_url}/chat/completions", body)

    def _max_tokens_field(self) -> str:
        if self.compat.max_tokens_field is not None:
            return self.compat.max_tokens_field
        official = self.base_url == DEFAULT_BASE_URL
        return "max_completion_tokens" if official else "max_tokens"

    def _message(self, message: AnyMessage) -> dict[str, Any]:
        if isinstance(message, SystemMessage):
            return {"role": "system", "content": _content(message.content)}
        if isinstance(message, HumanMessage):
            return {"role": "user", "content": _content(message.content)}
        if isinstance(message, ToolMessage):
            return {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": _content(message.content),
            }
        if isinstance(message, AIMessage):
            text = message_text(message.content)
            refusal = message.response_metadata.get("refusal")
            if not text and not message.tool_calls and isinstance(refusal, str):
                # A refusal is the answer's only text: sent as the assistant's content
                # (servers that speak this format do not all read a ``refusal`` field).
                text = refusal
            out: dict[str, Any] = {"role": "assistant", "content": text}
            if message.tool_calls:
                if not text:
                    out["content"] = None if self.compat.assistant_null_content else ""
                out["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.args)},
                    }
                    for call in message.tool_calls
                ]
            return out
        raise TypeError(f"openai: cannot send a {type(message).__name__}")

    def _tool(self, tool: ToolDefinition) -> dict[str, Any]:
        function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
        if tool.description:
            function["description"] = tool.description
        if self.compat.strict_tools:
            function["strict"] = True
        function.update(tool.provider_options.get("openai", {}))
        return {"type": "function", "function": function}

    def _tool_choice(self, choice: str, tools: Sequence[ToolDefinition]) -> Any:
        resolved = resolve_tool_choice("openai", choice, tools)
        if resolved.mode == "required":
            if self.compat.tool_choice_required:
                return "required"
            if len(tools) == 1:
                # One tool: naming it forces exactly what "required" asks, in the form
                # these servers do force (llama-cpp-python answers "auto" with text, or
                # with the call as text when streamed).
                return {"type": "function", "function": {"name": tools[0].name}}
            return "auto"
        if resolved.mode == "tool":
            return {"type": "function", "function": {"name": resolved.name}}
        return resolved.mode

    # -- response ------------------------------------------------------------------------

    def _parse(self, call: PreparedCall, data: Any, metadata: dict[str, Any]) -> AIMessage:
        completion = wire.structure(data, _Completion)
        if not completion.choices or completion.choices[0].message is None:
            raise ValueError("no choices")
        choice = completion.choices[0]
        message = choice.message
        assert message is not None
        calls = [
            parse_tool_call(tc.function.name or "", tc.function.arguments or "", tc.id)
            for tc in message.tool_calls or ()
        ]
        metadata.update(_response_metadata(completion))
        metadata.update(_choice_metadata(choice))
        metadata.update(_message_metadata(message, choice.logprobs))
        return AIMessage(
            message.content or "",
            tool_calls=calls,
            usage=_usage(completion.usage),
            response_metadata=metadata,
        )

    def _stream_parser(self, call: PreparedCall, metadata: dict[str, Any], id: str) -> StreamParser:
        return _OpenAIStream(metadata, id)


class _OpenAIStream(StreamParser):
    """Chat Completions chunks → ``AIMessageChunk``s. Complete at ``[DONE]``, or when a
    ``finish_reason`` arrived and the server then closed the stream cleanly.

    What arrives in fragments besides text and tool calls (the refusal, a compatible
    server's reasoning, annotations, logprobs) is gathered and sent whole in the chunk that
    ends the answer, so the assembled message equals what ``invoke`` returns."""

    def __init__(self, metadata: dict[str, Any], id: str) -> None:
        self.metadata = metadata
        self.id = id
        self.first = True
        self.refusal: list[str] = []
        self.reasoning: list[str] = []
        self.annotations: list[dict[str, Any]] = []
        self.logprobs: list[dict[str, Any]] | None = None
        self.flushed = False
        self.finished = False

    def _gather(self, choice: _Choice, delta: _Message) -> None:
        if delta.refusal:
            self.refusal.append(delta.refusal)
        if delta.reasoning or delta.reasoning_content:
            self.reasoning.append(delta.reasoning or delta.reasoning_content or "")
        self.annotations.extend(delta.annotations or ())
        if choice.logprobs is not None and choice.logprobs.content is not None:
            self.logprobs = (self.logprobs or []) + choice.logprobs.content

    def _gathered(self) -> dict[str, Any]:
        """The gathered extras, once (at the finish reason, or at the stream's end)."""
        if self.flushed:
            return {}
        self.flushed = True
        whole = _Message(
            refusal="".join(self.refusal) or None,
            annotations=self.annotations,
            reasoning="".join(self.reasoning) or None,
        )
        logprobs = None if self.logprobs is None else _Logprobs(self.logprobs)
        return _message_metadata(whole, logprobs)

    def feed(self, event: SSEEvent) -> list[AIMessageChunk]:
        data = event.data.strip()
        if data == "[DONE]":
            self.complete = True
            rest = self._gathered()
            if not self.finished:
                # A server that never gave a finish reason (as invoke reports it: None).
                rest["finish_reason"] = None
                self.finished = True
            return [AIMessageChunk(response_metadata=rest, id=self.id)] if rest else []
        if not data:
            return []
        chunk: _Completion = loads_event("openai", event, _Completion)
        if chunk.error is not None:
            code = chunk.error.code if isinstance(chunk.error.code, str) else None
            raise stream_error("openai", chunk.error.message or data, code or chunk.error.type)
        out: list[AIMessageChunk] = []
        metadata: dict[str, Any] = {}
        if self.first:
            metadata = {**self.metadata, **_response_metadata(chunk)}
            self.first = False
        elif chunk.service_tier is not None or chunk.provider is not None:
            metadata = {
                key: value
                for key, value in _response_metadata(chunk).items()
                if key in ("service_tier", "upstream_provider")
            }
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta or _Message()
            self._gather(choice, delta)
            parts = [
                ToolCallChunk(
                    tc.index if tc.index is not None else position,
                    tc.id,
                    tc.function.name,
                    tc.function.arguments or "",
                )
                for position, tc in enumerate(delta.tool_calls or ())
            ]
            if choice.finish_reason is not None:
                self.finished = True
                metadata.update(_choice_metadata(choice))
                metadata.update(self._gathered())
                self.complete = True
            if delta.content or parts or metadata:
                out.append(
                    AIMessageChunk(
                        delta.content or "",
                        tool_call_chunks=parts,
                        response_metadata=metadata,
                        id=self.id,
                    )
                )
                metadata = {}
        usage = _usage(chunk.usage)
        if usage is not None or metadata:
            out.append(AIMessageChunk(usage=usage, response_metadata=metadata, id=self.id))
        return out


def _message_metadata(message: _Message, logprobs: _Logprobs | None) -> dict[str, Any]:
    """A message's extras: ``refusal`` (the model's refusal text), ``annotations`` (URL
    citations), ``reasoning`` (a compatible server's reasoning text) and ``logprobs``
    (the content tokens' log probabilities, when asked for)."""
    metadata: dict[str, Any] = {}
    if message.refusal:
        metadata["refusal"] = message.refusal
    if message.annotations:
        metadata["annotations"] = [dict(item) for item in message.annotations]
    reasoning = message.reasoning or message.reasoning_content
    if reasoning:
        metadata["reasoning"] = reasoning
    if logprobs is not None and logprobs.content is not None:
        metadata["logprobs"] = [dict(item) for item in logprobs.content]
    return metadata


def _content(content: str | list[dict[str, Any]]) -> Any:
    """Message content for the wire: a string, or parts as given — a text part keeps the
    provider keys it carries (``prompt_cache_breakpoint``), another provider's image
    (Anthropic ``image``, Gemini ``inlineData``...) becomes an ``image_url`` part, native
    parts pass through."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        part = dict(block)
        if part.get("type") == "text":
            # A provider key (a cache breakpoint) is sent; the marks other providers
            # declare (plait.text_marks), which OpenAI rejects, are not.
            for key in foreign_text_keys():
                part.pop(key, None)
            part["text"] = str(part.get("text", ""))
        elif part.get("type") in IMAGE_TYPES and part.get("type") != "image_url":
            # Another provider's image (Anthropic's, Gemini's, Responses'): this API's form.
            image = read_image(part)
            part = image.chat_completions() if image is not None else part
        parts.append(part)
    return parts


def _response_format(schema: Mapping[str, Any], mode: str = "json_schema") -> dict[str, Any]:
    """``response_format`` for a JSON schema, in the form ``mode`` names; an OpenAI-shaped
    value passes through."""
    if schema.get("type") in ("json_schema", "json_object", "text") and "properties" not in schema:
        return dict(schema)
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": dict(schema)}
    if mode == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": json_schema_format(schema)}


def json_schema_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI's named JSON-schema format: ``name`` from the title (API-safe), the schema,
    and ``strict`` when strict mode accepts it (Chat Completions nests it in
    ``json_schema``; the Responses API puts it in ``text.format`` beside the type)."""
    title = str(schema.get("title") or "response")
    name = safe_tool_name(title) or "response"
    return {"name": name, "schema": dict(schema), "strict": strict_ok(schema)}


def strict_ok(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts ``schema``: every object closed
    (``additionalProperties: false``) with all its properties required. A schema that is
    not is sent with ``strict: false`` rather than rejected with a 400."""
    if isinstance(schema, list):
        return all(strict_ok(item) for item in schema)
    if not isinstance(schema, Mapping):
        return True
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required", ())) != set(properties):
            return False
    return all(strict_ok(value) for key, value in schema.items() if key != "required")


# -- local servers --------------------------------------------------------------------------


@frozen
class LocalServer:
    """A locally run OpenAI-compatible server: its compat preset, where it listens by
    default, and the environment variables that override that (and give a key)."""

    preset: str
    base_url: str
    base_url_env: str
    api_key_env: str


LOCAL_SERVERS: dict[str, LocalServer] = {
    "llamacpp": LocalServer("llama.cpp", "http://127.0.0.1:8080/v1", "LLAMACPP_BASE_URL", ""),
    "vllm": LocalServer("vllm", "http://127.0.0.1:8000/v1", "VLLM_BASE_URL", "VLLM_API_KEY"),
    "ollama": LocalServer("ollama", "http://127.0.0.1:11434/v1", "OLLAMA_BASE_URL", ""),
    "lmstudio": LocalServer("lmstudio", "http://127.0.0.1:1234/v1", "LMSTUDIO_BASE_URL", ""),
}
"""The model ids ``llamacpp:``, ``vllm:``, ``ollama:`` and ``lmstudio:`` — usable wherever a
model id is (``create_agent``, agent files, fallbacks) with no settings at all."""


def _local_factory(provider: str) -> Any:
    def from_id(name: str, **settings: Any) -> OpenAIChatModel:
        server = LOCAL_SERVERS[provider]
        settings.setdefault("compat", server.preset)
        note = ""
        if settings.get("base_url") is None:
            # Said if nothing answers there: the error's "openai" would not tell a user
            # who wrote "llamacpp:" which address was tried or how to change it.
            if os.environ.get(server.base_url_env):
                settings["base_url"] = os.environ[server.base_url_env]
                note = f" (from {server.base_url_env})"
            else:
                settings["base_url"] = server.base_url
                note = (
                    f", where {provider}: models are sent unless {server.base_url_env} "
                    "names another address"
                )
        if settings.get("api_key") is None:
            # Never the OPENAI_API_KEY: a local server is not OpenAI.
            settings["api_key"] = (
                os.environ.get(server.api_key_env, "") if server.api_key_env else ""
            )
        model = OpenAIChatModel(name, **settings)
        model._address_note = note
        return model

    from_id.__doc__ = (
        f"``{provider}:MODEL``: an OpenAI-compatible {LOCAL_SERVERS[provider].preset} server."
    )
    return from_id


llamacpp_model = _local_factory("llamacpp")
vllm_model = _local_factory("vllm")
ollama_model = _local_factory("ollama")
lmstudio_model = _local_factory("lmstudio")
