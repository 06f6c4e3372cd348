"""The model's regular expression for ``grep_search``, run under a time limit.

Python's ``re`` cannot be stopped: a pattern such as ``(a+)+$`` on a long line of ``a``
ending in ``b`` backtracks for hours, holding the GIL and with it every thread of the
process (a server answering other users included). A prompt injection can ask for such a
pattern. So the pattern is checked and explained by ``re`` (the syntax the tool's
description promises, with ``re``'s error texts), then matched by one of two engines:

- ``re`` itself, when the pattern's backtracking is bounded by a polynomial in the line's
  length (``_backtrack``: no quantified group, no backreference) and the line is short
  enough for that bound to be small; the clock is read between batches of lines. This is
  the common case (``def \\w+\\(``, ``^import``, ``error|warning``) and ~4x cheaper: most
  of the cost of the other engine is its timeout machinery, paid on every line.
- the ``regex`` package in its ``re``-compatible mode, for every other pattern or line:
  it takes a ``timeout`` and, with ``concurrent``, releases the GIL while it matches, so
  other threads run meanwhile.

Both must find the same lines, so ``re`` only gets what they read alike (a property
test, ``test_grep_engines``, generates patterns and lines to check it): lines of ASCII
but ``\\x1c``-``\\x1f``; no pattern ignoring case that names a character past ASCII,
none with ``\\B``, none with a ``{`` regex reads as fuzzy matching. And none ``re``
warns about: a POSIX class in a set, ``[[:digit:]]``, means what it means to grep (``re``
reads a set of ``:``, ``d``, ``i``, ... then ``]``), and an unknown one (``[[:nope:]]``)
is an invalid pattern. ``re`` warns about sets a future Python may read otherwise
(``FutureWarning: Possible nested set`` for ``[[``, ``Possible set intersection`` for
``[a&&b]``): the pattern is the model's, not the program's, so the check keeps those
warnings out of the process's output.
"""

from __future__ import annotations

import re
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING

from plait.backends import BackendError
from plait_anthropic._backtrack import Work, folds_beyond_ascii, worst_work

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


_BUDGET = 10_000_000
"""The most steps (``_backtrack.Work``, an upper bound) ``re`` may take between two looks
at the clock: the slowest patterns measured (a quantifier before a long fixed tail, on a
line that almost matches) run ~2.5e8 of them a second, so under 0.05 s, and a search
matched by ``re`` overruns its time by no more."""
_BATCH = 4096
"""Lines measured together: the longest of them sets how many run between two looks."""
_FUZZY = re.compile(r"(?<!\\)(?:\\\\)*\{(?![\d,]*\})")
"""An unescaped ``{`` that does not close a count: ``re`` reads it as a ``{``, the ``regex``
package as a fuzzy-matching constraint (``a{e<=1}``) or an error."""


def _alike(text: str) -> bool:
    """Whether ``re`` and the ``regex`` package read every character of ``text`` alike:
    beyond ASCII their Unicode tables part (regex's ``\\w`` takes combining marks, its
    Unicode version is newer, its case folding fuller); in ASCII, ``re`` reads ``\\x1c`` to
    ``\\x1f`` as ``\\s``. A line failing this is matched by regex, so a search finds what
    it found before ``re`` was used. (Two scans in C: faster than one pattern search.)"""
    return text.isascii() and not any(c in text for c in _UNALIKE_ASCII)


_UNALIKE_ASCII = "\x1c\x1d\x1e\x1f"


