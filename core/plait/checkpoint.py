"""Checkpointers: where a thread's state is saved after every step.

A step writes a ``StepDelta`` — only what the step changed (messages added, replaced or
removed; state keys written) — with a compare-and-set on the thread's step number, so the
cost of a step does not grow with the thread and two runs never interleave on one thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from plait._convert import expected
from plait.errors import MalformedURLError, StoreError, ThreadBusyError
from plait.messages import AnyMessage, structure_message, unstructure_message

__all__ = [
    "RUN_LEASE",
    "Checkpoint",
    "Checkpointer",
    "EventLog",
    "MemoryCheckpointer",
    "StepDelta",
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


@attrs.frozen
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


@attrs.frozen
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
    return structure_message(json.loads(text))


@attrs.define
class _MemoryThread:
    step: int = 0
    messages: dict[str, str] = attrs.field(factory=dict)  # id -> JSON; insertion order = seq
    values: dict[str, str] = attrs.field(factory=dict)


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
    store them, so a state that only works in memory is caught here too.
    """

    def __init__(self) -> None:
        self._threads: dict[str, _MemoryThread] = {}
        self._events: dict[str, list[str]] = {}  # event n is at index n - 1
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
            return Checkpoint(
                thread.step,
                [load_message(text) for text in thread.messages.values()],
                {key: load_value(text) for key, text in thread.values.items()},
            )

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
            if delta.reset:
                thread.messages.clear()
            for message_id in delta.removed:
                thread.messages.pop(message_id, None)
            for message_id, text in rows:
                thread.messages[message_id] = text
            thread.values.update(encoded)
            thread.step = delta.step
            self._threads[thread_id] = thread

    def list_threads(self) -> list[str]:
        with self._lock:
            return list(self._threads)

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._threads.pop(thread_id, None)
            self._events.pop(thread_id, None)

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
            rows = log[start:] if limit is None else log[start : start + max(limit, 0)]
        return [(start + index + 1, load_value(text)) for index, text in enumerate(rows)]

    def last_event(self, thread_id: str) -> int:
        with self._lock:
            return len(self._events.get(thread_id, ()))


def apply_delta(messages: Sequence[AnyMessage], delta: StepDelta) -> list[AnyMessage]:
    """``messages`` with ``delta``'s message changes applied (reference semantics for
    checkpointer implementations and their tests)."""
    ordered: dict[str, AnyMessage] = {} if delta.reset else {m.id: m for m in messages}
    for message_id in delta.removed:
        ordered.pop(message_id, None)
    for message in delta.upserts:
        ordered[message.id] = message
    return list(ordered.values())
