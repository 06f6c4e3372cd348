"""The Responses API's output items as LangChain 1.x's standard blocks, as
langchain-core's OpenAI translator reads them: a ``reasoning`` item's summary as
``reasoning`` blocks, a ``function_call`` as its ``tool_call``, the built-in tool items
(``web_search_call``, ``file_search_call``, ``code_interpreter_call``, ``mcp_call``) as a
``server_tool_call`` and its ``server_tool_result``, a generated image as an ``image``.

plait reads a message's ``content_blocks`` through here (entry point ``openai-responses``
in ``plait.content_blocks``): first for this provider's answers, after its own generic
reading for any other message. Text, ``input_image`` and LangChain's standard blocks are
plait's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plait.models.http import tool_call_block, with_extras

if TYPE_CHECKING:
    from plait.messages import ToolCall

__all__ = ["read_block"]

_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "image_generation_call",
    }
)
"""The built-in tool items read as a call and its result (a generated image as an image)."""


def _result(block: Mapping[str, Any], output: Any) -> dict[str, Any]:
    """The ``server_tool_result`` half of a built-in tool item."""
    made: dict[str, Any] = {"type": "server_tool_result", "tool_call_id": block["id"]}
    if output:
        made["output"] = output
    status = block.get("status")
    if status in ("completed", "failed"):
        made["status"] = "success" if status == "completed" else "error"
    elif status:
        made["extras"] = {"status": status}
    return made


def _mcp(block: Mapping[str, Any], call: dict[str, Any]) -> list[dict[str, Any]]:
    """An ``mcp_call``: its arguments are JSON text; an error is its result's."""
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


def _item(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A built-in tool item as a ``server_tool_call`` and its ``server_tool_result``; a
    generated image (``image_generation_call``) as an ``image``."""
    kind = block["type"]
    call: dict[str, Any] = {"type": "server_tool_call", "id": block["id"]}
    if kind == "image_generation_call":
        made: dict[str, Any] = {"type": "image", "base64": block["result"], "id": block["id"]}
        if block.get("output_format"):
            made["mime_type"] = f"image/{block['output_format']}"
        known = ("type", "id", "result", "index", "partial_image_b64")
        return [with_extras(made, block, known)]
    if kind == "web_search_call":
        action = block.get("action")
        action = action if isinstance(action, Mapping) else {}
        call["name"] = "web_search"
        call["args"] = {key: value for key, value in action.items() if key != "sources"}
        call.update(
            (k, v) for k, v in block.items() if k not in ("type", "id", "action", "status", "index")
        )
        sources = action.get("sources")
        return [call, _result(block, {"sources": sources} if sources else None)]
    if kind == "file_search_call":
        call["name"], call["args"] = "file_search", {"queries": block.get("queries", [])}
        skip: tuple[str, ...] = ("type", "id", "queries", "results", "status", "index")
        call.update((k, v) for k, v in block.items() if k not in skip)
        return [call, _result(block, block.get("results"))]
    if kind == "code_interpreter_call":
        call["name"] = "code_interpreter"
        if "code" in block:
            call["args"] = {"code": block["code"]}
        with_extras(call, block, ("type", "id", "outputs", "status", "code", "extras", "index"))
        return [call, _result(block, block.get("outputs"))]
    return _mcp(block, call)


def _reasoning(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A ``reasoning`` item as ``reasoning`` blocks: one per summary part, the item's
    other keys on the first (beside the text, not under extras), as LangChain splits it."""
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
            made.update(rest)
        found.append(made)
    return found


def read_block(
    block: Mapping[str, Any], calls: Mapping[str, ToolCall]
) -> list[dict[str, Any]] | None:
    """One Responses output item as standard blocks; ``None`` for any other block.
    ``calls`` are the message's tool calls by id: a ``function_call`` item stands for its
    call, with the item's id under ``extras``."""
    kind = block.get("type")
    if kind == "reasoning" and "summary" in block:
        return _reasoning(block)
    if kind == "function_call":
        call = calls.get(str(block.get("call_id") or block.get("id")))
        if call is None:
            return None
        made = tool_call_block(call)
        extras = {k: block[k] for k in ("status", "namespace", "async") if k in block}
        if "id" in block:
            extras = {"item_id": block["id"], **extras}
        return [{**made, "extras": extras} if extras else made]
    if kind in _ITEMS and "id" in block:
        if kind != "image_generation_call" or block.get("result"):
            return _item(block)
    return None
