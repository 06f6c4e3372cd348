"""Tools and an offline "model" for the long-reading example.

Each chapter is long; the ``context_editing`` middleware replaces older chapters in the
model's request with a placeholder once the conversation passes a token threshold, so
the prompt stays small however long the thread gets.
"""

from __future__ import annotations

import re

from plait.messages import AIMessage, AnyMessage, ToolCall

PLACEHOLDER = "[chapter cleared to save context]"

_WORDS = (
    "the river bent north past the mill where the old ferryman kept his lamps burning "
    "through the long winter nights while the town slept under fresh snow"
).split()


def read_chapter(number: int) -> str:
    """Read one chapter of the book.

    Args:
        number: The chapter number, from 1.
    """
    if number < 1:
        raise ValueError("chapters start at 1")
    words = [_WORDS[(number * 7 + i) % len(_WORDS)] for i in range(220)]
    return f"Chapter {number}. " + " ".join(words).capitalize() + "."


def reader_brain(messages: list[AnyMessage], tools: list[object]) -> AIMessage:
    """A scripted stand-in for a model: read the chapter asked for, then say how much of
    the book is still in full in the prompt it received."""
    last = messages[-1]
    if last.type == "human":
        found = re.search(r"\d+", last.text)
        done = sum(1 for m in messages if m.type == "tool")
        number = int(found.group(0)) if found else done + 1
        return AIMessage("", tool_calls=[ToolCall("read_chapter", {"number": number})])
    chapters = [m for m in messages if m.type == "tool"]
    cleared = sum(1 for m in chapters if m.text == PLACEHOLDER)
    words = len(last.text.split())
    return AIMessage(
        f"I read {last.text.split('.')[0].lower()} ({words} words). In this prompt I see "
        f"{len(chapters) - cleared} chapter(s) in full and {cleared} cleared."
    )
