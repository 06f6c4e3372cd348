"""A streamed answer rewritten as it streams: redacted (``_StreamRedactor``) or shown with
real values in place of placeholders (``_StreamRestorer``)."""

from __future__ import annotations

import bisect
import json
import re
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


class _Held:
    """Streamed text with placeholders restored as it arrives. Only a tail that a known
    placeholder may continue (``<``, ``<EMA``, ``<EMAIL_1`` when ``<EMAIL_12>`` is known)
    is held, until the next piece completes or breaks it; the answer's text and each
    string value of a tool call's arguments have one each."""

    def __init__(self, restorer: Restorer, known: list[str]) -> None:
        self.restorer = restorer
        self.known = known  # the placeholders, sorted for a prefix search
        self.pending = ""

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

    def feed(self, text: str) -> str:
        """``text`` after what is held, restored, less a new tail to hold."""
        text = self.pending + text
        cut = self._held_from(text)
        self.pending = text[cut:]
        return self.restorer.text(text[:cut])

    def flush(self) -> str:
        """What is held, restored: nothing follows it (the answer or the string ended)."""
        text, self.pending = self.pending, ""
        return self.restorer.text(text)


_OUTSIDE = re.compile(r'["{}\[\],:]')
"""What ends a run of argument text outside any string: a string opens, or where the
next string stands (a key or a value) changes."""
_INSIDE = re.compile(r'["\\\x00-\x1f]')
"""What ends a run of a string's characters that stand for themselves."""
_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_CUT_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")
"""An escape that the next fragment may complete."""
_LOW = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
"""The escaped second half of a surrogate pair."""
_CUT_LOW = re.compile(r"(?:\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]?)?)?)?)?")
"""The start of ``_LOW`` that the next fragment may complete."""


def _encoded(text: str) -> str:
    """``text`` as written inside a JSON string (a restored value's ``"``, ``\\`` and
    control characters escaped)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _unit(text: str, at: int) -> tuple[str, str | None] | None:
    """The escape (or raw control character) at ``at`` in a string: its text and the
    character it stands for (``None``: JSON does not allow it, or it is half a surrogate
    pair), or ``None`` when the end of ``text`` cuts it short."""
    if text[at] != "\\":
        return text[at], None  # a raw control character
    escape = _ESCAPE.match(text, at)
    if escape is None:
        if _CUT_ESCAPE.fullmatch(text, at):
            return None
        return text[at : at + 2], None  # a bad escape
    raw = escape[0]
    char = json.loads(f'"{raw}"')
    if "\udc00" <= char < "\ue000":
        return raw, None  # the second half of a pair alone
    if "\ud800" <= char < "\udc00":
        low = _LOW.match(text, at + 6)
        if low is not None:
            raw += low[0]
            return raw, json.loads(f'"{raw}"')
        if _CUT_LOW.fullmatch(text, at + 6):
            return None
        return raw, None  # the first half of a pair alone
    return raw, char


class _Arguments:
    """One tool call's streamed JSON arguments, restored as they arrive. A string value is
    read (escapes undone, so ``\\u003cEMAIL_1\\u003e`` is the placeholder it spells),
    restored through a ``_Held`` of its own and written back as JSON string text; keys
    and everything outside strings pass as written (``map_strings`` keeps keys too). Only
    what a placeholder may continue, or an escape the fragment's end cuts, is held. What
    JSON does not allow (a bad escape, a raw control character) passes as written, so
    arguments the kernel cannot parse stay unparsable, and so does half a surrogate pair.
    The fragments add up to a text whose parse is the parse of the model's, restored."""

    def __init__(self, held: _Held) -> None:
        self.held = held
        self.raw = ""  # the start of an escape the next fragment may complete
        self.in_string = False
        self.value = False  # the open string is a value (a key is kept as written)
        self.nesting: list[str] = []  # the open objects ("{") and arrays ("[")
        self.key_next = False  # the next string in the open object is a key

    def feed(self, fragment: str) -> str:
        text, self.raw = self.raw + fragment, ""
        out: list[str] = []
        decoded: list[str] = []  # a string value's characters, not yet restored
        at, end = 0, len(text)
        while at < end:
            if not self.in_string:
                found = _OUTSIDE.search(text, at)
                if found is None:
                    out.append(text[at:])
                    break
                out.append(text[at : found.end()])
                at = found.end()
                self._structure(found[0])
                continue
            found = _INSIDE.search(text, at)
            stop = end if found is None else found.start()
            (decoded if self.value else out).append(text[at:stop])
            at = stop
            if found is None:
                break
            if found[0] == '"':
                self._release(decoded, out)
                if self.value:
                    out.append(_encoded(self.held.flush()))
                out.append('"')
                self.in_string = False
                at += 1
                continue
            unit = _unit(text, at)
            if unit is None:
                self.raw = text[at:]
                break
            raw, char = unit
            at += len(raw)
            if not self.value:
                out.append(raw)
            elif char is not None:
                decoded.append(char)
            else:  # passes as written: nothing held may be restored across it
                self._release(decoded, out)
                out.append(_encoded(self.held.flush()))
                out.append(raw)
        self._release(decoded, out)
        return "".join(out)

    def _release(self, decoded: list[str], out: list[str]) -> None:
        if decoded:
            out.append(_encoded(self.held.feed("".join(decoded))))
            decoded.clear()

    def _structure(self, char: str) -> None:
        """Where the next string stands, after ``char`` outside any string."""
        if char == '"':
            self.in_string = True
            self.value = not (self.key_next and self.nesting[-1:] == ["{"])
        elif char in "{[":
            self.nesting.append(char)
            self.key_next = char == "{"
        elif char in "}]":
            if self.nesting:
                self.nesting.pop()
        elif char == ",":
            self.key_next = self.nesting[-1:] == ["{"]
        else:  # ":"
            self.key_next = False

    def finish(self) -> str:
        """What is still held: the answer ended inside a string (the arguments are not
        JSON; the kernel reports them)."""
        rest, self.raw = _encoded(self.held.flush()) + self.raw, ""
        return rest


