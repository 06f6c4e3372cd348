"""Rewriting a message's text, tool-call arguments and metadata (the pseudonymize
strategy's placeholders put in and taken out)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from plait.messages import AIMessage, AnyMessage, Content
from plait_pii._pseudonyms import Restorer
from plait_pii._walk import map_strings


def _map_content(content: Content, rewrite: Callable[[str], str]) -> Content:
    if isinstance(content, str):
        return rewrite(content)
    return [
        {**block, "text": rewrite(block["text"])}
        if block.get("type") == "text" and isinstance(block.get("text"), str)
        else block
        for block in content
    ]


def _restored(message: AnyMessage, restorer: Restorer) -> AnyMessage:
    return _rewritten(message, restorer.text)


def _rewritten(message: AnyMessage, rewrite: Callable[[str], str]) -> AnyMessage:
    """``message`` with ``rewrite`` applied to its text, its tool calls' string arguments
    and the error of a call whose arguments did not parse (it quotes them) (the same
    object when nothing changed; arguments are never compared whole, as deep ones could
    not be)."""
    changed = False

    def tracked(text: str) -> str:
        nonlocal changed
        new = rewrite(text)
        changed = changed or new != text
        return new

    changes: dict[str, Any] = {}
    content = _map_content(message.content, tracked)
    if changed:
        changes["content"] = content
    if message.metadata:  # kept in state too (an MCP tool's structured_content)
        before = changed
        changed = False
        metadata = map_strings(message.metadata, tracked)
        if changed:
            changes["metadata"] = metadata
        changed = changed or before
    if isinstance(message, AIMessage) and message.tool_calls:
        before = changed
        changed = False
        calls = [
            attrs.evolve(c, args=map_strings(c.args, tracked), error=c.error and tracked(c.error))
            for c in message.tool_calls
        ]
        if changed:
            changes["tool_calls"] = calls
        changed = changed or before
    return attrs.evolve(message, **changes) if changes else message
