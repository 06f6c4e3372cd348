"""Streamed text held back until the output guardrails pass it.

Text is released a sentence at a time (``release="sentence"``: each time the held text
ends a sentence, the guardrails check everything said so far and, if they pass, the
sentences go out) or all at once (``release="end"``). A trip raises before the text that
tripped is yielded, so the reader never sees it. Tool-call pieces, usage and metadata are
not text and pass at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import attrs

from plait.messages import AIMessageChunk

__all__ = ["Held", "run"]

_SENTENCE_END = re.compile(r"[.!?…。](?:[\"')\]]*)\s+|\n")
"""Where a sentence ends: terminal punctuation (and closing quotes) followed by space, or a
line break."""


class Held:
    """One streamed answer's held-back text."""

    def __init__(self, release: str) -> None:
        self.release = release
        self.passed = ""
        """Text the guardrails passed and the reader has been given."""
        self.pending = ""
        self.id: str | None = None

    def feed(self, chunk: AIMessageChunk) -> tuple[AIMessageChunk | None, str | None]:
        """Take ``chunk``: what may go out now without checking (its non-text parts), and
        the text to check before its held sentences go out (``None``: nothing to check)."""
        self.id = self.id or chunk.id
        self.pending += chunk.content
        rest = None
        if (
            chunk.tool_call_chunks
            or chunk.usage is not None
            or chunk.response_metadata
            or (chunk.blocks)
        ):
            rest = attrs.evolve(chunk, content="")
        if self.release != "sentence" or not chunk.content:
            return rest, None
        cut = 0
        for found in _SENTENCE_END.finditer(self.pending):
            cut = found.end()
        if not cut:
            return rest, None
        return rest, self.passed + self.pending[:cut]

    def release_checked(self, checked: str) -> AIMessageChunk | None:
        """The text up to ``checked`` (which the guardrails passed) as a chunk."""
        out = checked[len(self.passed) :]
        self.pending = self.pending[len(out) :]
        self.passed = checked
        return AIMessageChunk(out, id=self.id) if out else None

    @property
    def whole(self) -> str:
        return self.passed + self.pending


def run(
    held: Held, chunks: Iterator[AIMessageChunk], check: Callable[[str], None]
) -> Iterator[AIMessageChunk]:
    """The sync pipeline: ``check(text)`` raises on a trip."""
    for chunk in chunks:
        rest, text = held.feed(chunk)
        if text is not None:
            check(text)
            out = held.release_checked(text)
            if out is not None:
                yield out
        if rest is not None:
            yield rest
    if held.pending:
        check(held.whole)
        out = held.release_checked(held.whole)
        if out is not None:
            yield out
