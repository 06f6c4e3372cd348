"""A streamed answer rewritten as it streams: redacted (``_StreamRedactor``) or shown with
real values in place of placeholders (``_StreamRestorer``). Both release the answer's text
and each tool call's argument fragments as soon as nothing still to come can change them:
the text through one held tail (``_Redacting``, ``_Held``), each call's JSON through
``_Arguments``, which hands its string values to a held tail of its own."""

from __future__ import annotations

import abc
import bisect
import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from plait.messages import AIMessageChunk, ToolCallChunk
from plait_pii._pseudonyms import Restorer
from plait_pii.middleware import BUILTIN_TYPES, _Counter

if TYPE_CHECKING:
    from plait_pii._detectors import Tail
    from plait_pii.middleware import PIIMiddleware

LOOKBACK = 128
"""Streamed text a detector pii does not know (a custom or installed one) holds back
(characters), so a match split across chunks is still found."""
CONTEXT = 32
"""Already-streamed text kept as left context (``version 1.2.3.4`` is not an IP)."""
HOLD = 1024
"""The most streamed text held back (characters): the longest run of characters that
may still be a value of a built-in type (a CJK sentence may be an address's local part),
and for another detector the longest run of printable ASCII without a space that reaches
past ``LOOKBACK``: an escaped or percent-encoded value is such a run, six characters per
letter (``ivan@\\u043f\\u043e...``), and must not be released in part before it can be
recognised whole."""


class _Redacting:
    """One streamed text redacted as it arrives: the answer's, or one tool call's string
    values one after another. What is released is what no detection can still change:
    a built-in type holds back the run of the last characters a value of the type may
    hold (``_detectors.Tail``: ``mail jane@exa`` holds ``jane@exa``, ``pay 4111 11``
    holds ``4111 11`` and the space before it), and a match found open across the cut
    (a URL's start is one already); another detector holds the last ``LOOKBACK``
    characters. At most ``HOLD`` characters are held."""

    def __init__(self, pii: PIIMiddleware) -> None:
        self.pii = pii
        self.tail: Tail | None = None
        if pii.detector is None and pii.pii_type in BUILTIN_TYPES:
            from plait_pii._detectors import tails

            self.tail = tails()[pii.pii_type]
        self.pending = ""
        self.context = ""
        self.run = 0  # where the run a value may still continue starts in ``pending``

    def feed(self, text: str) -> str:
        """``text`` after what is held, redacted, less a new tail to hold."""
        if self.tail is not None:
            cut = self._last_break(text)
            if cut is not None:
                self.run = len(self.pending) + cut
        self.pending += text
        return self._drain(final=False)

    def flush(self) -> str:
        """What is held, redacted: the text ended (the answer, a string value, the text
        before a provider block). What follows is read on its own, as the whole message's
        text blocks and string values are."""
        text = self._drain(final=True)
        self.context = ""
        self.run = 0
        return text

    def whole(self, text: str) -> str:
        """``text`` redacted at once (what is known to be whole)."""
        seen = _Counter()
        done = self.pii.text(text, seen)
        self.pii._check(seen, "model output")
        return done

    def _last_break(self, text: str) -> int | None:
        """Just past the last character of ``text`` no value of the type holds."""
        assert self.tail is not None
        backwards = text[::-1]
        found = self.tail.ascii_breaks.search(backwards)
        while found is not None and not self.tail.ends(found[0]):
            found = self.tail.ascii_breaks.search(backwards, found.end())
        return None if found is None else len(text) - found.start()

    def _drain(self, final: bool) -> str:
        window = self.context + self.pending
        offset = len(self.context)
        safe = len(window)
        if not final:
            floor = max(offset, safe - HOLD)
            if self.tail is None:
                safe = _unsplit(window, max(offset, safe - LOOKBACK), floor)
            else:
                safe = max(offset + self.run, floor)
            if safe == offset:  # all of it held: no need to look for matches yet
                return ""
        found = [m for m in self.pii.matches(window) if m.start >= offset]
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
        self.run = max(0, self.run - (safe - offset))
        return text


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


class _Values(Protocol):
    """What a tool call's string values go through, one after another, as they stream
    (``_Held``: placeholders restored; ``_Redacting``: values redacted)."""

    def feed(self, text: str) -> str:
        """More of the value's characters: what may be released of them, rewritten."""
        ...

    def flush(self) -> str:
        """The value ended: all that is held, rewritten."""
        ...


_SCALAR = re.compile(
    r"\s*(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|NaN|-?Infinity)?\s*"
)
"""What JSON (as ``json.loads`` reads it) may hold between two of its structural
characters outside a string: a number, a literal, or only spaces."""