class _StreamRestorer:
    """Shows the caller real values in place of placeholders as the answer streams: the
    text (``_Held``) and each tool call's arguments (``_Arguments``) leave in the chunk
    they came in, less a tail that may still become a placeholder of the table."""

    def __init__(self, restorer: Restorer) -> None:
        self.restorer = restorer
        self.known = sorted(restorer.values)  # the placeholders, for a prefix search
        self.text = _Held(restorer, self.known)
        self.calls: dict[int, _Arguments] = {}
        self.id: str | None = None

    def feed(self, chunk: AIMessageChunk) -> Iterator[AIMessageChunk]:
        self.id = self.id or chunk.id
        parts = []
        for part in chunk.tool_call_chunks:
            call = self.calls.get(part.index)
            if call is None:
                call = self.calls[part.index] = _Arguments(_Held(self.restorer, self.known))
            args = call.feed(part.args)
            if args or part.id or part.name:
                parts.append(ToolCallChunk(part.index, part.id, part.name, args))
        text = self.text.feed(chunk.content)
        if chunk.blocks:  # a provider block ends the text before it: nothing held may follow
            text += self.text.flush()
        blocks = tuple(self._block(block) for block in chunk.blocks)
        if text or parts or blocks or chunk.usage is not None or chunk.response_metadata:
            yield attrs.evolve(chunk, content=text, tool_call_chunks=parts, blocks=blocks)

    def _block(self, block: dict[str, Any]) -> dict[str, Any]:
        """A finished text block (one with citations) repeats the streamed text: restored
        as that text is, so the assembled message keeps one copy of it."""
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return {**block, "text": self.restorer.text(block["text"])}
        return block

    def finish(self) -> Iterator[AIMessageChunk]:
        text = self.text.flush()
        if text:
            yield AIMessageChunk(text, id=self.id)
        for index, call in sorted(self.calls.items()):
            rest = call.finish()
            if rest:
                yield AIMessageChunk(tool_call_chunks=[ToolCallChunk(index, args=rest)], id=self.id)
