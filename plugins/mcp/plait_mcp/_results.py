"""An MCP ``CallToolResult`` as the tool message the model reads.

Text stays text (one string when there is nothing else); images become image blocks and
PDFs document blocks (base64 sources, as the providers send them on); embedded text
resources become text blocks; what no provider takes (audio, other binary resources) is
described in a line of text. ``structuredContent`` goes in the message's metadata, where
code (not the model) reads it.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Literal

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from plait.messages import ToolMessage
from plait.types import ToolRuntime

__all__ = ["error_message", "to_message"]


def _block(item: Any) -> dict[str, Any]:
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.text}
    if isinstance(item, ImageContent):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": item.mime_type, "data": item.data},
        }
    if isinstance(item, AudioContent):
        size = len(base64.b64decode(item.data, validate=False))
        return {"type": "text", "text": f"[audio ({item.mime_type}, {size} bytes) not shown]"}
    if isinstance(item, ResourceLink):
        return {"type": "text", "text": f"[resource link: {item.name} <{item.uri}>]"}
    if isinstance(item, EmbeddedResource):
        resource = item.resource
        if isinstance(resource, TextResourceContents):
            return {"type": "text", "text": resource.text}
        if isinstance(resource, BlobResourceContents):
            if resource.mime_type == "application/pdf":
                return {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": resource.blob,
                    },
                }
            if (resource.mime_type or "").startswith("image/"):
                return {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": resource.mime_type,
                        "data": resource.blob,
                    },
                }
            size = len(base64.b64decode(resource.blob, validate=False))
            kind = resource.mime_type or "binary"
            return {
                "type": "text",
                "text": f"[resource {resource.uri} ({kind}, {size} bytes) not shown]",
            }
    return {"type": "text", "text": f"[{type(item).__name__} content not shown]"}


def _resources(result: CallToolResult) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for item in result.content:
        if isinstance(item, EmbeddedResource):
            found.append({"uri": str(item.resource.uri), "mime_type": item.resource.mime_type})
        elif isinstance(item, ResourceLink):
            found.append({"uri": str(item.uri), "mime_type": item.mime_type, "link": True})
    return found


def to_message(
    result: CallToolResult, runtime: ToolRuntime, *, server: str, tool: str
) -> ToolMessage:
    """The answer to the call ``runtime`` describes."""
    blocks = [_block(item) for item in result.content]
    content: str | list[dict[str, Any]]
    if all(b["type"] == "text" for b in blocks):
        content = "\n".join(str(b["text"]) for b in blocks)
        if not content and result.structured_content is not None:
            content = json.dumps(result.structured_content, ensure_ascii=False)
    else:
        content = blocks
    metadata: dict[str, Any] = {"mcp": {"server": server, "tool": tool}}
    if result.structured_content is not None:
        metadata["structured_content"] = result.structured_content
    resources = _resources(result)
    if resources:
        metadata["mcp"]["resources"] = resources
    status: Literal["success", "error"] = "success"
    if result.is_error:
        status = "error"
        metadata["mcp"]["is_error"] = True
        lead = f"Error: MCP tool {tool!r} of server {server!r} failed"
        if isinstance(content, str):
            content = f"{lead}: {content}" if content else f"{lead}."
        else:
            content = [{"type": "text", "text": f"{lead}:"}, *content]
    call = runtime.tool_call
    return ToolMessage(
        content, tool_call_id=call.id, name=call.name, status=status, metadata=metadata
    )


def error_message(runtime: ToolRuntime, text: str, *, server: str, tool: str) -> ToolMessage:
    """An error answer written by plait (timeout, lost session …), not by the server."""
    return ToolMessage.error(
        runtime.tool_call,
        f"Error: {text}",
        metadata={"mcp": {"server": server, "tool": tool, "is_error": True}},
    )
