"""Thread history: every step a checkpointer saved, kept as an undo record.

A checkpointer keeps each thread's latest state whole (so loading it stays one read) and,
beside it, one *undo record* per step: what the step replaced, so the state before it can
be rebuilt. A step that only appends messages — nearly every step — records just the new
ids and the old text of the state keys it wrote, so history costs little next to the
messages themselves. ``rewind`` applies undo records newest first to reach any kept step.

A fork is a parent pointer: the new thread's steps up to the fork point are its parent's
records, read through the pointer, never copied. Its own state is written the first time
it is saved to (copy on write).

``plait.checkpoint.History`` is the protocol. The three built-in checkpointers (memory,
SQLite, PostgreSQL) share these functions, so they agree on what a step's record holds
and on the state it rebuilds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from plait._convert import expected
from plait.errors import MalformedURLError, PlaitError
from plait.lazy import frozen


class _Delta(Protocol):
    """What ``undo_record`` reads of a ``plait.checkpoint.StepDelta``."""

    @property
    def reset(self) -> bool: ...
    @property
    def removed(self) -> tuple[str, ...]: ...
    @property
    def upserts(self) -> tuple[Any, ...]: ...
    @property
    def values(self) -> Mapping[str, Any]: ...


__all__ = [
    "KEEP_STEPS",
    "HistoryError",
    "Rows",
    "StepInfo",
    "check_keep_steps",
    "keep_steps_option",
    "missing_step",
    "prune_cutoff",
    "rewind",
    "undo_record",
]

KEEP_STEPS = 1000
"""The steps of a thread a built-in checkpointer keeps by default: saving step ``S``
forgets the undo records of steps ``S - KEEP_STEPS`` and older (``keep_steps=None`` keeps
every step; ``prune(before=...)`` forgets steps by age)."""


class HistoryError(PlaitError, ValueError):
    """A step that is not kept, a fork onto a thread id in use, a checkpointer that keeps
    no history."""


@frozen
class StepInfo:
    """One saved step of a thread: its number, the run and the loop node that wrote it
    (``"update_state"`` or the ``as_node`` given for a manual update), and when (Unix
    seconds)."""

    thread_id: str
    step: int
    run_id: str
    node: str
    time: float


Rows = tuple[dict[str, tuple[int, str]], dict[str, str]]
"""A thread's stored state as checkpointers hold it: message id -> (sequence number,
JSON text), and state key -> JSON text."""


def undo_record(
    delta: _Delta, before: Mapping[str, tuple[int, str]], values: Mapping[str, str]
) -> dict[str, Any]:
    """What undoes ``delta``, given the stored rows it touches: ``before`` holds the
    message rows of the ids ``delta`` upserts or removes (every message if it resets),
    ``values`` the stored text of the keys it writes.

    ``a``: the ids the step added (removed again on undo); ``o``: ``[id, seq, text]`` of
    the messages it replaced or removed (put back); ``v``: ``[key, text or None]``, the
    old value of each key it wrote (``None``: the key did not exist).
    """
    deleted = set(before) if delta.reset else {i for i in delta.removed if i in before}
    added: list[str] = []
    old: list[list[Any]] = []
    seen: set[str] = set()
    for message in delta.upserts:
        if message.id in seen:
            continue
        seen.add(message.id)
        if message.id in before and message.id not in deleted:
            seq, text = before[message.id]
            old.append([message.id, seq, text])
        else:
            added.append(message.id)
    for message_id in sorted(deleted, key=lambda i: before[i][0]):
        seq, text = before[message_id]
        old.append([message_id, seq, text])
    return {
        "a": added,
        "o": old,
        "v": [[key, values.get(key)] for key in delta.values],
    }


def rewind(rows: Rows, records: Iterable[Mapping[str, Any]]) -> Rows:
    """``rows`` taken back through ``records``, newest first (a new pair; ``rows`` is
    not changed)."""
    messages, values = dict(rows[0]), dict(rows[1])
    for record in records:
        for message_id in record["a"]:
            messages.pop(message_id, None)
        for message_id, seq, text in record["o"]:
            messages[message_id] = (int(seq), text)
        for key, text in record["v"]:
            if text is None:
                values.pop(key, None)
            else:
                values[key] = text
    return messages, values


def prune_cutoff(step: int, keep_steps: int | None, pins: Sequence[int]) -> int:
    """The newest step whose undo record may be forgotten after saving ``step``: none
    (0) with ``keep_steps=None``; never one that a fork not yet written to still reads
    (``pins``: the steps such forks were made at; rebuilding step N needs the records
    above N)."""
    if keep_steps is None:
        return 0
    cutoff = step - keep_steps
    for pin in pins:
        cutoff = min(cutoff, pin)
    return max(cutoff, 0)


def check_keep_steps(keep_steps: object, owner: str) -> int | None:
    """``keep_steps`` if it is ``None`` or a whole number of at least 1, else a
    ``ValueError`` in the house wording."""
    if keep_steps is None:
        return None
    if isinstance(keep_steps, bool) or not isinstance(keep_steps, int) or keep_steps < 1:
        raise ValueError(
            f"{owner}: keep_steps: {expected('a whole number of at least 1 or None', keep_steps)}"
        )
    return keep_steps


def keep_steps_option(text: str, url: str) -> int | None:
    """The ``keep_steps=`` of a checkpointer URL: a whole number of at least 1, or
    ``all`` (keep every step)."""
    if text == "all":
        return None
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise MalformedURLError(
        f"malformed checkpointer URL {url!r}: keep_steps={text}: "
        "expected a whole number of at least 1 or 'all'"
    )


def missing_step(thread_id: str, step: object, kept: Sequence[int]) -> HistoryError:
    """The error for a step that is not (or no longer) kept."""
    if not kept:
        return HistoryError(f"thread {thread_id!r} has no saved steps")
    return HistoryError(
        f"thread {thread_id!r} has no step {step!r}: the steps kept are {min(kept)} to {max(kept)}"
    )
