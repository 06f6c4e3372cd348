"""The pseudonym table of the ``pseudonymize`` strategy: each distinct value of a type gets
a number for the thread (``<EMAIL_1>``), kept in the private state key ``pii_pseudonyms``
as ``{pii_type: {value: number}}``."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from plait_pii._walk import map_strings

KEY = "pii_pseudonyms"
Table = Mapping[str, int]


class Pseudonyms(dict[str, dict[str, int]]):
    """The table, or an addition to it, whose ``repr`` shows counts, never values (hook
    results are logged by ``PLAIT_TRACE``)."""

    def __repr__(self) -> str:
        counts = ", ".join(f"{kind}: {len(values)}" for kind, values in self.items())
        return f"<pii pseudonyms {counts}>"


def merge(
    old: Mapping[str, Mapping[str, int]] | None, new: Mapping[str, Mapping[str, int]]
) -> Pseudonyms:
    """The state key's reducer: additions of several hooks (or instances) are united."""
    merged = Pseudonyms({kind: dict(values) for kind, values in (old or {}).items()})
    for kind, values in new.items():
        merged.setdefault(kind, {}).update(values)
    return merged


def placeholder(pii_type: str, number: int) -> str:
    return f"<{pii_type.upper()}_{number}>"


class Assigner:
    """Rewrites text of one type with placeholders: values already in ``table`` get theirs,
    new ones (when ``new_allowed``) the next numbers, collected in ``added``."""

    def __init__(
        self,
        pii_type: str,
        table: Table,
        find: Callable[[str], list[Any]],
        new_allowed: bool,
    ) -> None:
        self.pii_type = pii_type
        self.table = table
        self.find = find
        self.new_allowed = new_allowed
        self.added: dict[str, int] = {}
        self.known = (
            re.compile("|".join(re.escape(v) for v in sorted(table, key=len, reverse=True)))
            if table
            else None
        )

    def number(self, value: str) -> int | None:
        found = self.table.get(value) or self.added.get(value)
        if found is None and self.new_allowed:
            found = len(self.table) + len(self.added) + 1
            self.added[value] = found
        return found

    def text(self, text: str) -> str:
        parts: list[str] = []
        position = 0
        for match in self.find(text):
            number = self.number(match.text)
            if number is None:
                continue
            parts.append(text[position : match.start])
            parts.append(placeholder(self.pii_type, number))
            position = match.end
        parts.append(text[position:])
        result = "".join(parts)
        if self.known is not None:  # values the detector may not see where they now stand
            result = self.known.sub(lambda m: placeholder(self.pii_type, self.table[m[0]]), result)
        return result

    def value(self, value: Any) -> Any:
        """A JSON value with every string leaf rewritten; keys and shape stay."""
        return map_strings(value, self.text)


class Restorer:
    """Puts the real values back in place of one type's placeholders."""

    def __init__(self, pii_type: str, table: Table) -> None:
        self.values = {placeholder(pii_type, n): value for value, n in table.items()}
        self.pattern = re.compile(rf"<{re.escape(pii_type.upper())}_\d+>")

    def text(self, text: str) -> str:
        if not self.values or "<" not in text:
            return text
        return self.pattern.sub(lambda m: self.values.get(m[0], m[0]), text)

    def value(self, value: Any) -> Any:
        """A JSON value with every placeholder in its string leaves restored."""
        return map_strings(value, self.text)
