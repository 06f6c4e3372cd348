"""plait messages, tools and options → a Gemini ``GenerateContentRequest`` body.

- ``SystemMessage``s (anywhere) and ``system_prompt`` → ``systemInstruction`` (the API
  has no system turns); ``HumanMessage`` → a ``user`` turn; ``AIMessage`` → a ``model``
  turn: its content blocks, then its tool calls as ``functionCall`` parts (with the
  ``thoughtSignature`` each came with); ``ToolMessage``s → ``functionResponse`` parts of
  a ``user`` turn (``{"output": ...}``, or ``{"error": ...}`` for an error result).
- Consecutive turns of one role are merged into one, as the API expects.
- Blocks: plait ``text`` (with its ``thought_signature``), ``thinking`` (a thought part),
  Gemini's own part blocks (``{"type": "inlineData", "inlineData": {...}}``) as they are,
  and the image blocks other providers use (OpenAI ``image_url``, Anthropic ``image``)
  as ``inlineData``/``fileData``. In a model turn, another provider's blocks are left out
  (see ``is_foreign``); any other block is a ``ConfigError`` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plait.errors import ConfigError
from plait.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from plait.models.http import resolve_tool_choice
from plait.options import expected
from plait_google._wire import DATA_FIELDS, PROVIDER, THOUGHT_SIGNATURES

if TYPE_CHECKING:
    from plait.models.http import ChatRequest, ToolDefinition

GENERATION_SETTINGS = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "max_output_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "stop_sequences": "stopSequences",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "response_logprobs": "responseLogprobs",
    "logprobs": "logprobs",
    "candidate_count": "candidateCount",
    "thinking_config": "thinkingConfig",
    "response_modalities": "responseModalities",
    "media_resolution": "mediaResolution",
    "speech_config": "speechConfig",
    "image_config": "imageConfig",
}
"""Settings that go into ``generationConfig`` (the API's own camelCase names work too)."""

TOP_LEVEL_SETTINGS = {
    "safety_settings": "safetySettings",
    "cached_content": "cachedContent",
    "labels": "labels",
    "service_tier": "serviceTier",
}
"""Settings that go into the request body itself."""

BUILTIN_TOOLS = "builtin_tools"
"""The setting listing Gemini's own tools (``[{"googleSearch": {}}, {"codeExecution":
{}}, {"urlContext": {}}]``), sent beside the function declarations."""

_KNOWN = frozenset(
    {
        *GENERATION_SETTINGS,
        *GENERATION_SETTINGS.values(),
        *TOP_LEVEL_SETTINGS,
        *TOP_LEVEL_SETTINGS.values(),
        BUILTIN_TOOLS,
    }
)
_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)", re.DOTALL)


def check_settings(settings: Mapping[str, Any]) -> None:
    """A ``ConfigError`` for a setting the API has no place for, or more than one answer."""
    unknown = sorted(set(settings) - _KNOWN)
    if unknown:
        raise ConfigError(
            f"{PROVIDER}: unknown setting(s) {', '.join(map(repr, unknown))}; expected "
            f"generationConfig fields ({', '.join(GENERATION_SETTINGS)}), "
            f"{', '.join(TOP_LEVEL_SETTINGS)} or {BUILTIN_TOOLS} "
            f'(anything else goes in provider_options={{"google": {{...}}}})'
        )
    for name in ("candidate_count", "candidateCount"):
        count = settings.get(name)
        if count is not None and count != 1:
            raise ConfigError(
                f"{PROVIDER}: {name}={count!r} is not supported: a call returns one "
                "AIMessage; call again for another answer"
            )
    tools = settings.get(BUILTIN_TOOLS)
    if tools is not None and (
        isinstance(tools, str | Mapping)
        or not isinstance(tools, Sequence)
        or not all(isinstance(tool, Mapping) for tool in tools)
    ):
        wanted = "a list of Gemini tools such as [{'googleSearch': {}}]"
        raise ConfigError(f"{PROVIDER}: {BUILTIN_TOOLS}: {expected(wanted, tools)}")


SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented placeholder signature for a function call Gemini did not write."""


def body(request: ChatRequest, *, model: str = "") -> dict[str, Any]:
    """The JSON body of one ``generateContent`` call (``request.stream`` aside: streaming
    is a different URL, not a different body)."""
    check_settings(request.settings)
    system: list[dict[str, Any]] = []
    if request.system_prompt:
        system.append({"text": request.system_prompt})
    turns: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool-call id -> function name, for the responses
    for message in request.messages:
        if isinstance(message, SystemMessage):
            system.extend(_parts(message.content, "system"))
            continue
        role, parts = _turn(message, names, placeholder=model.startswith("gemini-3"))
        if not parts:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"].extend(parts)
        else:
            turns.append({"role": role, "parts": parts})
    out: dict[str, Any] = {"contents": turns}
    if system:
        out["systemInstruction"] = {"parts": system}
    generation: dict[str, Any] = {}
    for key, value in request.settings.items():
        if value is None or key == BUILTIN_TOOLS:
            continue
        if key in TOP_LEVEL_SETTINGS or key in TOP_LEVEL_SETTINGS.values():
            out[TOP_LEVEL_SETTINGS.get(key, key)] = value
            continue
        field = GENERATION_SETTINGS.get(key, key)
        if field == "stopSequences" and isinstance(value, str):
            value = [value]
        generation[field] = value
    if request.response_format is not None:
        generation["responseMimeType"] = "application/json"
        generation["responseJsonSchema"] = dict(request.response_format)
    if generation:
        out["generationConfig"] = generation
    wire_tools: list[dict[str, Any]] = []
    functions = [tool for tool in request.tools if _builtin(tool) is None]
    if functions:
        wire_tools.append({"functionDeclarations": [_declaration(tool) for tool in functions]})
    wire_tools.extend(builtin for tool in request.tools if (builtin := _builtin(tool)) is not None)
    wire_tools.extend(dict(tool) for tool in request.settings.get(BUILTIN_TOOLS) or ())
    if wire_tools:
        out["tools"] = wire_tools
    config = _tool_config(request.tool_choice, functions)
    if config is not None:
        out["toolConfig"] = config
    _merge(out, (request.provider_options or {}).get(PROVIDER) or {})
    return out


def _merge(out: dict[str, Any], options: Mapping[str, Any]) -> None:
    """Request-level provider options, merged last: objects one level deep
    (``generationConfig``, ``toolConfig``), ``tools`` appended, the rest replaced."""
    if not isinstance(options, Mapping):
        wanted = "a mapping of request fields"
        raise ConfigError(f"{PROVIDER}: provider_options['google']: {expected(wanted, options)}")
    for key, value in options.items():
        current = out.get(key)
        if key == "tools" and isinstance(value, list):
            out["tools"] = [*(current or []), *value]
        elif isinstance(current, dict) and isinstance(value, Mapping):
            out[key] = {**current, **value}
        else:
            out[key] = value


def _builtin(tool: ToolDefinition) -> dict[str, Any] | None:
    """A Gemini tool (``googleSearch``, ``codeExecution``...) a ``plait.Tool`` stands for:
    ``provider_options={"google": {"builtin": {"googleSearch": {}}}}``; the API runs it."""
    builtin = tool.provider_options.get(PROVIDER, {}).get("builtin")
    if builtin is None:
        return None
    if not isinstance(builtin, Mapping) or not builtin:
        problem = expected("a Gemini tool such as {'googleSearch': {}}", builtin)
        raise ConfigError(f"{PROVIDER}: tool {tool.name!r}: provider option 'builtin': {problem}")
    return dict(builtin)


def _declaration(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["parametersJsonSchema"] = dict(tool.parameters)
    out.update(tool.provider_options.get(PROVIDER, {}))
    return out


def _tool_config(choice: str | None, tools: Sequence[ToolDefinition]) -> dict[str, Any] | None:
    if choice is None:
        return None
    resolved = resolve_tool_choice(PROVIDER, choice, tools)  # without tools: auto or none
    if not tools:
        return None
    if resolved.mode == "tool":
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}
    mode = "ANY" if resolved.mode == "required" else resolved.mode.upper()
    return {"functionCallingConfig": {"mode": mode}}


def _turn(
    message: AnyMessage, names: dict[str, str], *, placeholder: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, HumanMessage):
        parts = _parts(message.content, "user")
        return "user", parts or [{"text": ""}]
    if isinstance(message, AIMessage):
        parts = _parts(message.content, "model")
        refusal = message.response_metadata.get("refusal")
        if not parts and not message.tool_calls and isinstance(refusal, str) and refusal:
            # An OpenAI refusal is the answer's only text: the turn says it, as text.
            parts = [{"text": refusal}]
        signatures = message.response_metadata.get(THOUGHT_SIGNATURES) or {}
        # Gemini 3 refuses a function-call turn without a signature; a turn another
        # provider (or a scripted model) wrote has none, so its first call gets Google's
        # placeholder. A Gemini turn keeps its own: there, only the first call is signed.
        unsigned = placeholder and not signatures
        for index, call in enumerate(message.tool_calls):
            names[call.id] = call.name
            part: dict[str, Any] = {
                "functionCall": {"name": call.name, "args": dict(call.args), "id": call.id}
            }
            signature = signatures.get(call.id) if isinstance(signatures, Mapping) else None
            if isinstance(signature, str) and signature:
                part["thoughtSignature"] = signature
            elif unsigned and index == 0:
                part["thoughtSignature"] = SKIP_SIGNATURE
            parts.append(part)
        return "model", parts
    if isinstance(message, ToolMessage):
        name = message.name or names.get(message.tool_call_id)
        if not name:
            raise ConfigError(
                f"{PROVIDER}: tool message {message.tool_call_id!r} answers no tool call "
                "in the conversation and has no name; Gemini needs the function's name"
            )
        key = "error" if message.status == "error" else "output"
        response = {
            "id": message.tool_call_id,
            "name": name,
            "response": {
                key: message.text if isinstance(message.content, list) else message.content
            },
        }
        return "user", [{"functionResponse": response}]
    raise TypeError(f"{PROVIDER}: cannot send a {type(message).__name__}")


_READABLE = frozenset({"text", "thinking", "image_url", "input_image", "image"})


def is_foreign(block: Mapping[str, Any]) -> bool:
    """Whether a block of an answer was written by another provider and has no place in a
    Gemini model turn: Claude's thinking (signed for Anthropic: a thought part's signature
    must be Gemini's own) and redacted thinking, a Responses ``reasoning`` item, and either
    one's server-side tool traffic (``server_tool_use``, ``web_search_call``...) or
    place-holders. Thinking is dropped, never turned into text the next model would read
    as said to the user; the answer's text, which says what the tools found, is kept."""
    kind = block.get("type")
    if kind == "thinking":
        return "signature" in block and "thought_signature" not in block
    if isinstance(kind, str) and kind in DATA_FIELDS and kind in block:
        return False
    return kind not in _READABLE


