"""Numbered-lines rendering shared by every tool that shows file contents."""

from __future__ import annotations

import re
from collections.abc import Iterator

from plait._convert import expected
from plait.backends.protocol import BackendError

__all__ = ["MAX_LINE_LENGTH", "format_lines", "line_window", "text_lines", "text_size"]

MAX_LINE_LENGTH = 2000
"""The longest line ``format_lines`` and ``line_window`` show whole by default: a longer one
is cut there and marked ``... [line truncated: N more characters]``."""
_CHUNK = 1 << 20
_SLICE = 1 << 16
_LINE_END = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""Every line boundary ``str.splitlines`` knows."""


def text_lines(text: str) -> Iterator[str]:
    """``text.splitlines()`` one line at a time: a long text is not copied into a list
    (paging 10 lines of a 200 MB file held in memory costs those lines)."""
    if len(text) <= _CHUNK:
        yield from text.splitlines()
        return
    start = 0
    for end in _LINE_END.finditer(text):
        yield text[start : end.start()]
        start = end.end()
    if start < len(text):
        yield text[start:]


def text_size(text: str) -> int:
    """The size of ``text`` in UTF-8 bytes (a lone surrogate counted as 3), measured a
    slice at a time so a huge text is not encoded whole to be measured."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[i : i + _SLICE].encode("utf-8", "surrogatepass"))
        for i in range(0, len(text), _SLICE)
    )


def format_lines(
    text: str,
    offset: int = 0,
    limit: int = 2000,
    *,
    path: str = "the file",
    max_line_length: int = MAX_LINE_LENGTH,
) -> str:
    """``limit`` lines of ``text`` from 0-based line ``offset``, each prefixed with its
    1-based number and a tab (``cat -n`` style). A line longer than ``max_line_length``
    is cut and marked so the model knows it saw part of it. An offset past the end is a
    ``BackendError`` saying how many lines there are."""
    return line_window(text_lines(text), offset, limit, path=path, max_line_length=max_line_length)


def line_window(
    lines: Iterator[str],
    offset: int = 0,
    limit: int = 2000,
    *,
    path: str = "the file",
    max_line_length: int = MAX_LINE_LENGTH,
) -> str:
    """``format_lines`` over lines read one at a time: only the lines shown are kept
    (the rest are counted), so a file of any size is paged in bounded memory."""
    if offset < 0:
        raise BackendError(f"Error: offset: {expected('an int >= 0', offset)}")
    if limit < 1:
        raise BackendError(f"Error: limit: {expected('an int >= 1', limit)}")
    shown = []
    total = 0
    for total, line in enumerate(lines, 1):
        number = total
        if number <= offset or number > offset + limit:
            continue
        if len(line) > max_line_length:
            cut = len(line) - max_line_length
            line = f"{line[:max_line_length]}... [line truncated: {cut} more characters]"
        shown.append(f"{number:6}\t{line}")
    if not total:
        return f"(the file {path} is empty)"
    if offset >= total:
        raise BackendError(
            f"Error: offset {offset} is past the end of {path}, which has "
            f"{total} line{'' if total == 1 else 's'} (offsets start at 0)"
        )
    rest = total - (offset + limit)
    if rest > 0:
        shown.append(
            f"... [{rest} more line{'' if rest == 1 else 's'}: read with offset={offset + limit}]"
        )
    return "\n".join(shown)
