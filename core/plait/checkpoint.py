"""Checkpointers: where a thread's state is saved after every step.

A step writes a ``StepDelta`` — only what the step changed (messages added, replaced or
removed; state keys written) — with a compare-and-set on the thread's step number, so the
cost of a step does not grow with the thread and two runs never interleave on one thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from plait._convert import expected
from plait.errors import MalformedURLError, StoreError, ThreadBusyError
from plait.history import (
    KEEP_STEPS,
    HistoryError,
    Rows,
    StepInfo,
    check_keep_steps,
    missing_step,
    prune_cutoff,
    rewind,
    undo_record,
)
from plait.lazy import define, frozen
from plait.messages import AnyMessage, structure_message, unstructure_message

__all__ = [
    "HEARTBEAT_LEASE",
    "KEEP_STEPS",
    "RUN_HEARTBEAT",
    "RUN_LEASE",
    "Checkpoint",
    "Checkpointer",
    "EventLog",
    "EventRetention",
    "History",
    "HistoryError",
    "MemoryCheckpointer",
    "RunLease",
    "RunLeases",
    "StepDelta",
    "StepInfo",
    "checkpoint_from_rows",
    "dump_event",
    "dump_message",
    "dump_value",
    "event_conflict",
    "load_message",
    "load_value",
]

RUN_LEASE = 300.0
"""Seconds after its last save that a run of another process counts as live (a run of
this process is live while it is being driven, however long ago it saved).
New input for a thread whose run is live elsewhere raises ``ThreadBusyError`` before
anything is written, so a run never loses the thread after some of its steps were
committed. A run idle longer than this (its process died, or one step — a tool call —
takes longer) may be taken over by new input; ``invoke(None, thread_id=...)`` continues
a run at any time."""


RUN_HEARTBEAT = 2.0
"""Seconds between renewals of a run's lease (``RunLeases``) by the process running it."""

HEARTBEAT_LEASE = 10.0
"""Seconds a run's lease lasts after its last renewal: once it has run out, the process
running the run is taken for dead (``plait serve``'s followers end the run's stream with
a ``run_error``, and new input may take the thread) — seconds after it died, not
``RUN_LEASE`` after its last save."""


@frozen
class RunLease:
    """The lease a thread's run in progress holds: the run (as whoever runs it names it,
    e.g. ``plait serve``'s run id), and until when (Unix seconds)."""

    run_id: str
    expires: float


@runtime_checkable
class RunLeases(Protocol):
    """A checkpointer that keeps, per thread, a lease the process running a run renews
    while it lives (a heartbeat), so other processes learn within seconds that it died.
    The built-in checkpointers all do."""

    def renew_lease(self, thread_id: str, run_id: str, seconds: float) -> None:
        """Hold ``thread_id``'s lease for ``run_id`` for ``seconds`` from now."""

    def run_lease(self, thread_id: str) -> RunLease | None:
        """The thread's lease (expired or not), ``None`` if no run took one."""

    def end_lease(self, thread_id: str, run_id: str) -> None:
        """Drop the thread's lease if ``run_id`` holds it (the run ended)."""


@frozen
class StepDelta:
    """What one step changed, applied in this order: if ``reset``, every message is
    removed; then the ``removed`` ids are deleted; then each of ``upserts`` replaces the
    message with its id (keeping its position) or is appended; then ``values`` replace
    the stored value of each key.

    ``step`` is the step number this write creates; it succeeds only if the stored step
    number is ``step - 1`` (0 for a new thread), else ``ThreadBusyError``.
    """

    step: int
    reset: bool = False
    removed: tuple[str, ...] = ()
    upserts: tuple[AnyMessage, ...] = ()
    values: Mapping[str, Any] = attrs.field(factory=dict)
    run_id: str = ""
    """The run that wrote the step (``""`` for a write outside a run), kept in history."""
    node: str = ""
    """The loop node that ran (``"model"``, ``"tools"`` …) or ``update_state``'s
    ``as_node``, kept in history."""


