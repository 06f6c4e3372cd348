"""Glob patterns matched without backtracking without end.

A pattern comes from the model (``glob``, ``grep``'s ``glob``, ``glob_search``, an
``include``). Made into one regular expression, ``**/`` twelve times on a path thirty
directories deep, or ``*a`` eight times then ``b`` on a long name, backtracks for hours
and holds the GIL meanwhile. So a pattern is cut at ``/`` into components: a ``**``
component spans any number of directories, matched by taking each run of other
components at its first place (a ``**`` after it can take what was skipped, so the first
place is never worse); any other component is matched against one name by ``fnmatch``,
whose expressions commit to each ``*`` (atomic groups) and so never backtrack without
end either.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Sequence

__all__ = ["glob_matcher"]

_GLOBSTAR = "**"

Component = Callable[[str], "re.Match[str] | None"]


def _component(pattern: str) -> Component:
    """One name's matcher: ``*`` and ``?`` as in ``fnmatch`` (a name holds no ``/``), a
    ``[...]`` class with ``!`` for negation; ``**`` inside a name is ``*``."""
    return re.compile(fnmatch.translate(pattern)).match


def _matches_at(parts: Sequence[str], start: int, run: Sequence[Component]) -> bool:
    for match in run:
        if match(parts[start]) is None:
            return False
        start += 1
    return True


def _match(runs: list[list[Component]], open_end: bool, subject: str) -> bool:
    """Whether ``subject``'s components are ``runs[0]``, then each middle run somewhere
    further (at its first place), then the last run at the end; ``**`` between runs takes
    any number of components, a trailing one (``open_end``) at least one."""
    parts = subject.split("/")
    first, last = runs[0], runs[-1]
    if len(runs) == 1:  # no **: one component for one component
        return len(parts) == len(first) and _matches_at(parts, 0, first)
    end = len(parts) - len(last) - (1 if open_end else 0)  # where the last run may start
    if len(first) > end or not _matches_at(parts, 0, first):
        return False
    at = len(first)
    for run in runs[1:-1]:
        while at + len(run) <= end and not _matches_at(parts, at, run):
            at += 1
        if at + len(run) > end:
            return False
        at += len(run)
    return at <= end and _matches_at(parts, len(parts) - len(last), last)


def _anything(subject: str) -> bool:
    return True


@functools.lru_cache(maxsize=256)
def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a path (absolute, or relative to the searched directory) matches
    ``pattern``: ``*`` and ``?`` within one name, ``[...]`` a class of characters, a
    ``**`` component any number of directories (``**/*.py``, ``src/**``)."""
    components = pattern.split("/")
    runs: list[list[Component]] = [[]]
    for component in components:
        if component == _GLOBSTAR:
            if runs[-1] or len(runs) == 1:  # '**/**' is '**'
                runs.append([])
            continue
        runs[-1].append(_component(component))
    # a pattern ending in '**' (not '**' alone) needs a component there: 'src/**' is what
    # is inside src, not src itself
    open_end = components[-1] == _GLOBSTAR and any(c != _GLOBSTAR for c in components)
    if runs == [[], []]:  # '**': every path
        return _anything
    return functools.partial(_match, runs, open_end)