class SearchPattern:
    """One ``grep_search`` pattern and the time every line it searches may take together.

    A pattern whose worst case on a line is polynomial (``_backtrack``), read alike by both
    engines, is matched by ``re`` (several times faster than the ``regex`` package with a
    timeout, most of whose cost is the timeout itself) a batch of lines at a time, with the
    clock read between batches small enough to end well within ``_BUDGET``; a line too long
    for that, and every line of any other pattern, is matched by ``regex`` with a timeout.
    """

    def __init__(self, pattern: str, seconds: float) -> None:
        try:
            with _QUIET, warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                self._re = re.compile(pattern)
                work = worst_work(pattern)  # parses afresh, so warns even when re cached it
        except re.error as problem:
            raise _invalid(pattern, problem) from None
        self._pattern = pattern
        # re warns of a set ([[, &&, --) the regex package may read otherwise: [[:digit:]]
        unalike = warned or _FUZZY.search(pattern) or folds_beyond_ascii(pattern)
        self.work = None if unalike else work
        """The worst case ``re`` is trusted with, or None: every line is matched by regex."""
        self._regex: regex.Pattern[str] | None = None
        if self.work is None:
            self._regex = self._bounded_pattern()  # its errors are the pattern's, now
        self._left = seconds  # the matching's time, not the reading of files

    def _bounded_pattern(self) -> regex.Pattern[str]:
        if self._regex is None:
            import regex  # here: its 7 ms import is paid by the first search that needs it

            try:
                self._regex = regex.compile(self._pattern)
            # an unknown POSIX class (re took it as a set); or the package's own failure
            # on a pattern it should take ((?i)[^\w\W]): an answer, not a crashed tool
            except (regex.error, AttributeError) as problem:
                raise _invalid(self._pattern, problem) from None
        return self._regex

    def matching_lines(self, lines: Iterable[str]) -> list[tuple[int, str]]:
        """``(number from 1, line)`` of the lines the pattern is found in; ``PatternTimeout``
        naming the line it was stopped on once the search's time is spent."""
        clock = time.monotonic
        start = clock()
        try:
            if self.work is None:
                return self._bounded(enumerate(lines, 1), start + self._left)
            return self._batched(iter(lines), self.work, start + self._left)
        finally:
            self._left -= clock() - start

    def _batched(self, lines: Iterator[str], work: Work, deadline: float) -> list[tuple[int, str]]:
        search, clock = self._re.search, time.monotonic
        found: list[tuple[int, str]] = []
        first = 1
        while batch := list(islice(lines, _BATCH)):
            joined = "".join(batch)
            whole = work.ways * (len(joined) + len(batch)) * work.items
            if work.degree == 0 and whole <= _BUDGET:
                step = len(batch)  # the whole batch's worst case, with no line measured
            else:
                step = _BUDGET // work.on_line(max(map(len, batch)))
            if not step:  # a line too long to trust re with
                found += self._bounded(enumerate(batch, first), deadline)
            elif not _alike(joined):  # some lines only regex may match
                found += self._bounded(enumerate(batch, first), deadline, plain=True)
            else:
                for at in range(0, len(batch), step):
                    if clock() > deadline:
                        raise PatternTimeout(first + at)
                    part = batch[at : at + step] if step < len(batch) else batch
                    found += [(n, line) for n, line in enumerate(part, first + at) if search(line)]
            first += len(batch)
        return found

    def _bounded(
        self, numbered: Iterable[tuple[int, str]], deadline: float, plain: bool = False
    ) -> list[tuple[int, str]]:
        """Lines matched by regex with a timeout; with ``plain``, those ``re`` reads alike
        (one at a time, short enough for ``_BUDGET``) by ``re``."""
        search, clock = self._bounded_pattern().search, time.monotonic
        found = []
        for number, line in numbered:
            if plain and _alike(line):
                if clock() > deadline:
                    raise PatternTimeout(number)
                if self._re.search(line):
                    found.append((number, line))
                continue
            # regex reads a negative timeout as none at all: 0 stops at once
            left = max(deadline - clock(), 0.0)
            try:
                if search(line, concurrent=True, timeout=left):
                    found.append((number, line))
            except TimeoutError:
                raise PatternTimeout(number) from None
        return found


def _invalid(pattern: str, problem: Exception) -> BackendError:
    """The tool's answer to a pattern ``re`` or ``regex`` refuses, with its reason."""
    return BackendError(f"Error: invalid regular expression {pattern!r}: {problem}")