@frozen
class Checkpoint:
    """A thread's saved state: its step number, messages in order, and other keys."""

    step: int
    messages: list[AnyMessage]
    values: dict[str, Any]


@runtime_checkable
class Checkpointer(Protocol):
    """Saves and loads threads. Implementations must be safe to call from several threads
    (the async path calls them through ``asyncio.to_thread``)."""

    def load(self, thread_id: str) -> Checkpoint | None:
        """The whole saved thread, or ``None`` if it was never saved."""

    def step(self, thread_id: str) -> int:
        """The thread's stored step number (0 if never saved): a cheap check that a
        cached copy is current."""

    def save(self, thread_id: str, delta: StepDelta) -> None:
        """Apply ``delta`` atomically, or raise ``ThreadBusyError`` if the stored step
        is not ``delta.step - 1``."""

    def list_threads(self) -> list[str]:
        """Every saved thread id, oldest first."""

    def delete_thread(self, thread_id: str) -> None:
        """Forget a thread (a no-op for an unknown one)."""


@runtime_checkable
class EventLog(Protocol):
    """A thread's run log: JSON events numbered 1, 2, 3 … per thread, appended by the one
    writer that holds the thread and read by anyone, from any process (what ``plait serve``
    streams, and replays to a client that reconnects). The built-in checkpointers are all
    event logs; ``delete_thread`` forgets a thread's events with its state."""

    def append_events(self, thread_id: str, events: Sequence[Any], *, after: int) -> int:
        """Append ``events`` (JSON values) numbered ``after + 1`` onward and return the last
        number, or raise ``ThreadBusyError`` if the thread's last event is not ``after``
        (another writer appended meanwhile): nothing is written then."""

    def read_events(
        self, thread_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, Any]]:
        """``(number, event)`` pairs numbered above ``after``, oldest first, at most
        ``limit`` of them (all if ``None``); ``[]`` for an unknown thread."""

    def last_event(self, thread_id: str) -> int:
        """The thread's last event number (0 if it has none)."""


@runtime_checkable
class EventRetention(Protocol):
    """A run log whose old events can be forgotten (the built-in checkpointers' are)."""

    def forget_events(self, thread_id: str, *, after: int, through: int) -> int:
        """Forget the thread's events numbered ``after + 1`` to ``through``; the others
        keep their numbers (a reader of the forgotten range finds a gap). Returns how
        many were forgotten."""


@runtime_checkable
class History(Protocol):
    """A checkpointer that keeps each step of a thread (the built-in ones all do)."""

    def history(self, thread_id: str) -> list[StepInfo]:
        """The thread's kept steps, newest first (a fork's list continues with its
        parent's steps up to the fork point); ``[]`` for an unknown thread."""

    def load_step(self, thread_id: str, step: int) -> Checkpoint:
        """The thread as it was after ``step``, or ``HistoryError`` if that step is not
        kept."""

    def fork(self, thread_id: str, step: int, new_thread_id: str) -> None:
        """Make ``new_thread_id`` a thread whose steps up to ``step`` are
        ``thread_id``'s (shared, not copied); ``HistoryError`` if the step is not kept or
        ``new_thread_id`` exists."""

    def prune(self, *, before: float) -> int:
        """Forget the undo records of steps saved before ``before`` (Unix seconds), in
        every thread; return how many were forgotten. A thread's latest state is never
        forgotten."""


def event_conflict(thread_id: str, stored: int, after: int) -> ThreadBusyError:
    """The error ``append_events`` raises when the log moved past ``after``."""
    return ThreadBusyError(
        f"thread {thread_id!r} has {stored} events, not {after}: "
        "another writer appended to its run log"
    )


