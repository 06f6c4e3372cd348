"""Approximate token counting: characters / 4 plus a per-message overhead."""

from __future__ import annotations

import json
from collections.abc import Iterable

from plait.messages import AIMessage, Message

__all__ = ["count_tokens"]

_PER_MESSAGE = 4
_CHARS_PER_TOKEN = 4


def count_tokens(messages: Iterable[Message]) -> int:
    """About how many tokens ``messages`` take for a typical BPE tokenizer.

    Counts the text (and tool-call names and arguments) at four characters a token, plus
    four tokens per message for role markers. Good enough for triggers; a ``ChatModel``
    may offer an exact ``count_tokens``.
    """
    chars = 0
    count = 0
    for message in messages:
        count += 1
        content = message.content
        if isinstance(content, str):
            chars += len(content)
        else:
            for block in content:
                text = block.get("text")
                chars += len(text) if isinstance(text, str) else len(json.dumps(block))
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                chars += len(call.name) + len(json.dumps(call.args))
    return -(-chars // _CHARS_PER_TOKEN) + _PER_MESSAGE * count
