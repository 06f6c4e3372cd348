"""The model's regular expression for ``grep_search``, run under a time limit.

Python's ``re`` cannot be stopped: a pattern such as ``(a+)+$`` on a long line of ``a``
ending in ``b`` backtracks for hours, holding the GIL and with it every thread of the
process (a server answering other users included). A prompt injection can ask for such a
pattern. So the pattern is checked and explained by ``re`` (the syntax the tool's
description promises, with ``re``'s error texts), then matched by the ``regex`` package in
its ``re``-compatible mode: it takes a ``timeout`` and, with ``concurrent``, releases the
GIL while it matches, so other threads run meanwhile.

The two read a pattern alike but for one thing: a POSIX class in a set, ``[[:digit:]]``,
means what it means to grep (``re`` reads a set of ``:``, ``d``, ``i``, ... then ``]``),
and an unknown one (``[[:nope:]]``) is an invalid pattern. ``re`` warns about sets a
future Python may read otherwise (``FutureWarning: Possible nested set`` for ``[[``,
``Possible set intersection`` for ``[a&&b]``): the pattern is the model's, not the
program's, so the check keeps those warnings out of the process's output.
"""

from __future__ import annotations

import re
import threading
import time
import warnings
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


_QUIET = threading.Lock()
"""Held while ``re``'s warnings are off: ``warnings.catch_warnings`` swaps the process's
filters, and two searches swapping them at once could leave them off for good."""


class SearchPattern:
    """One ``grep_search`` pattern and the time every line it searches may take together."""

    def __init__(self, pattern: str, seconds: float) -> None:
        try:
            with _QUIET, warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                re.compile(pattern)
        except re.error as problem:
            raise _invalid(pattern, problem) from None
        import regex  # here: its 7 ms import is paid by the first search, not every agent

        try:
            self._regex: regex.Pattern[str] = regex.compile(pattern)
        except regex.error as problem:  # an unknown POSIX class: re took it as a set
            raise _invalid(pattern, problem) from None
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


def _invalid(pattern: str, problem: Exception) -> BackendError:
    """The tool's answer to a pattern ``re`` or ``regex`` refuses, with its reason."""
    return BackendError(f"Error: invalid regular expression {pattern!r}: {problem}")
