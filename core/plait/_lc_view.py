"""LangChain's reading of a message, for code ported from LangChain's docs: the text
``pretty_print`` shows, the ``usage_metadata`` dict and the standard ``content_blocks``.

Each is derived from what the message holds, when asked, never stored: the messages
(``plait.messages``) call in here from their methods, so ``import plait`` never loads this
module. It takes plain values (content, calls, a ``Usage``) rather than the message
classes, which keeps it out of ``plait.messages``' import graph.

The layouts and block shapes are langchain-core 1.x's (``BaseMessage.pretty_repr``,
``AIMessage.pretty_repr``, ``UsageMetadata``, ``messages/content.py``). Plait's content
blocks are the providers' own (Anthropic's ``thinking`` and image ``source``, Chat
Completions' ``image_url``, Responses' ``reasoning`` items), so each is read as
langchain-core's translator for that provider reads it; a block no translator knows is
wrapped as ``{"type": "non_standard", "value": block}``, as LangChain wraps it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["is_interactive", "pretty_text", "standard_blocks", "usage_metadata"]

_WIDTH = 80
"""The width LangChain centres a message's title in."""

KNOWN_BLOCK_TYPES = frozenset(
    {
        "text",
        "reasoning",
        "refusal",
        "tool_call",
        "invalid_tool_call",
        "tool_call_chunk",
        "image",
        "audio",
        "file",
        "text-plain",
        "video",
        "server_tool_call",
        "server_tool_call_chunk",
        "server_tool_result",
        "non_standard",
    }
)
"""The block types langchain-core 1.x defines (``content.KNOWN_BLOCK_TYPES``)."""


# -- pretty_print ---------------------------------------------------------------------------


def is_interactive() -> bool:
    """Whether this is an interactive interpreter (IPython, Jupyter, the REPL), where
    LangChain prints the title bold."""
    return hasattr(sys, "ps2")


