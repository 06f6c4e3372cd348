"""Stream transport: how a run's events reach whoever streams it.

The loop writes ``StreamEvent``s to an ``EventSink``; ``RunStream`` and ``AsyncRunStream``
(``plait._run_streams``, imported when a run is streamed) hand them to the caller as they
happen, then hold the run's result.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs

from plait.errors import ConfigError

if TYPE_CHECKING:
    import asyncio

    from plait._stream_event import StreamEvent

__all__ = [
    "SAVED",
    "STREAM_MODES",
    "CancelOnLeave",
    "EventSink",
    "Leaving",
    "ReaderGone",
    "StopOnLeave",
    "stream_sink",
]

STREAM_MODES = ("updates", "messages", "values", "custom")

SAVED = "saved"
"""The mode of the event the loop gives for each step it saves, as it saves it (``source``
the node history names it under, ``step`` its number, ``data`` ``None``): asked for by
the run log (``plait.runlog``, its ``step`` events), never by a caller of ``stream``,
whose ``values`` follow the steps that change the state, as LangGraph's do."""


class EventSink:
    """Delivers the events of the chosen modes; ``wants`` lets the loop skip building an
    event no one reads (a copy of the state, a streamed model call)."""

    def __init__(self, modes: frozenset[str], put: Callable[[Any], None]) -> None:
        self.modes = modes
        self.put = put
        self.abort: Callable[[], None] = _nothing
        """Set by the run once it began: records it as failed when the reader of a sync
        stream is interrupted (Ctrl-C) while the run goes on in its worker thread, which
        nothing can stop and which dies with the process."""
        self.closed = False
        """Set once the streamed run has ended: a run nested in it that goes on (a
        background task) no longer writes to it."""
        self.gate: Callable[[], Callable[[], Awaitable[None]] | None] | None = None
        """Called by the run before each step it starts (a hook, a model call, a tools
        step) when its reader sets the pace (``RunStream``, ``AsyncRunStream``): it
        returns once the reader waits for an event the run has not yet given — or, on the
        async path, gives what to await for that — and raises ``ReaderGone`` if the reader
        left, so no step starts after the reader is done with the stream."""
        self.leaving: Leaving | None = None
        """Set by a stream whose reader sets the pace: whether the reader left, and the
        calls in flight to stop when it does (``StopOnLeave``)."""
        self.streamed_calls = 0
        """The model calls whose chunks reached this sink: the loop sends an answer whole
        when its call added none (a cache hit, a hook that answered, a handoff's receiver)."""

    def __call__(self, event: StreamEvent) -> None:
        if event.mode in self.modes:
            self.put(event)

    def wants(self, mode: str) -> bool:
        return mode in self.modes

    def writer(self) -> Callable[[Any], None]:
        """``runtime.stream_writer``: what hooks and tools write, as ``custom`` events."""

        from plait._stream_event import StreamEvent  # a streamed run's: made on first use

        def write(data: Any) -> None:
            self(StreamEvent("custom", data, "custom"))

        return write


class ReaderGone(BaseException):
    """Raised when the reader of a run's stream has left (``close()``, the stream dropped
    after ``break``, Ctrl-C): at the run's next step boundary, or in a model call streaming
    tokens, which is cancelled (its next chunk is not waited for; an HTTP provider's
    response is closed). The run ends as after Ctrl-C — recorded as failed, its last
    finished step saved (never the cancelled call's partial answer), its thread free,
    ``invoke(None, thread_id=...)`` continues it. A ``BaseException``, so no middleware
    takes it for an error to retry or to answer."""


class Leaving:
    """Whether the reader of a stream left (``close()``, ``aclose()``, the stream dropped
    after ``break``, Ctrl-C), and the stops of the calls in flight that can be ended from
    the reader's side (``StopOnLeave``): a model call streaming tokens is then cancelled,
    not read to its end. Set from the reader's thread; read from the run's."""

    __slots__ = ("left", "lock", "stops")

    def __init__(self) -> None:
        self.left = False
        self.lock = threading.Lock()
        self.stops: list[Callable[[], None]] = []

    def add(self, stop: Callable[[], None]) -> None:
        """Register the stop of a call starting; ``ReaderGone`` if the reader already
        left (the call is not started)."""
        with self.lock:
            if self.left:
                raise ReaderGone
            self.stops.append(stop)

    def remove(self, stop: Callable[[], None]) -> None:
        """Unregister the stop of a call that has ended (no stop runs after this)."""
        with self.lock:
            self.stops.remove(stop)

    def leave(self) -> None:
        """Mark the reader gone and call each stop registered (under the lock, so no stop
        runs after its call has left ``StopOnLeave`` and closed what it stops)."""
        with self.lock:
            if self.left:
                return
            self.left = True
            for stop in self.stops:
                try:
                    stop()
                except Exception:  # a stop is best effort: the call ends at its next chunk
                    continue


class StopOnLeave:
    """``with StopOnLeave(stop):`` around the blocking reads of a call in flight (an HTTP
    model call waiting for its response's headers, its answer or its next token): if the
    reader of the run's stream leaves meanwhile, ``stop`` is called from the reader's
    thread (a provider shuts its connection's socket, so the read waiting returns at
    once). An error raised within once the reader left is that stop's doing, and leaves as
    ``ReaderGone``: the call was cancelled, not failed, so no middleware retries it or
    falls back. Outside a paced
    stream (``invoke``, a run nested in a tool call) it does nothing."""

    __slots__ = ("leaving", "stop")

    def __init__(self, stop: Callable[[], None]) -> None:
        sink = run_sink.get()
        self.leaving = sink.leaving if sink is not None else None
        self.stop = stop

    def __enter__(self) -> StopOnLeave:
        if self.leaving is not None:
            self.leaving.add(self.stop)
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        leaving = self.leaving
        if leaving is None:
            return
        leaving.remove(self.stop)
        if leaving.left and isinstance(error, Exception):
            raise ReaderGone from error


