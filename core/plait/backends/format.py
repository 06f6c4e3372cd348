"""Numbered-lines rendering shared by every tool that shows file contents."""

from __future__ import annotations

from collections.abc import Iterator

from plait.backends.protocol import BackendError

__all__ = ["MAX_LINE_LENGTH", "format_lines", "line_window"]

MAX_LINE_LENGTH = 2000


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
    return line_window(
        iter(text.splitlines()), offset, limit, path=path, max_line_length=max_line_length
    )


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
        raise BackendError(f"Error: offset must be 0 or more, got {offset}")
    if limit < 1:
        raise BackendError(f"Error: limit must be 1 or more, got {limit}")
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
