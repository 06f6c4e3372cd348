"""The model's regular expression for ``grep_search``, run under a time limit.

Python's ``re`` cannot be stopped: a pattern such as ``(a+)+$`` on a long line of ``a``
ending in ``b`` backtracks for hours, holding the GIL and with it every thread of the
process (a server answering other users included). A prompt injection can ask for such a
pattern. So the pattern is checked and explained by ``re`` (the syntax the tool's
description promises, with ``re``'s error texts), then matched by the ``regex`` package in
its ``re``-compatible mode: it takes a ``timeout`` and, with ``concurrent``, releases the
GIL while it matches, so other threads run meanwhile.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from plait.backends import BackendError

if TYPE_CHECKING:
    import regex

__all__ = ["PatternTimeout", "SearchPattern"]


class PatternTimeout(Exception):
    """The search ran out of its time: raised from ``SearchPattern.matching_lines``."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class SearchPattern:
    """One ``grep_search`` pattern and the time every line it searches may take together."""

    def __init__(self, pattern: str, seconds: float) -> None:
        try:
            re.compile(pattern)
        except re.error as problem:
            raise BackendError(
                f"Error: invalid regular expression {pattern!r}: {problem}"
            ) from None
        import regex  # here: its 7 ms import is paid by the first search, not every agent

        self._regex: regex.Pattern[str] = regex.compile(pattern)
        self._left = seconds  # the matching's time, not the reading of files

    def matching_lines(self, lines: Iterable[str]) -> list[tuple[int, str]]:
        """``(number from 1, line)`` of the lines the pattern is found in; ``PatternTimeout``
        naming the line it was stopped on once the search's time is spent."""
        search, clock = self._regex.search, time.monotonic
        start = clock()
        deadline = start + self._left
        found = []
        try:
            for number, line in enumerate(lines, 1):
                # regex reads a negative timeout as none at all: 0 stops at once
                left = max(deadline - clock(), 0.0)
                try:
                    if search(line, concurrent=True, timeout=left):
                        found.append((number, line))
                except TimeoutError:
                    raise PatternTimeout(number) from None
        finally:
            self._left -= clock() - start
        return found