def _json(value: Any, what: str) -> str:
    """``value`` as compact JSON text every checkpointer can store, or a ``StoreError``
    naming ``what`` could not be saved.

    Text stays readable UTF-8; a string holding lone surrogates (a non-UTF-8 file name
    read with ``surrogateescape``, a Latin-1 terminal) is written with ``\\u`` escapes
    instead, which JSON reads back to the very same string.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        raise StoreError(f"{what} is nested too deeply to be saved as JSON") from None
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} cannot be saved as JSON: {exc}") from None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def dump_value(value: Any, key: str | None = None) -> str:
    """A state value as JSON text (what checkpointers store for non-message keys); a
    value JSON cannot hold is a ``StoreError`` naming ``key``."""
    return _json(value, "a state value" if key is None else f"state key {key!r}")


def dump_event(event: Any) -> str:
    """A run-log event as JSON text; one JSON cannot hold is a ``StoreError``."""
    return _json(event, "a run-log event")


def load_value(text: str) -> Any:
    """A state value from the JSON text ``dump_value`` made."""
    return json.loads(text)


def dump_message(message: AnyMessage) -> str:
    """A message as JSON text, the same for every checkpointer: one that JSON cannot hold
    (bytes in a content block, arguments nested too deeply) is a ``StoreError`` naming it."""
    what = f"message {message.id!r} ({message.type})"
    try:
        data = unstructure_message(message)
    except RecursionError:
        raise StoreError(f"{what} is nested too deeply to be saved as JSON") from None
    return _json(data, what)


def load_message(text: str) -> AnyMessage:
    """A message from the JSON text ``dump_message`` made."""
    return structure_message(json.loads(text))


@frozen
class _Record:
    """One step's history entry: who wrote it, when, and its undo record."""

    run_id: str
    node: str
    time: float
    undo: dict[str, Any]


@define
class _MemoryThread:
    step: int = 0
    next_seq: int = 0
    messages: dict[str, tuple[int, str]] = attrs.field(factory=dict)  # id -> (seq, JSON)
    values: dict[str, str] = attrs.field(factory=dict)
    records: dict[int, _Record] = attrs.field(factory=dict)  # step -> record, oldest first
    parent: _MemoryThread | None = None
    """The thread this one was forked from: its steps up to ``base`` are this thread's
    history (``MemoryCheckpointer.delete_thread`` hands them over first)."""
    parent_id: str = ""
    base: int = 0

    def rows_at(self, step: int) -> Rows | None:
        if not 0 <= step <= self.step:
            return None
        if step >= self.base:
            needed = range(self.step, step, -1)
            if any(s not in self.records for s in needed):
                return None
            return rewind((self.messages, self.values), (self.records[s].undo for s in needed))
        return None if self.parent is None else self.parent.rows_at(step)

    def infos(self, thread_id: str, upto: int | None = None) -> list[StepInfo]:
        own = [
            StepInfo(thread_id, step, r.run_id, r.node, r.time)
            for step, r in reversed(self.records.items())
            if upto is None or step <= upto
        ]
        if self.parent is not None:
            top = self.base if upto is None else min(upto, self.base)
            own += self.parent.infos(self.parent_id, top)
        return own


def checkpoint_from_rows(step: int, rows: Rows) -> Checkpoint:
    """A ``Checkpoint`` from stored rows (messages in sequence order)."""
    ordered = sorted(rows[0].values())
    return Checkpoint(
        step,
        [load_message(text) for _, text in ordered],
        {key: load_value(text) for key, text in rows[1].items()},
    )


def check_memory_url(url: str, what: str) -> None:
    """Refuse ``memory:<anything>`` for the checkpointer or store ``what``: memory keeps
    nothing on disk, so a path there is a mistake (``memory:agent.db`` for ``sqlite:``)."""
    if url not in ("memory", "memory:"):
        raise MalformedURLError(
            f"{what}: {expected(repr('memory'), url, f'the memory {what} takes no path')}"
        )