def _title(kind: str, *, bold: bool) -> str:
    padded = f" {kind.title()} Message "
    side = "=" * ((_WIDTH - len(padded)) // 2)
    if bold:
        padded = f"\033[1m{padded}\033[0m"
    return f"{side}{padded}{side}{'=' * (len(padded) % 2)}"


def _call_lines(call: Any) -> list[str]:
    lines = [f"  {call.name} ({call.id})", f" Call ID: {call.id}"]
    if call.error:
        lines.append(f"  Error: {call.error}")
    lines.append("  Args:")
    lines.extend(f"    {key}: {value}" for key, value in call.args.items())
    return lines


def pretty_text(
    kind: str, content: Any, *, name: str | None, calls: Sequence[Any] | None, bold: bool
) -> str:
    """A message as LangChain's ``pretty_repr`` writes it: the title centred in 80
    columns, ``Name:`` when it has one, a blank line, the content as ``str`` shows it;
    for an AI message (``calls`` not ``None``) its calls under ``Tool Calls:``, and the
    calls whose arguments did not parse (LangChain's invalid tool calls) under
    ``Invalid Tool Calls:`` with their error."""
    text = _title(kind, bold=bold)
    if name is not None:
        text += f"\nName: {name}"
    text += f"\n\n{content}"
    if calls is None:
        return text
    lines: list[str] = []
    for heading, group in (
        ("Tool Calls:", [call for call in calls if not call.error]),
        ("Invalid Tool Calls:", [call for call in calls if call.error]),
    ):
        if group:
            lines.append(heading)
            for call in group:
                lines.extend(_call_lines(call))
    return (text.strip() + "\n" + "\n".join(lines)).strip()


# -- usage_metadata -------------------------------------------------------------------------


def usage_metadata(usage: Any) -> dict[str, Any] | None:
    """``Usage`` as LangChain's ``UsageMetadata`` dict. A detail is given only when its
    count is not zero: plait's ``Usage`` does not tell a zero from an unreported count.
    The cache writes by lifetime are under the keys langchain-anthropic uses."""
    if usage is None:
        return None
    found: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    given = {
        key: count
        for key, count in (
            ("cache_read", usage.cache_read_tokens),
            ("cache_creation", usage.cache_write_tokens),
            ("ephemeral_5m_input_tokens", usage.cache_write_5m_tokens),
            ("ephemeral_1h_input_tokens", usage.cache_write_1h_tokens),
        )
        if count
    }
    if given:
        found["input_token_details"] = given
    if usage.reasoning_tokens:
        found["output_token_details"] = {"reasoning": usage.reasoning_tokens}
    return found


# -- content_blocks -------------------------------------------------------------------------


def _extras(made: dict[str, Any], block: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    """``made`` with the keys of ``block`` it did not read kept under ``extras``."""
    skip = set(known)
    rest = {key: value for key, value in block.items() if key not in skip}
    if rest:
        made["extras"] = rest
    return made


def _non_standard(block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "non_standard", "value": dict(block)}


def _annotation(citation: Any) -> dict[str, Any]:
    """An Anthropic citation as a standard ``citation`` annotation."""
    if not isinstance(citation, Mapping) or "cited_text" not in citation:
        return {"type": "non_standard_annotation", "value": citation}
    made: dict[str, Any] = {"type": "citation", "cited_text": citation["cited_text"]}
    if citation.get("type") == "web_search_result_location":
        if "url" not in citation:
            return {"type": "non_standard_annotation", "value": dict(citation)}
        made["url"] = citation["url"]
    title = citation.get("document_title") or citation.get("title")
    if title:
        made["title"] = title
    known = {"type", "cited_text", "url", "title", "document_title", "index", "extras"}
    return _extras(made, citation, known)


def _text(block: Mapping[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = {"type": "text", "text": str(block.get("text", ""))}
    if block.get("id"):
        made["id"] = block["id"]  # a Responses message's id, kept on its text
    citations = block.get("citations")
    if isinstance(citations, list) and citations:
        made["annotations"] = [_annotation(item) for item in citations]
    elif isinstance(block.get("annotations"), list) and block["annotations"]:
        made["annotations"] = list(block["annotations"])
    return made


def _sourced(kind: str, block: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic ``image``/``document`` block (a ``source`` of base64, url, file or
    text) as a standard ``image``, ``file`` or ``text-plain`` block."""
    source = block["source"]
    made: dict[str, Any]
    if source.get("type") == "base64" and "data" in source and "media_type" in source:
        made = {"type": kind, "base64": source["data"], "mime_type": source["media_type"]}
    elif source.get("type") == "url" and "url" in source:
        made = {"type": kind, "url": source["url"]}
    elif source.get("type") == "file" and "file_id" in source:
        made = {"type": kind, "id": source["file_id"]}
    elif kind == "file" and source.get("type") == "text" and "data" in source:
        mime = block.get("media_type", "text/plain")
        made = {"type": "text-plain", "text": source["data"], "mime_type": mime}
    else:
        return _non_standard(block)
    return _extras(made, block, ("type", "source"))


def _image(block: Mapping[str, Any]) -> dict[str, Any]:
    """An image in another provider's form (Chat Completions ``image_url``, Responses
    ``input_image``, a plugin's ``plait.image_forms``) as a standard ``image`` block."""
    from plait.models._images import read_image

    image = read_image(block)
    if image is None:
        return _non_standard(block)
    made: dict[str, Any] = (
        {"type": "image", "url": image.url}
        if image.data is None
        else {"type": "image", "base64": image.data, "mime_type": image.media_type}
    )
    if image.detail:
        made["extras"] = {"detail": image.detail}
    return made


def _openai_data(block: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions' ``input_audio`` and ``file`` parts as ``audio``/``file`` blocks."""
    from plait.models._images import image_from_url

    if block["type"] == "input_audio":
        audio = block["input_audio"]
        if "data" in audio and "format" in audio:
            return {
                "type": "audio",
                "base64": audio["data"],
                "mime_type": f"audio/{audio['format']}",
            }
        return _non_standard(block)
    part = block["file"]
    made: dict[str, Any]
    if "file_id" in part:
        made = {"type": "file", "file_id": part["file_id"]}
    else:
        data = image_from_url(part.get("file_data"))  # any data: URL, not only an image's
        if data is None or data.data is None:
            return _non_standard(block)
        made = {"type": "file", "base64": data.data, "mime_type": data.media_type}
    return _extras(made, part, ("file_id", "file_data"))


def _v0(block: Mapping[str, Any]) -> dict[str, Any]:
    """LangChain 0.3's ``source_type`` blocks as their 1.x shape."""
    kind, source = block["type"], block["source_type"]
    made: dict[str, Any]
    if source == "url" and "url" in block:
        made = {"type": kind, "url": block["url"]}
    elif source == "base64" and "data" in block:
        made = {"type": kind, "base64": block["data"]}
    elif source == "id" and "id" in block:
        made = {"type": kind, "file_id": block["id"]}
    elif source == "text" and "text" in block:
        made = {"type": "text-plain", "text": block["text"]}
    else:
        return _non_standard(block)
    if "mime_type" in block:
        made["mime_type"] = block["mime_type"]
    return _extras(made, block, ("type", "source_type", "url", "data", "id", "text", "mime_type"))


def _tool_call(call: Any) -> dict[str, Any]:
    if call.error:
        return {
            "type": "invalid_tool_call",
            "id": call.id,
            "name": call.name,
            "args": None,
            "error": call.error,
        }
    return {"type": "tool_call", "id": call.id, "name": call.name, "args": call.args}


def _server_call(block: Mapping[str, Any]) -> dict[str, Any]:
    """Anthropic's ``server_tool_use``/``mcp_tool_use`` as a ``server_tool_call``
    (code execution is LangChain's ``code_interpreter``, an MCP tool ``remote_mcp``)."""
    name = str(block.get("name", ""))
    made: dict[str, Any] = {"type": "server_tool_call", "id": block.get("id", "")}
    if block["type"] == "mcp_tool_use":
        made["name"], made["args"] = "remote_mcp", block.get("input", {})
        made["extras"] = {"tool_name": name}
        return made
    made["name"] = "code_interpreter" if name == "code_execution" else name
    made["args"] = block.get("input", {})
    return _extras(made, block, ("type", "name", "input", "partial_json", "id", "index"))


def _server_result(block: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic ``*_tool_result`` block as a ``server_tool_result``."""
    output = block.get("content", [])
    failed = bool(block.get("is_error")) or (
        isinstance(output, Mapping) and bool(output.get("error_code"))
    )
    made: dict[str, Any] = {
        "type": "server_tool_result",
        "tool_call_id": block.get("tool_use_id", ""),
        "status": "error" if failed else "success",
    }
    if output:
        made["output"] = output
    _extras(made, block, ("type", "tool_use_id", "content", "is_error", "index"))
    made["extras"] = {"block_type": block["type"], **made.get("extras", {})}
    return made


def _item_result(block: Mapping[str, Any], output: Any) -> dict[str, Any]:
    """The ``server_tool_result`` half of a Responses built-in tool item."""
    made: dict[str, Any] = {"type": "server_tool_result", "tool_call_id": block["id"]}
    if output:
        made["output"] = output
    status = block.get("status")
    if status in ("completed", "failed"):
        made["status"] = "success" if status == "completed" else "error"
    elif status:
        made["extras"] = {"status": status}
    return made


def _responses_item(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Responses built-in tool item (``web_search_call``, ``file_search_call``,
    ``code_interpreter_call``, ``mcp_call``) as a ``server_tool_call`` and its
    ``server_tool_result``; a generated image (``image_generation_call``) as an ``image``."""
    kind = block["type"]
    call: dict[str, Any] = {"type": "server_tool_call", "id": block["id"]}
    if kind == "image_generation_call":
        made: dict[str, Any] = {"type": "image", "base64": block["result"], "id": block["id"]}
        if block.get("output_format"):
            made["mime_type"] = f"image/{block['output_format']}"
        known = ("type", "id", "result", "index", "partial_image_b64")
        return [_extras(made, block, known)]
    if kind == "web_search_call":
        action = block.get("action")
        action = action if isinstance(action, Mapping) else {}
        call["name"] = "web_search"
        call["args"] = {key: value for key, value in action.items() if key != "sources"}
        call.update(
            (k, v) for k, v in block.items() if k not in ("type", "id", "action", "status", "index")
        )
        sources = action.get("sources")
        return [call, _item_result(block, {"sources": sources} if sources else None)]
    if kind == "file_search_call":
        call["name"], call["args"] = "file_search", {"queries": block.get("queries", [])}
        skip: tuple[str, ...] = ("type", "id", "queries", "results", "status", "index")
        call.update((k, v) for k, v in block.items() if k not in skip)
        return [call, _item_result(block, block.get("results"))]
    if kind == "code_interpreter_call":
        call["name"] = "code_interpreter"
        if "code" in block:
            call["args"] = {"code": block["code"]}
        _extras(call, block, ("type", "id", "outputs", "status", "code", "extras", "index"))
        return [call, _item_result(block, block.get("outputs"))]
    # mcp_call: its arguments are JSON text; an error is its result's
    extras: dict[str, Any] = {}
    call["name"] = "remote_mcp"
    arguments = block.get("arguments")
    if isinstance(arguments, str) and arguments:
        try:
            call["args"] = json.loads(arguments)
        except json.JSONDecodeError:
            extras["arguments"] = arguments
    extras.update({"tool_name": block["name"]} if "name" in block else {})
    extras.update({"server_label": block["server_label"]} if "server_label" in block else {})
    skip = ("type", "id", "arguments", "name", "server_label", "output", "error", "index")
    extras.update((k, v) for k, v in block.items() if k not in skip)
    if extras:
        call["extras"] = extras
    result: dict[str, Any] = {"type": "server_tool_result", "tool_call_id": block["id"]}
    if block.get("output"):
        result["output"] = block["output"]
    result["status"] = "error" if block.get("error") else "success"
    if block.get("error"):
        result["extras"] = {"error": block["error"]}
    return [call, result]


_RESPONSES_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "image_generation_call",
    }
)


def _reasoning(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Anthropic's ``thinking`` block, or a Responses ``reasoning`` item (one block per
    summary part, the item's other keys on the first, as LangChain splits it), as
    ``reasoning`` blocks."""
    if block["type"] == "thinking":
        made: dict[str, Any] = {"type": "reasoning", "reasoning": str(block.get("thinking", ""))}
        return [_extras(made, block, ("type", "thinking", "index"))]
    if "summary" not in block:
        return [dict(block)]  # already LangChain's shape
    common: dict[str, Any] = {key: block[key] for key in ("type", "id") if key in block}
    rest = {k: v for k, v in block.items() if k not in ("type", "id", "summary", "reasoning")}
    parts = block["summary"] if isinstance(block["summary"], list) else []
    if not parts:
        return [{**common, **({"extras": rest} if rest else {})}]
    found = []
    for position, part in enumerate(parts):
        made = {
            **common,
            "reasoning": str(part.get("text", "")) if isinstance(part, Mapping) else "",
        }
        if position == 0:
            made.update(rest)  # beside the text, not under extras: as langchain-core has it
        found.append(made)
    return found


def _standard(block: Mapping[str, Any], calls: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One of plait's content blocks as the standard blocks LangChain reads it as."""
    kind = block.get("type")
    if kind == "text":
        return [_text(block)]
    if kind in ("thinking", "reasoning"):
        return _reasoning(block)
    if kind in ("image", "document") and isinstance(block.get("source"), Mapping):
        return [_sourced("image" if kind == "image" else "file", block)]
    if kind in ("image", "audio", "file") and "source_type" in block:
        return [_v0(block)]
    if kind == "input_audio" and isinstance(block.get("input_audio"), Mapping):
        return [_openai_data(block)]
    if kind == "file" and isinstance(block.get("file"), Mapping):
        return [_openai_data(block)]
    if kind in ("tool_use", "function_call"):
        call = calls.get(str(block.get("call_id") or block.get("id")))
        if call is not None and kind == "function_call":
            made = _tool_call(call)
            extras = {k: block[k] for k in ("status", "namespace", "async") if k in block}
            if "id" in block:
                extras = {"item_id": block["id"], **extras}
            return [{**made, "extras": extras} if extras else made]
        if call is not None:
            return [_tool_call(call)]
        if kind == "tool_use":
            made = {"type": "tool_call", "id": block.get("id", "")}
            return [{**made, "name": block.get("name", ""), "args": block.get("input", {})}]
        return [_non_standard(block)]
    if kind in _RESPONSES_ITEMS and "id" in block:
        if kind != "image_generation_call" or block.get("result"):
            return _responses_item(block)
    if kind in ("server_tool_use", "mcp_tool_use"):
        return [_server_call(block)]
    if isinstance(kind, str) and kind.endswith("_tool_result"):
        return [_server_result(block)]
    if kind in KNOWN_BLOCK_TYPES:
        return [dict(block)]
    if isinstance(kind, str):
        from plait.models._images import IMAGE_TYPES

        if kind in IMAGE_TYPES:
            return [_image(block)]
    return [_non_standard(block)]


def standard_blocks(
    content: Any, calls: Sequence[Any] = (), metadata: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """``content`` as LangChain 1.x's standard content blocks, new dicts each time.

    For an AI message, ``calls`` are its tool calls: each not already standing in the
    content (as an Anthropic ``tool_use`` or a Responses ``function_call`` block) follows
    it as a ``tool_call`` block (``invalid_tool_call`` when its arguments did not parse).
    From its ``metadata`` (``response_metadata``), a compatible server's ``reasoning``
    text leads as a ``reasoning`` block, and a refusal (OpenAI's ``refusal`` text, or
    Anthropic's ``"refusal"`` stop) ends it as a ``refusal`` block, as LangChain's
    translators add them, when the content has none.
    """
    items: list[Any] = [content] if isinstance(content, str) else list(content)
    by_id = {call.id: call for call in calls}
    found: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            if item:
                found.append({"type": "text", "text": item})
        elif isinstance(item, Mapping):
            found.extend(_standard(item, by_id))
    placed = {
        block.get("id") for block in found if block["type"] in ("tool_call", "invalid_tool_call")
    }
    found.extend(_tool_call(call) for call in calls if call.id not in placed)
    metadata = metadata or {}
    kinds = {block["type"] for block in found}
    reasoning = metadata.get("reasoning")
    if isinstance(reasoning, str) and reasoning and "reasoning" not in kinds:
        found.insert(0, {"type": "reasoning", "reasoning": reasoning})
    refusal = metadata.get("refusal")
    if "refusal" not in kinds:
        if isinstance(refusal, str) and refusal:
            found.append({"type": "refusal", "refusal": refusal})
        elif metadata.get("finish_reason") == "refusal":
            found.append({"type": "refusal", "refusal": ""})
    return found