class CancelOnLeave:
    """``with CancelOnLeave():`` in a coroutine, around an await of a call in flight (an
    async model call): if the reader of the run's stream leaves meanwhile (an ``astream``
    dropped after ``break``), the task awaiting it is cancelled, and the cancellation
    leaves as ``ReaderGone``, as from ``StopOnLeave``. Outside a paced stream it does
    nothing; a task cancelled by someone else (``aclose()``) stays cancelled."""

    __slots__ = ("cancelled", "leaving", "loop", "task", "thread")

    def __init__(self) -> None:
        sink = run_sink.get()
        self.leaving = sink.leaving if sink is not None else None
        self.cancelled = False
        self.task: asyncio.Task[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = 0

    def __enter__(self) -> CancelOnLeave:
        leaving = self.leaving
        if leaving is not None:
            import asyncio

            self.task = asyncio.current_task()
            self.loop = asyncio.get_running_loop()
            self.thread = threading.get_ident()
            leaving.add(self.stop)
        return self

    def stop(self) -> None:
        if self.task is None:
            return
        if threading.get_ident() == self.thread or self.loop is None:
            self.cancel()
        else:
            self.loop.call_soon_threadsafe(self.cancel)

    def cancel(self) -> None:
        assert self.task is not None
        self.cancelled = self.task.cancel()

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        leaving = self.leaving
        if leaving is None:
            return
        leaving.remove(self.stop)
        if self.cancelled and self.task is not None:
            self.task.uncancel()  # this cancellation, turned into ReaderGone below
        if leaving.left and error is not None and not isinstance(error, ReaderGone):
            if self.cancelled or isinstance(error, Exception):
                raise ReaderGone from error


def _nothing() -> None:
    """``EventSink.abort`` before the run began: nothing to record."""


class NestedSink(EventSink):
    """The sink of a run nested in a streamed run (a sub-agent started in a tool call, a
    handoff's receiver): its events go to its own sink, if it is streamed itself, and to
    the outer run's, their ``path`` prefixed with ``below`` (the tool call's id), while
    the outer stream is open."""

    def __init__(self, own: EventSink | None, outer: EventSink, below: tuple[str, ...]) -> None:
        def put(event: StreamEvent) -> None:
            if own is not None:
                own(event)
            if not outer.closed:
                outer(attrs.evolve(event, path=(*below, *event.path)))

        super().__init__((own.modes if own is not None else frozenset()) | outer.modes, put)
        # The nested run is part of the outer run's step in flight, which ends whatever
        # the outer reader does; only a reader of its own stream sets its pace.
        self.gate = own.gate if own is not None else None
        self.leaving = own.leaving if own is not None else None


class ToolCallScope:
    """Where a run starting in this context nests: below a tool call in progress (or a
    name given to ``plait.nesting.nest``) of a run. ``below`` is the path below the run
    whose ``sink`` this is (``(tool call id,)``); ``path`` the path from the outermost run
    (``RunUsage.path``): the run's own plus ``below``. A plain class, as the loop's steps
    are (``plait._loop``): one is made for each tool call."""

    __slots__ = ("below", "called", "path", "sink")

    def __init__(
        self, below: tuple[str, ...], path: tuple[str, ...], sink: EventSink | None
    ) -> None:
        self.below = below
        self.path = path
        self.sink = sink
        self.called = False
        """Set when the call reached the tool itself, past its ``wrap_tool_call``
        middleware: a run stopped around the call then does not tell the model the
        tool never ran (it may have done what it does)."""


in_tool_call: ContextVar[ToolCallScope | None] = ContextVar("plait_in_tool_call", default=None)

run_sink: ContextVar[EventSink | None] = ContextVar("plait_run_sink", default=None)
"""The sink of the run in progress (``None``: not streamed): what ``nest`` nests in outside
a tool call."""


def nested_sink(own: EventSink | None) -> EventSink | None:
    """The sink of a run starting in this context: ``own``, or a ``NestedSink`` if the run
    starts inside a tool call of a streamed run."""
    call = in_tool_call.get()
    if call is None or call.sink is None:
        return own
    return NestedSink(own, call.sink, call.below)


stream_sink: ContextVar[EventSink | None] = ContextVar("plait_stream_sink", default=None)
"""The sink of the run in progress when someone reads model chunks (``messages`` mode):
the innermost model call streams then, and only then."""


def saved(sink: EventSink | None, source: str, step: int) -> None:
    """Give ``sink`` the ``SAVED`` event of the step just saved, if it asked for them."""
    if sink is not None and SAVED in sink.modes:
        from plait._stream_event import StreamEvent

        sink(StreamEvent(SAVED, None, source, step=step))


def parse_modes(mode: str | Sequence[str]) -> frozenset[str]:
    modes = frozenset((mode,) if isinstance(mode, str) else mode)
    unknown = modes - set(STREAM_MODES)
    if unknown or not modes:
        raise ConfigError(
            f"unknown stream mode(s) {sorted(unknown)}; choose from {', '.join(STREAM_MODES)}"
        )
    return modes