class MemoryCheckpointer:
    """Threads kept in this process's memory (lost when it exits): for tests and demos.

    Messages and values are stored as JSON text, exactly as the database checkpointers
    store them, so a state that only works in memory is caught here too. Each step's
    undo record is kept (``plait.history``), the last ``keep_steps`` of each thread.
    """

    def __init__(self, *, keep_steps: int | None = KEEP_STEPS) -> None:
        self.keep_steps = check_keep_steps(keep_steps, "MemoryCheckpointer")
        self._threads: dict[str, _MemoryThread] = {}
        self._events: dict[str, list[str | None]] = {}  # event n at index n - 1 (None:
        # forgotten)
        self._leases: dict[str, RunLease] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str = "memory") -> MemoryCheckpointer:
        """The ``plait.checkpointers`` entry point of ``"memory"``, which takes no path."""
        check_memory_url(url, "checkpointer")
        return cls()

    def load(self, thread_id: str) -> Checkpoint | None:
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return None
            return checkpoint_from_rows(thread.step, (thread.messages, thread.values))

    def step(self, thread_id: str) -> int:
        thread = self._threads.get(thread_id)
        return 0 if thread is None else thread.step

    def save(self, thread_id: str, delta: StepDelta) -> None:
        encoded = {key: dump_value(value, key) for key, value in delta.values.items()}
        rows = [(message.id, dump_message(message)) for message in delta.upserts]
        with self._lock:
            thread = self._threads.get(thread_id) or _MemoryThread()
            if thread.step != delta.step - 1:
                raise ThreadBusyError(
                    f"thread {thread_id!r} is at step {thread.step}, not {delta.step - 1}: "
                    "another run wrote to it since this one loaded it"
                )
            undo = undo_record(delta, thread.messages, thread.values)
            if delta.reset:
                thread.messages = {}
            for message_id in delta.removed:
                thread.messages.pop(message_id, None)
            for message_id, text in rows:
                old = thread.messages.get(message_id)
                if old is None:
                    thread.messages[message_id] = (thread.next_seq, text)
                    thread.next_seq += 1
                else:
                    thread.messages[message_id] = (old[0], text)
            thread.values.update(encoded)
            thread.step = delta.step
            thread.records[delta.step] = _Record(delta.run_id, delta.node, time.time(), undo)
            cutoff = prune_cutoff(delta.step, self.keep_steps, ())
            for step in [s for s in thread.records if s <= cutoff]:
                del thread.records[step]
            self._threads[thread_id] = thread

    def list_threads(self) -> list[str]:
        with self._lock:
            return list(self._threads)

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            gone = self._threads.pop(thread_id, None)
            if gone is not None:
                self._orphan_forks(gone)
            self._events.pop(thread_id, None)
            self._leases.pop(thread_id, None)

    def _orphan_forks(self, gone: _MemoryThread) -> None:
        """Before a thread is forgotten: the forks reading it take the records of their
        steps up to the fork point (they were its), listed under their own thread id as
        the database checkpointers list them, and read the steps before those from its
        own parent, if it has one."""
        for fork in self._threads.values():
            if fork.parent is not gone:
                continue
            taken = {step: r for step, r in gone.records.items() if step <= fork.base}
            fork.records = {**taken, **fork.records}
            fork.parent, fork.parent_id = gone.parent, gone.parent_id
            # a fork made below ``gone``'s own fork point already read those steps there
            fork.base = min(fork.base, gone.base)

    # -- history (plait.history.History) ---------------------------------------------------

    def history(self, thread_id: str) -> list[StepInfo]:
        with self._lock:
            thread = self._threads.get(thread_id)
            return [] if thread is None else thread.infos(thread_id)

    def load_step(self, thread_id: str, step: int) -> Checkpoint:
        with self._lock:
            thread = self._threads.get(thread_id)
            rows = None if thread is None else thread.rows_at(step)
            if thread is None or rows is None:
                kept = [] if thread is None else [i.step for i in thread.infos(thread_id)]
                raise missing_step(thread_id, step, kept)
            return checkpoint_from_rows(step, rows)

    def fork(self, thread_id: str, step: int, new_thread_id: str) -> None:
        with self._lock:
            if new_thread_id in self._threads:
                raise HistoryError(f"cannot fork onto thread {new_thread_id!r}: it exists")
            thread = self._threads.get(thread_id)
            rows = None if thread is None else thread.rows_at(step)
            if thread is None or rows is None:
                kept = [] if thread is None else [i.step for i in thread.infos(thread_id)]
                raise missing_step(thread_id, step, kept)
            # The fork's rows are new dicts holding the parent's very strings: memory
            # shares the bytes, and the parent's later steps cannot change the fork.
            messages, values = rows
            self._threads[new_thread_id] = _MemoryThread(
                step=step,
                next_seq=max((seq for seq, _ in messages.values()), default=-1) + 1,
                messages=dict(messages),
                values=dict(values),
                parent=thread,
                parent_id=thread_id,
                base=step,
            )

    def prune(self, *, before: float) -> int:
        forgotten = 0
        with self._lock:
            for thread in self._threads.values():
                old = [s for s, r in thread.records.items() if r.time < before]
                # steps are saved in time order, so what is left stays contiguous; the
                # latest step's record is kept (it says who wrote the state)
                for step in old:
                    if step == thread.step:
                        continue
                    del thread.records[step]
                    forgotten += 1
        return forgotten

    def append_events(self, thread_id: str, events: Sequence[Any], *, after: int) -> int:
        encoded = [dump_event(event) for event in events]
        with self._lock:
            log = self._events.setdefault(thread_id, [])
            if len(log) != after:
                raise event_conflict(thread_id, len(log), after)
            log.extend(encoded)
            return len(log)

    def read_events(
        self, thread_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, Any]]:
        with self._lock:
            log = self._events.get(thread_id, [])
            start = max(after, 0)
            end = len(log) if limit is None else start + max(limit, 0)
            rows = [(n, text) for n, text in enumerate(log[start:end], start + 1) if text]
            while limit is not None and len(rows) < limit and end < len(log):
                # forgotten events in the slice: read on past them (rare: only the
                # oldest part of a log is ever forgotten)
                more = [(n, t) for n, t in enumerate(log[end : end + limit], end + 1) if t]
                rows.extend(more[: limit - len(rows)])
                end += limit
        return [(number, load_value(text)) for number, text in rows]

    def last_event(self, thread_id: str) -> int:
        with self._lock:
            return len(self._events.get(thread_id, ()))

    def forget_events(self, thread_id: str, *, after: int, through: int) -> int:
        with self._lock:
            log = self._events.get(thread_id, [])
            span = range(max(after, 0), min(through, len(log)))
            forgotten = sum(log[index] is not None for index in span)
            for index in span:
                log[index] = None
            return forgotten

    def renew_lease(self, thread_id: str, run_id: str, seconds: float) -> None:
        with self._lock:
            self._leases[thread_id] = RunLease(run_id, time.time() + seconds)

    def run_lease(self, thread_id: str) -> RunLease | None:
        with self._lock:
            return self._leases.get(thread_id)

    def end_lease(self, thread_id: str, run_id: str) -> None:
        with self._lock:
            lease = self._leases.get(thread_id)
            if lease is not None and lease.run_id == run_id:
                del self._leases[thread_id]


def apply_delta(messages: Sequence[AnyMessage], delta: StepDelta) -> list[AnyMessage]:
    """``messages`` with ``delta``'s message changes applied (reference semantics for
    checkpointer implementations and their tests)."""
    ordered: dict[str, AnyMessage] = {} if delta.reset else {m.id: m for m in messages}
    for message_id in delta.removed:
        ordered.pop(message_id, None)
    for message in delta.upserts:
        ordered[message.id] = message
    return list(ordered.values())
