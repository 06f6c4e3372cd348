"""Approximate token counting: characters / 4 plus a per-message overhead."""

from __future__ import annotations

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
                chars += len(text) if isinstance(text, str) else _json_chars(block)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                chars += len(call.name) + _json_chars(call.args)
    return -(-chars // _CHARS_PER_TOKEN) + _PER_MESSAGE * count


def _json_chars(value: object) -> int:
    """About how many characters ``json.dumps(value)`` writes, walked without recursion.

    An estimate must not fail where the data is legal: tool arguments nested thousands
    deep are refused later, with a clear error, by whatever stores them.
    """
    chars = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            chars += len(item) + 2
        elif isinstance(item, dict):
            chars += 2 + 4 * len(item) + sum(len(str(k)) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            chars += 2 + 2 * len(item)
            stack.extend(item)
        else:
            chars += len(str(item))
    return chars
