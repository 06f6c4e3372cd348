"""The pseudonym table of the ``pseudonymize`` strategy: each distinct value of a type gets
a number for the thread (``<EMAIL_1>``), kept in the private state key ``pii_pseudonyms``
as ``{pii_type: {value: number}}``."""

from __future__ import annotations

import contextlib
import contextvars
import re
import threading
from collections.abc import Callable, Iterator, Mapping
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


class RunNumbers:
    """The numbers one run has handed out and not yet seen in its state: the calls of one
    tools step run together (in parallel, or one after another on the same snapshot of
    state), each numbering the values of its result, and none of their additions reaches
    the state before the step ends. Every numbering of the run reads and extends this, under
    one lock, so two results never get the same number for different values."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.lock = threading.Lock()
        self.added: dict[str, dict[str, int]] = {}

    def known(self, pii_type: str, table: Table) -> dict[str, int]:
        """The thread's table of ``pii_type`` with this run's additions."""
        return {**table, **self.added.get(pii_type, {})}

    def record(self, pii_type: str, added: Mapping[str, int]) -> None:
        if added:
            self.added.setdefault(pii_type, {}).update(added)


_run: contextvars.ContextVar[RunNumbers | None] = contextvars.ContextVar(
    "plait_pii_run", default=None
)


def run_numbers() -> RunNumbers:
    """The current run's numbers (a fresh, unshared set outside a run)."""
    current = _run.get()
    return current if current is not None else RunNumbers("")


@contextlib.contextmanager
def numbering(run_id: str) -> Iterator[None]:
    """One run's numbers, for the code inside (the run: its hooks and tool calls). Several
    pii instances of one run share them; a nested run (a sub-agent) has its own."""
    current = _run.get()
    if current is not None and current.run_id == run_id:
        yield
        return
    token = _run.set(RunNumbers(run_id))
    try:
        yield
    finally:
        _run.reset(token)


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
