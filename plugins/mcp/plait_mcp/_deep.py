"""Requests nested too deep for the MCP SDK, answered instead of dropped.

The SDK's stdio transport parses each line with pydantic's JSON parser, which gives up
near 200 levels of nesting; the line is then dropped and the client waits forever. Each
line is checked here first: a request deeper than ``MAX_DEPTH`` becomes a call of the tool
``TOO_DEEP`` with the same id (and the protocol's ``_meta`` envelope), which the server
answers with an ``Invalid params`` error.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

__all__ = ["MAX_DEPTH", "TOO_DEEP", "guarded"]

MAX_DEPTH = 128
"""The deepest nesting of a request (its own levels included) answered normally."""
TOO_DEEP = "\x00plait: too deep"
"""The tool name a too-deep request is rewritten to call (no tool can have it)."""
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')
"""A JSON token: a string, a punctuation mark, or a scalar."""


async def guarded(lines: AsyncIterable[str]) -> AsyncIterator[str]:
    """stdin's lines, a request nested deeper than ``MAX_DEPTH`` replaced by a call of
    ``TOO_DEEP`` with the same id (answered with an error); a notification or response
    that deep is dropped."""
    async for line in lines:
        checked = _checked(line)
        if checked is not None:
            yield checked


def _checked(line: str) -> str | None:
    try:
        message = json.loads(line)
    except RecursionError:
        pruned = _pruned(line)
        try:
            message = json.loads(pruned)
        except ValueError:  # too deep and not JSON either ("[" * 5000): shallow now,
            return pruned  # the SDK takes it as any line that is not JSON
    except ValueError:
        return line  # not JSON: the SDK answers it as it does
    else:
        if _depth(message) <= MAX_DEPTH:
            return line
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None  # a notification or a response: nothing to answer
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    rewritten: dict[str, Any] = {"name": TOO_DEEP, "arguments": {}}
    if isinstance(meta, dict):
        rewritten["_meta"] = meta  # the protocol's envelope, which the SDK checks first
    return json.dumps(
        {"jsonrpc": "2.0", "id": message["id"], "method": "tools/call", "params": rewritten}
    )


def _depth(value: Any) -> int:
    """How deep ``value`` nests (a scalar is 0), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            todo.extend((child, level + 1) for child in children)
    return deepest


def _pruned(line: str) -> str:
    """``line`` (JSON too deep for ``json.loads``) with every value nested deeper than
    ``MAX_DEPTH`` replaced by ``null``, from its tokens."""
    out: list[str] = []
    depth = 0
    for match in _TOKEN.finditer(line):
        token = match.group()
        opening, closing = token in ("[", "{"), token in ("]", "}")
        if opening:
            depth += 1
            if depth == MAX_DEPTH + 1:
                out.append("null")
        if depth <= MAX_DEPTH:
            out.append(token)
        if closing:
            depth -= 1
    return "".join(out)
