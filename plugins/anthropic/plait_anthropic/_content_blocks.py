"""Anthropic's content blocks as LangChain 1.x's standard blocks, as langchain-core's
Anthropic translator reads them: ``thinking`` as ``reasoning``, a text's ``citations`` as
``citation`` annotations, an ``image``/``document`` ``source`` as ``image``, ``file`` or
``text-plain``, ``tool_use`` as ``tool_call``, ``server_tool_use``/``mcp_tool_use`` as
``server_tool_call`` and a ``*_tool_result`` as ``server_tool_result``.

plait reads a message's ``content_blocks`` through here (entry point ``anthropic`` in
``plait.content_blocks``): first for this provider's answers, after its own generic
reading for any other message. Plain text and LangChain's standard blocks are plait's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plait.models.http import tool_call_block, with_extras

if TYPE_CHECKING:
    from plait.messages import ToolCall

__all__ = ["read_block"]


def _annotation(citation: Any) -> dict[str, Any]:
    """A citation as a standard ``citation`` annotation."""
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
    return with_extras(made, citation, known)


def _cited(block: Mapping[str, Any]) -> dict[str, Any]:
    """A text block with citations, its citations as the text's annotations."""
    made: dict[str, Any] = {"type": "text", "text": str(block.get("text", ""))}
    if block.get("id"):
        made["id"] = block["id"]
    made["annotations"] = [_annotation(item) for item in block["citations"]]
    return made


def _sourced(kind: str, block: Mapping[str, Any]) -> dict[str, Any]:
    """An ``image``/``document`` block (a ``source`` of base64, url, file or text) as a
    standard ``image``, ``file`` or ``text-plain`` block."""
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
        return {"type": "non_standard", "value": dict(block)}
    return with_extras(made, block, ("type", "source"))


def _server_call(block: Mapping[str, Any]) -> dict[str, Any]:
    """``server_tool_use``/``mcp_tool_use`` as a ``server_tool_call`` (code execution is
    LangChain's ``code_interpreter``, an MCP tool ``remote_mcp``)."""
    name = str(block.get("name", ""))
    made: dict[str, Any] = {"type": "server_tool_call", "id": block.get("id", "")}
    if block["type"] == "mcp_tool_use":
        made["name"], made["args"] = "remote_mcp", block.get("input", {})
        made["extras"] = {"tool_name": name}
        return made
    made["name"] = "code_interpreter" if name == "code_execution" else name
    made["args"] = block.get("input", {})
    return with_extras(made, block, ("type", "name", "input", "partial_json", "id", "index"))


def _server_result(block: Mapping[str, Any]) -> dict[str, Any]:
    """A ``*_tool_result`` block as a ``server_tool_result``."""
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
    with_extras(made, block, ("type", "tool_use_id", "content", "is_error", "index"))
    made["extras"] = {"block_type": block["type"], **made.get("extras", {})}
    return made


def read_block(
    block: Mapping[str, Any], calls: Mapping[str, ToolCall]
) -> list[dict[str, Any]] | None:
    """One Anthropic content block as standard blocks; ``None`` for any other block.
    ``calls`` are the message's tool calls by id: a ``tool_use`` block stands for its
    call (``invalid_tool_call`` when the arguments did not parse)."""
    kind = block.get("type")
    if kind == "thinking":
        made: dict[str, Any] = {"type": "reasoning", "reasoning": str(block.get("thinking", ""))}
        return [with_extras(made, block, ("type", "thinking", "index"))]
    if kind == "text":
        citations = block.get("citations")
        return [_cited(block)] if isinstance(citations, list) and citations else None
    if kind in ("image", "document") and isinstance(block.get("source"), Mapping):
        return [_sourced("image" if kind == "image" else "file", block)]
    if kind == "tool_use":
        call = calls.get(str(block.get("call_id") or block.get("id")))
        if call is not None:
            return [tool_call_block(call)]
        made = {"type": "tool_call", "id": block.get("id", "")}
        return [{**made, "name": block.get("name", ""), "args": block.get("input", {})}]
    if kind in ("server_tool_use", "mcp_tool_use"):
        return [_server_call(block)]
    if isinstance(kind, str) and kind.endswith("_tool_result") and kind != "server_tool_result":
        return [_server_result(block)]  # (``server_tool_result`` is LangChain's own)
    return None
