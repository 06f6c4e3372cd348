"""How much a backtracking matcher can work on one line for a ``grep_search`` pattern,
read from the pattern's parse: whether Python's ``re`` may run it with no time limit.

A backtracking matcher's worst case on a line of ``L`` characters comes from its
quantifiers. A variable quantifier over one character (``\\w+``, ``.*``, ``[ab]{2,}``)
tries up to ``L`` lengths; ``k`` of them in a row try ``L**k`` splits at each of the
``L`` places a search starts, so the line costs at most ``~L**(k + 1)`` steps.
Alternatives (``a|b``, ``x?``, ``\\d{1,3}``) multiply that by the ways they can be taken.
This is polynomial, and small on lines of code or prose. A quantifier over anything longer
than one character (``(a+)+``, ``(a|ab)*``, ``(\\w+\\s?)*``) or a backreference can take
exponentially many ways: such a pattern has no bound here and runs only under the
``regex`` package's timeout.

The parse is ``re``'s own (``re._parser``, the module ``re.compile`` calls); a Python
whose parser does not read as expected makes every pattern unbounded, never wrongly
bounded.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

__all__ = ["Work", "folds_beyond_ascii", "worst_work"]

_LIMIT = 10**9
"""Ways beyond which a pattern counts as unbounded (also keeps the arithmetic small)."""
_MAX_DEGREE = 6


@attrs.frozen
class Work:
    """A pattern's worst case on a line of ``L`` characters:
    ``ways * (L + 1) ** (degree + 1) * min(L + 1, items)`` steps: each place the search
    starts, each split of the line among the variable quantifiers, each way through the
    alternatives, and along one such path at most ``items`` steps or one a character."""

    ways: int
    degree: int
    items: int

    def on_line(self, length: int) -> int:
        """The most steps a search of a line ``length`` characters long can take."""
        spread = int((length + 1) ** (self.degree + 1))
        return self.ways * spread * min(length + 1, self.items)


class _Unbounded(Exception):
    """The pattern can backtrack exponentially, or holds what this reading does not know."""


def worst_work(pattern: str) -> Work | None:
    """The pattern's worst case (``Work``), or None when it has no polynomial bound.

    ``re`` must have compiled ``pattern`` already: its errors are ``re``'s to report.
    """
    try:
        from re import _constants as c  # type: ignore[attr-defined]
        from re import _parser  # type: ignore[attr-defined]

        ways, degree, items = _sequence(_parser.parse(pattern), c)
    except Exception:  # _Unbounded, or a parser of another shape: unknown, so unbounded
        return None
    return Work(ways, degree, items)


_SINGLE = ("LITERAL", "NOT_LITERAL", "ANY", "IN", "CATEGORY")
"""Items that match exactly one character."""
_EMPTY = ("AT",)
"""Items that match no character: anchors and word boundaries."""


def _sequence(items: Any, c: Any) -> tuple[int, int, int]:
    """Ways, degree and items of items matched one after another: ways multiply, degrees
    and items add."""
    ways, degree, count = 1, 0, 0
    for op, av in items:
        w, d, n = _item(op, av, c)
        ways, degree, count = ways * w, degree + d, count + n
        if ways > _LIMIT or degree > _MAX_DEGREE or count > _LIMIT:
            raise _Unbounded
    return ways, degree, count


def _item(op: Any, av: Any, c: Any) -> tuple[int, int, int]:
    name = str(op)
    if name == "AT" and str(av) == "AT_NON_BOUNDARY":
        # not a matter of backtracking: re (before Python 3.14) never finds \B in an empty
        # line, the regex package does, and the search must not change with the engine
        raise _Unbounded
    if name in _SINGLE or name in _EMPTY:
        return 1, 0, 1
    if name == "SUBPATTERN":  # (group, add_flags, del_flags, items)
        return _sequence(av[3], c)
    if name == "ATOMIC_GROUP":
        return _sequence(av, c)
    if name in ("ASSERT", "ASSERT_NOT"):  # (direction, items): tried at each place
        return _sequence(av[1], c)
    if name == "BRANCH":  # (None, [items, ...]): ways add, the worst degree counts
        parts = [_sequence(branch, c) for branch in av[1]]
        return (
            sum(w for w, _, _ in parts),
            max(d for _, d, _ in parts),
            max(n for _, _, n in parts),
        )
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, high, body = av
        if len(body) == 1 and str(body[0][0]) in _SINGLE:
            if high == c.MAXREPEAT:
                return 1, 1, 1
            return high - low + 1, 0, high
        if low == high:  # a fixed count of a longer item: that many in a row
            ways, degree, count = _sequence(body, c)
            if degree * low > _MAX_DEGREE or (ways > 1 and low * ways.bit_length() > 30):
                raise _Unbounded
            return ways**low, degree * low, count * low
        raise _Unbounded  # a variable count of a longer item: exponential ways
    raise _Unbounded  # a backreference (GROUPREF, GROUPREF_EXISTS) or anything unknown


def folds_beyond_ascii(pattern: str) -> bool:
    """Whether ``pattern`` may ignore case (``(?i)`` anywhere) and names a character beyond
    ASCII (``İ``, ``\\u017f``, a range reaching past ``\\x7f``): ``re`` and the ``regex``
    package fold such characters differently (``(?i)İ`` finds ``I`` for ``re`` only), even
    on an ASCII line. True when the parse cannot be read."""
    if not _MAY_IGNORE_CASE.search(pattern):
        return False
    try:
        from re import _parser  # type: ignore[attr-defined]

        return _beyond_ascii(_parser.parse(pattern))
    except Exception:
        return True


_MAY_IGNORE_CASE = re.compile(r"\(\?[a-zA-Z]*i")
"""The opening of inline flags holding ``i``; a pattern without one is case sensitive (the
tool compiles with no flags)."""


def _beyond_ascii(items: Any) -> bool:
    """Whether parsed items name a code point past ASCII; an item of an unknown shape
    counts as one."""
    for op, av in items:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL"):
            found = av > 0x7F
        elif name == "RANGE":
            found = av[1] > 0x7F
        elif name in ("ANY", "AT", "CATEGORY", "NEGATE", "GROUPREF"):
            found = False
        elif name == "IN" or name == "ATOMIC_GROUP":
            found = _beyond_ascii(av)
        elif name == "SUBPATTERN":
            found = _beyond_ascii(av[3])
        elif name in ("ASSERT", "ASSERT_NOT"):
            found = _beyond_ascii(av[1])
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            found = _beyond_ascii(av[2])
        elif name == "BRANCH":
            found = any(_beyond_ascii(branch) for branch in av[1])
        elif name == "GROUPREF_EXISTS":
            found = any(_beyond_ascii(branch) for branch in av[1:] if branch is not None)
        else:
            found = True
        if found:
            return True
    return False