class _Arguments:
    """One tool call's streamed JSON arguments, rewritten as they arrive. A string value is
    read (escapes undone, so ``\\u003cEMAIL_1\\u003e`` is the placeholder it spells),
    rewritten through ``values`` and written back as JSON string text; keys and everything
    outside strings pass as written (``map_strings`` keeps keys, numbers and literals
    too). Only what ``values`` holds, or an escape the fragment's end cuts, is held.
    What JSON does not allow (a bad escape, a raw control character) passes as written,
    so arguments the kernel cannot parse stay unparsable, and so does half a surrogate
    pair. The fragments add up to a text whose parse is the parse of the model's,
    rewritten.

    With ``loose``, what stands outside strings is held from its first character that is
    not a space up to the next structural character (``,`` ``:`` ``}`` ``]`` ...) or
    string: a number or a literal then passes as written, anything else (``{"to":
    jane@example.com}``, which the kernel reports) goes through ``loose``, as the whole
    text of arguments that are not JSON is redacted when they come whole."""

    def __init__(self, values: _Values, loose: Callable[[str], str] | None = None) -> None:
        self.values = values
        self.loose = loose
        self.slot = ""  # text outside strings since the last structural character, held
        self.raw = ""  # the start of an escape the next fragment may complete
        self.in_string = False
        self.value = False  # the open string is a value (a key is kept as written)
        self.nesting: list[str] = []  # the open objects ("{") and arrays ("[")
        self.key_next = False  # the next string in the open object is a key

    def feed(self, fragment: str) -> str:
        text, self.raw = self.raw + fragment, ""
        out: list[str] = []
        decoded: list[str] = []  # a string value's characters, not yet rewritten
        at, end = 0, len(text)
        while at < end:
            if not self.in_string:
                found = _OUTSIDE.search(text, at)
                stop = end if found is None else found.start()
                self._outside(text[at:stop], found is not None, out)
                if found is None:
                    break
                out.append(found[0])
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
                    out.append(_encoded(self.values.flush()))
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
            else:  # passes as written: nothing held may be rewritten across it
                self._release(decoded, out)
                out.append(_encoded(self.values.flush()))
                out.append(raw)
        self._release(decoded, out)
        return "".join(out)

    def _outside(self, text: str, ended: bool, out: list[str]) -> None:
        """``text`` outside strings, up to a structural character when ``ended``."""
        if self.loose is None:
            out.append(text)
            return
        slot = self.slot + text
        if ended:
            self.slot = ""
            out.append(self._scalar(slot))
            return
        held = len(slot) - len(slot.lstrip())  # spaces are never part of a value
        out.append(slot[:held])
        self.slot = slot[held:]

    def _scalar(self, slot: str) -> str:
        if self.loose is None or _SCALAR.fullmatch(slot):
            return slot
        return self.loose(slot)

    def _release(self, decoded: list[str], out: list[str]) -> None:
        if decoded:
            out.append(_encoded(self.values.feed("".join(decoded))))
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
        """What is still held: the answer ended inside a string or a value outside one
        (the arguments are not JSON, unless they are a lone number; the kernel reports
        them)."""
        rest = self._scalar(self.slot) + _encoded(self.values.flush()) + self.raw
        self.slot = self.raw = ""
        return rest


class _StreamRewriter(abc.ABC):
    """Rewrites one streamed answer: the text through ``text``, each tool call's
    arguments (by index) through an ``_Arguments`` of its own, each leaving in the chunk
    it came in, less what is held; what is held leaves when the answer ends."""

    def __init__(self, text: _Values) -> None:
        self.text = text
        self.calls: dict[int, _Arguments] = {}
        self.id: str | None = None

    @abc.abstractmethod
    def _arguments(self) -> _Arguments:
        """The rewriter of one more tool call's streamed arguments."""

    @abc.abstractmethod
    def _block(self, block: dict[str, Any]) -> dict[str, Any]:
        """A finished text block (one with citations) repeats the streamed text: rewritten
        as that text is, so the assembled message keeps one copy of it."""

    def feed(self, chunk: AIMessageChunk) -> Iterator[AIMessageChunk]:
        self.id = self.id or chunk.id
        parts = []
        for part in chunk.tool_call_chunks:
            call = self.calls.get(part.index)
            if call is None:
                call = self.calls[part.index] = self._arguments()
            args = call.feed(part.args)
            if args or part.id or part.name:
                parts.append(ToolCallChunk(part.index, part.id, part.name, args))
        text = self.text.feed(chunk.content) if chunk.content else ""
        if chunk.blocks:  # a provider block ends the text before it: nothing held may follow
            text += self.text.flush()
        blocks = tuple(self._block(block) for block in chunk.blocks)
        if text or parts or blocks or chunk.usage is not None or chunk.response_metadata:
            yield attrs.evolve(chunk, content=text, tool_call_chunks=parts, blocks=blocks)

    def finish(self) -> Iterator[AIMessageChunk]:
        text = self.text.flush()
        if text:
            yield AIMessageChunk(text, id=self.id)
        for index, call in sorted(self.calls.items()):
            rest = call.finish()
            if rest:
                yield AIMessageChunk(tool_call_chunks=[ToolCallChunk(index, args=rest)], id=self.id)


class _StreamRedactor(_StreamRewriter):
    """Redacts (masks, hashes, blocks on) one streamed answer as it streams: the text and
    each string value of a call's arguments are released once no match can still reach
    into them (``_Redacting``); a provider block passes as it came, a finished text
    block (with citations) redacted as the streamed text it repeats."""

    def __init__(self, pii: PIIMiddleware) -> None:
        super().__init__(_Redacting(pii))
        self.pii = pii

    def _arguments(self) -> _Arguments:
        values = _Redacting(self.pii)
        return _Arguments(values, loose=values.whole)

    def _block(self, block: dict[str, Any]) -> dict[str, Any]:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            seen = _Counter()
            block = {**block, "text": self.pii.text(block["text"], seen)}
            self.pii._check(seen, "model output")
        return block


class _StreamRestorer(_StreamRewriter):
    """Shows the caller real values in place of placeholders as the answer streams: the
    text and each string value of a call's arguments less a tail that may still become
    a placeholder of the table (``_Held``)."""

    def __init__(self, restorer: Restorer) -> None:
        self.restorer = restorer
        self.known = sorted(restorer.values)  # the placeholders, for a prefix search
        super().__init__(_Held(restorer, self.known))

    def _arguments(self) -> _Arguments:
        return _Arguments(_Held(self.restorer, self.known))

    def _block(self, block: dict[str, Any]) -> dict[str, Any]:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return {**block, "text": self.restorer.text(block["text"])}
        return block
