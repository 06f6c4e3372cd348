"""A streamed answer rewritten as it streams: redacted (``_StreamRedactor``) or shown with
real values in place of placeholders (``_StreamRestorer``)."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs

from plait.messages import AIMessageChunk, ToolCallChunk
from plait_pii._pseudonyms import Restorer
from plait_pii.middleware import _Counter

if TYPE_CHECKING:
    from plait_pii.middleware import PIIMiddleware

LOOKBACK = 128
"""Streamed text held back (characters) so a match split across chunks is still found."""
CONTEXT = 32
"""Already-streamed text kept as left context (``version 1.2.3.4`` is not an IP)."""
HOLD = 1024
"""The most streamed text held back (characters) while a run of printable ASCII without
a space reaches past ``LOOKBACK``: an escaped or percent-encoded value is such a run, six
characters per letter (``ivan@\\u043f\\u043e...``), and must not be released in part
before it can be recognised whole."""


class _StreamRedactor:
    """Rewrites one streamed answer: text is released once no match can still straddle
    it (a look-back buffer), tool-call arguments are held whole and redacted as JSON."""

    def __init__(self, pii: PIIMiddleware) -> None:
        self.pii = pii
        self.pending = ""
        self.context = ""
        self.calls: dict[int, list[Any]] = {}
        self.id: str | None = None

    def _drain(self, final: bool) -> str:
        window = self.context + self.pending
        offset = len(self.context)
        found = [m for m in self.pii.matches(window) if m.start >= offset]
        safe = len(window)
        if not final:
            safe = _unsplit(window, max(offset, safe - LOOKBACK), max(offset, safe - HOLD))
        for match in found:
            if match.start < safe < match.end:
                safe = match.start
        released = [m for m in found if m.end <= safe]
        seen = _Counter()
        region = window[:safe]
        text = self.pii._apply(region, released, seen)[offset:] if released else region[offset:]
        self.pii._check(seen, "model output")
        self.context = region[-CONTEXT:]
        self.pending = window[safe:]
        return text

    def feed(self, chunk: AIMessageChunk) -> Iterator[AIMessageChunk]:
        self.id = self.id or chunk.id
        for part in chunk.tool_call_chunks:
            slot = self.calls.setdefault(part.index, [None, None, []])
            slot[0] = slot[0] or part.id
            slot[1] = slot[1] or part.name
            slot[2].append(part.args)
        self.pending += chunk.content
        # a provider block ends the text before it: all of that text is released first
        text = self._drain(final=bool(chunk.blocks)) if chunk.content or chunk.blocks else ""
        blocks = self._blocks(chunk.blocks)
        if text or blocks or chunk.usage is not None or chunk.response_metadata:
            yield attrs.evolve(chunk, content=text, tool_call_chunks=(), blocks=blocks)

    def _blocks(self, blocks: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
        """Provider blocks kept (a thinking block as signed), a finished text block (with
        citations) redacted as the streamed text it repeats."""
        seen = _Counter()
        handled = tuple(
            {**block, "text": self.pii.text(block["text"], seen)}
            if block.get("type") == "text" and isinstance(block.get("text"), str)
            else block
            for block in blocks
        )
        self.pii._check(seen, "model output")
        return handled

    def finish(self) -> Iterator[AIMessageChunk]:
        text = self._drain(final=True)
        if text:
            yield AIMessageChunk(text, id=self.id)
        seen = _Counter()
        calls = [
            ToolCallChunk(index, call_id, name, self._arguments("".join(pieces), seen))
            for index, (call_id, name, pieces) in sorted(self.calls.items())
        ]
        self.pii._check(seen, "model output")  # before anything of a blocked call is sent
        for call in calls:
            yield AIMessageChunk(tool_call_chunks=[call], id=self.id)

    def _arguments(self, raw: str, seen: _Counter) -> str:
        """A call's argument text: valid JSON is redacted leaf by leaf and stays valid JSON
        of the same shape; text that is not JSON (the kernel reports it) is redacted as is."""
        if not raw.strip():
            return raw
        try:
            args = json.loads(raw)
            return json.dumps(self.pii._value(args, seen), ensure_ascii=False)
        except (json.JSONDecodeError, RecursionError):  # not JSON, or too deep for json
            return self.pii.text(raw, seen)


def _unsplit(window: str, safe: int, floor: int) -> int:
    """``safe`` moved back to the start of the run of printable ASCII it would split, no
    further back than ``floor``."""
    if safe >= len(window) or not ("!" <= window[safe] <= "~"):
        return safe
    while safe > floor and "!" <= window[safe - 1] <= "~":
        safe -= 1
    return safe


class _StreamRestorer:
    """Shows the caller real values in place of placeholders as the answer streams. Only a
    tail that may still become a placeholder of the table (``<``, ``<EMA``, ``<EMAIL_1``
    when ``<EMAIL_12>`` is known) is held, until the next chunk completes or breaks it;
    every other piece of text leaves in the chunk it came in. Tool-call arguments are held
    whole and restored as JSON, as ``result.messages`` shows them and the tool gets them."""

    def __init__(self, restorer: Restorer) -> None:
        self.restorer = restorer
        self.known = sorted(restorer.values)  # the placeholders, for a prefix search
        self.pending = ""
        self.calls: dict[int, list[Any]] = {}
        self.id: str | None = None

    def _held_from(self, text: str) -> int:
        """Where the tail of ``text`` that a known placeholder may continue starts
        (``len(text)``: none). Only the last ``<`` can start one: no placeholder holds a
        second ``<``."""
        cut = text.rfind("<")
        if cut == -1:
            return len(text)
        tail = text[cut:]
        at = bisect.bisect_left(self.known, tail)
        if at < len(self.known) and self.known[at].startswith(tail) and self.known[at] != tail:
            return cut
        return len(text)

    def feed(self, chunk: AIMessageChunk) -> Iterator[AIMessageChunk]:
        self.id = self.id or chunk.id
        for part in chunk.tool_call_chunks:
            slot = self.calls.setdefault(part.index, [None, None, []])
            slot[0] = slot[0] or part.id
            slot[1] = slot[1] or part.name
            slot[2].append(part.args)
        text = self.pending + chunk.content
        # a provider block ends the text before it: nothing held may follow the block
        cut = len(text) if chunk.blocks else self._held_from(text)
        text, self.pending = self.restorer.text(text[:cut]), text[cut:]
        blocks = tuple(self._block(block) for block in chunk.blocks)
        if text or blocks or chunk.usage is not None or chunk.response_metadata:
            yield attrs.evolve(chunk, content=text, tool_call_chunks=(), blocks=blocks)

    def _block(self, block: dict[str, Any]) -> dict[str, Any]:
        """A finished text block (one with citations) repeats the streamed text: restored
        as that text is, so the assembled message keeps one copy of it."""
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return {**block, "text": self.restorer.text(block["text"])}
        return block

    def finish(self) -> Iterator[AIMessageChunk]:
        if self.pending:
            yield AIMessageChunk(self.restorer.text(self.pending), id=self.id)
        for index, (call_id, name, pieces) in sorted(self.calls.items()):
            raw = "".join(pieces)
            try:
                args = json.dumps(self.restorer.value(json.loads(raw)), ensure_ascii=False)
            except (json.JSONDecodeError, RecursionError):  # not JSON, or too deep for json
                args = self.restorer.text(raw)
            yield AIMessageChunk(
                tool_call_chunks=[ToolCallChunk(index, call_id, name, args)], id=self.id
            )
