"""The decoded view of a text: what a model reads in it once JSON ``\\u`` escapes and URL
percent-encoding are undone. A tool that returns ``json.dumps(record)`` writes
``ivan@\\u043f\\u043e\\u0447\\u0442\\u0430.\\u0440\\u0444``, a link carries
``jane%40example.com``: no detector finds an address there, and every model reads one.
Detectors also run on this view; what they find is mapped back to the encoded text it
came from, which is the text that gets replaced.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

import attrs

from plait.lazy import frozen
from plait_pii._detectors import PIIMatch, merge

__all__ = ["Decoded", "decode", "scan"]

_ENCODED = re.compile(r"(?:\\u[0-9a-fA-F]{4})+|(?:%[0-9a-fA-F]{2})+")


@frozen
class Decoded:
    """``text`` decoded, and where each decoded character came from, in segments: the
    ``counts[i]`` characters from ``views[i]`` on were written as escapes of ``widths[i]``
    characters each, from ``origins[i]`` on (a run of escapes of one width is one
    segment). Characters outside the segments were not encoded: they map one to one."""

    text: str
    views: list[int]
    counts: list[int]
    origins: list[int]
    widths: list[int]

    def start(self, index: int) -> int:
        """Where the decoded character at ``index`` starts in the original text."""
        at = bisect.bisect_right(self.views, index) - 1
        if at < 0:
            return index
        inside = index - self.views[at]
        if inside < self.counts[at]:
            return self.origins[at] + inside * self.widths[at]
        segment_end = self.origins[at] + self.counts[at] * self.widths[at]
        return segment_end + inside - self.counts[at]

    def end(self, index: int) -> int:
        """Where the decoded text ending (exclusive) at ``index`` ends in the original."""
        last = index - 1
        at = bisect.bisect_right(self.views, last) - 1
        if at >= 0 and last - self.views[at] < self.counts[at]:
            return self.origins[at] + (last - self.views[at] + 1) * self.widths[at]
        return self.start(last) + 1


def decode(text: str) -> Decoded | None:
    """The decoded view of ``text``, or ``None`` when nothing in it is encoded. Escapes
    that do not decode (a lone surrogate, bytes that are not UTF-8) stay as written. A
    run of escapes that are one character each (``\\u`` outside the surrogates, ``%``
    below 0x80) is decoded at once; others escape by escape."""
    if "\\u" not in text and "%" not in text:
        return None
    parts: list[str] = []
    decoded = Decoded("", [], [], [], [])
    length = 0  # of the decoded text so far
    position = 0
    for run in _ENCODED.finditer(text):
        parts.append(text[position : run.start()])
        length += run.start() - position
        escaped = run.group()
        step = 6 if escaped.startswith("\\u") else 3
        whole = _whole(escaped, step)
        if whole is not None:
            parts.append(whole)
            _segment(decoded, length, len(whole), run.start(), step)
            length += len(whole)
        else:
            for char, start, end in _units(text, run.start(), run.end(), step):
                parts.append(char)
                if end - start != 1:
                    _segment(decoded, length, 1, start, end - start)
                length += 1
        position = run.end()
    if not decoded.views:
        return None
    parts.append(text[position:])
    return attrs.evolve(decoded, text="".join(parts))


def _whole(escaped: str, step: int) -> str | None:
    """A run of escapes decoded at once, when each stands for one character."""
    digits = escaped.replace("\\u" if step == 6 else "%", "")
    try:
        raw = bytes.fromhex(digits)
        text = raw.decode("utf-16-be" if step == 6 else "ascii")
    except UnicodeDecodeError:
        return None
    return text if len(text) * step == len(escaped) else None


def _segment(decoded: Decoded, view: int, count: int, origin: int, width: int) -> None:
    decoded.views.append(view)
    decoded.counts.append(count)
    decoded.origins.append(origin)
    decoded.widths.append(width)


def _units(text: str, start: int, end: int, step: int) -> list[tuple[str, int, int]]:
    """The characters a run of escapes of one kind stands for, each with the span of
    ``text`` it came from; what does not decode is kept character by character."""
    skip = 2 if step == 6 else 1  # the "\\u" or the "%" before the hex digits
    values = [int(text[i + skip : i + step], 16) for i in range(start, end, step)]
    out: list[tuple[str, int, int]] = []
    index = 0
    while index < len(values):
        at = start + index * step
        width, char = (_utf16 if step == 6 else _utf8)(values, index)
        if char is None:
            out.extend((c, at + k, at + k + 1) for k, c in enumerate(text[at : at + step]))
            index += 1
            continue
        out.append((char, at, at + width * step))
        index += width
    return out


def _utf16(units: list[int], index: int) -> tuple[int, str | None]:
    unit = units[index]
    if 0xD800 <= unit < 0xDC00:
        if index + 1 < len(units) and 0xDC00 <= units[index + 1] < 0xE000:
            low = units[index + 1]
            return 2, chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
        return 1, None
    if 0xDC00 <= unit < 0xE000:
        return 1, None
    return 1, chr(unit)


def _utf8(octets: list[int], index: int) -> tuple[int, str | None]:
    lead = octets[index]
    if lead < 0x80:
        width = 1
    elif 0xC0 <= lead < 0xE0:
        width = 2
    elif 0xE0 <= lead < 0xF0:
        width = 3
    elif 0xF0 <= lead < 0xF8:
        width = 4
    else:  # a continuation byte, or no UTF-8 lead at all
        return 1, None
    try:
        char = bytes(octets[index : index + width]).decode("utf-8")
    except UnicodeDecodeError:
        return 1, None
    return width, char


def scan(find: Callable[[str], Sequence[PIIMatch]], text: str) -> list[PIIMatch]:
    """What ``find`` reports in ``text`` and in its decoded view, sorted and without
    overlaps. A match's ``start``/``end`` are always in ``text``; its ``text`` is the
    value: as written, or decoded when it was found only once decoded (so one address
    written plainly and escaped is one value)."""
    found = merge(find(text), text)
    view = decode(text)
    if view is None:
        return found
    mapped = [
        PIIMatch(m.text, view.start(m.start), view.end(m.end))
        for m in merge(find(view.text), view.text)
    ]
    if not mapped:
        return found
    return _united(found, mapped, text)


def _united(found: list[PIIMatch], mapped: list[PIIMatch], text: str) -> list[PIIMatch]:
    """Matches of both views, overlapping ones united. A union keeps the value of the
    match that covers it whole (the one as written first), else the text it covers."""
    ordered = sorted(
        [(m, 0) for m in found] + [(m, 1) for m in mapped],
        key=lambda item: (item[0].start, -item[0].end, item[1]),
    )
    groups: list[list[PIIMatch]] = []
    end = -1
    for match, _view in ordered:
        if groups and match.start < end:
            groups[-1].append(match)
            end = max(end, match.end)
        else:
            groups.append([match])
            end = match.end
    united: list[PIIMatch] = []
    for group in groups:
        start, stop = group[0].start, max(m.end for m in group)
        whole = next((m for m in group if m.start == start and m.end == stop), None)
        united.append(PIIMatch(whole.text if whole else text[start:stop], start, stop))
    return united