def _parts(content: str | list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for block in content:
        if role == "model" and is_foreign(block):
            continue
        part = _part(block, role)
        if part is not None:
            parts.append(part)
    return parts


def _part(block: Mapping[str, Any], role: str) -> dict[str, Any] | None:
    kind = block.get("type")
    signature = block.get("thought_signature")
    part: dict[str, Any]
    if kind == "text":
        text = str(block.get("text", ""))
        if not text and not signature:
            return None
        part = {"text": text}
    elif kind == "thinking":
        if is_foreign(block):
            return None
        part = {"text": str(block.get("thinking", "")), "thought": True}
    elif isinstance(kind, str) and kind in DATA_FIELDS and kind in block:
        part = {
            key: value for key, value in block.items() if key not in ("type", "thought_signature")
        }
    elif kind == "image_url":
        part = _image_url(block)
    elif kind == "input_image":
        part = _image_url({"image_url": block.get("image_url")})
    elif kind == "image":
        part = _image(block)
    else:
        raise ConfigError(
            f"{PROVIDER}: cannot send a {kind!r} content block in a {role} message; Gemini "
            "reads text, thinking, image blocks and its own parts "
            f"({', '.join(DATA_FIELDS)})"
        )
    if isinstance(signature, str) and signature:
        part["thoughtSignature"] = signature
    return part


def _url_part(url: str, mime: str | None) -> dict[str, Any]:
    match = _DATA_URL.fullmatch(url)
    if match is not None:
        return {"inlineData": {"mimeType": match["mime"], "data": match["data"]}}
    data: dict[str, Any] = {"fileUri": url}
    if mime:
        data["mimeType"] = mime
    return {"fileData": data}


def _image_url(block: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI's ``{"type": "image_url", "image_url": {"url": ...}}`` (a data URL or a
    file URI Gemini can fetch)."""
    image = block.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{PROVIDER}: an image_url block needs a url, got {dict(block)!r}")
    return _url_part(url, None)


def _image(block: Mapping[str, Any]) -> dict[str, Any]:
    """Anthropic's ``{"type": "image", "source": {"type": "base64"|"url", ...}}``."""
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        return {
            "inlineData": {
                "mimeType": str(source.get("media_type", "")),
                "data": str(source.get("data", "")),
            }
        }
    if isinstance(source, Mapping) and source.get("type") == "url":
        return _url_part(str(source.get("url", "")), None)
    raise ConfigError(
        f"{PROVIDER}: an image block needs a base64 or url source, got {dict(block)!r}"
    )
