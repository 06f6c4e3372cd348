"""A streamed run handed to its caller: ``RunStream`` (sync, the run in a worker thread
paced by its reader) and ``AsyncRunStream`` (a task on the running loop) give its events
as they happen, then hold its result; the ``Graph`` forms give them in LangGraph's shapes.

Imported when a run is streamed (``agent.stream``/``astream``): a run that is not never
pays for these classes.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from plait._stream import EventSink, Leaving, ReaderGone
from plait.lazy import frozen
from plait.types import AgentResult, StreamEvent

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncRunStream", "GraphAsyncRunStream", "GraphRunStream", "RunStream", "graph_item"]


@frozen
class _Failure:
    error: BaseException


@frozen
class _Finished:
    result: AgentResult


class RunStream(Iterator[StreamEvent]):
    """The events of a streamed run, as they happen; the run starts on the first
    ``next()`` (in a worker thread, so tokens arrive while the model works) and, once the
    events are exhausted, ``result`` holds its ``AgentResult``.

    The reader sets the pace, as with LangGraph's stream generator: the run starts a step
    (a hook, a model call, a tools step) only while the reader waits in ``next()`` and has
    taken every event given so far. A reader that leaves — ``close()``, or the stream
    dropped after ``break`` — has therefore left before any later step starts, and none
    does. The model call in flight is cancelled (``Leaving``: an HTTP provider's
    connection is shut at once, answering or not; another model's stream is closed at its
    next chunk, its unstreamed call waited for) and no answer of it saved; so is an async
    tool in flight (its task on the agent's loop thread), its result not saved. Any other
    step in flight (a sync tool, which cannot be interrupted; a hook) ends and is saved.
    The run then ends as after Ctrl-C (recorded as failed; ``invoke(None, thread_id=...)``
    continues it from its last saved step). ``close()``, and dropping the stream in the
    thread that read it, wait for the run to end, so the thread takes new input at once; a
    stream kept unread holds its run paused."""

    def __init__(self, run: Callable[[EventSink], AgentResult], modes: frozenset[str]) -> None:
        self._run = run
        self._pace = _Pace()
        self._sink = EventSink(modes, self._pace.put)
        self._sink.gate = self._pace.gate
        self._sink.leaving = self._pace.leaving
        self._worker: threading.Thread | None = None
        self._reader: int | None = None
        self._closed = False
        self._interrupted = False
        self.result: AgentResult | None = None

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> StreamEvent:
        if self._closed or self.result is not None:
            raise StopIteration
        self._reader = threading.get_ident()
        if self._worker is None:
            context = contextvars.copy_context()
            # The worker holds the run, the sink and the pace, never this object, so a
            # reader that drops the stream mid-run lets it be collected (and closed).
            self._worker = threading.Thread(
                target=context.run,
                args=(_work, self._run, self._sink),
                name="plait-stream",
                daemon=True,
            )
            self._worker.start()
        try:
            item = self._pace.ask()
        except BaseException:  # Ctrl-C while waiting: the run cannot go on for anyone
            self._interrupted = True  # and no one waits for its step in flight
            self._pace.leave()
            self._sink.abort()
            raise
        if isinstance(item, _Finished):
            self.result = item.result
            raise StopIteration
        if isinstance(item, _Failure):
            if self._closed and isinstance(item.error, ReaderGone):
                raise StopIteration  # closed from another thread while this one waited
            raise item.error
        event: StreamEvent = item
        return event

    def close(self) -> None:
        """Leave the stream: the run starts no further step; wait for its step in flight
        to end and be saved. Nothing to stop if the run never started or has ended."""
        self._leave(wait=True)

    def _leave(self, *, wait: bool) -> None:
        self._closed = True
        worker = self._worker
        if worker is None or not worker.is_alive():
            return
        self._pace.leave()
        if wait and not self._interrupted and worker is not threading.current_thread():
            worker.join()

    def __del__(self) -> None:
        # Dropped after ``break``: leave. Wait for the step in flight only in the thread
        # that read the stream; a collection in another thread (one the step itself may
        # be waiting on, or the worker) must not wait for it.
        if not sys.is_finalizing():
            self._leave(wait=threading.get_ident() == self._reader)


class _Pace:
    """What a sync stream's reader and its run's worker share: the events, and the
    reader's demand. ``gate`` lets the run start a step only when the reader has asked
    for more events than were given (``asked > given``): it is then inside ``next()``,
    waiting, and cannot leave before an event given later reaches it."""

    def __init__(self) -> None:
        self.events: queue.Queue[Any] = queue.Queue()
        self.changed = threading.Condition()
        self.asked = 0
        self.given = 0
        self.gone = False
        self.leaving = Leaving()

    def put(self, item: Any) -> None:
        # Counted as it is queued, under the lock: a gate never sees an event taken by the
        # reader that it has not counted (one written by a tool's own thread, say).
        with self.changed:
            self.given += 1
            self.events.put(item)

    def ask(self) -> Any:
        with self.changed:
            self.asked += 1
            self.changed.notify_all()
        return self.events.get()

    def leave(self) -> None:
        with self.changed:
            self.gone = True
            self.changed.notify_all()
        self.leaving.leave()  # the model call streaming tokens, if any, stops now

    def gate(self) -> None:
        with self.changed:
            self.changed.wait_for(lambda: self.gone or self.asked > self.given)
            if self.gone:
                raise ReaderGone


def _work(run: Callable[[EventSink], AgentResult], sink: EventSink) -> None:
    try:
        result = run(sink)
    except BaseException as exc:
        _end(sink, _Failure(exc))
    else:
        _end(sink, _Finished(result))


def _end(sink: EventSink, last: _Failure | _Finished) -> None:
    """Close ``sink`` to the run's nested writers, then give the reader the run's end."""
    sink.closed = True
    sink.put(last)


class AsyncRunStream(AsyncIterator[StreamEvent]):
    """The async form of ``RunStream``: the run is a task on the running loop, paced by
    its reader in the same way — it starts a step only while the reader awaits an event
    not yet given. ``aclose()`` cancels the run at once, the step in flight included (as
    cancelling an ``ainvoke`` task does), and returns once the run has ended and its thread
    is free. A stream dropped after ``break`` without ``aclose()`` starts no further step
    either and cancels the model call in flight (its task), as ``RunStream`` does;
    another step in flight ends and is saved, then the run ends, freeing its thread as
    soon as the event loop runs its task."""

    def __init__(
        self, run: Callable[[EventSink], Awaitable[AgentResult]], modes: frozenset[str]
    ) -> None:
        self._run = run
        self._modes = modes
        self._pace: _AsyncPace | None = None
        self._task: asyncio.Future[None] | None = None
        self._closed = False
        self.result: AgentResult | None = None

    def _start(self) -> _AsyncPace:
        import asyncio

        pace = _AsyncPace(asyncio.get_running_loop())
        sink = EventSink(self._modes, pace.put)
        sink.gate = pace.gate
        sink.leaving = pace.leaving
        # The task holds the run, the sink and the pace, never this object, so a reader
        # that drops the stream mid-run lets it be collected (and the run stopped).
        self._task = asyncio.ensure_future(_awork(self._run, sink))
        return pace

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._closed or self.result is not None:
            raise StopAsyncIteration
        if self._pace is None:
            self._pace = self._start()
        item = await self._pace.ask()
        if isinstance(item, _Finished):
            self.result = item.result
            raise StopAsyncIteration
        if isinstance(item, _Failure):
            raise item.error
        event: StreamEvent = item
        return event

    async def aclose(self) -> None:
        import asyncio

        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])

    def __del__(self) -> None:
        pace = self._pace
        if pace is not None and self.result is None and not sys.is_finalizing():
            pace.leave_soon()


class _AsyncPace:
    """``_Pace`` on an event loop: the reader and the run's task share its thread, so the
    counts need no lock; events written in other threads are queued (and counted) on it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        import asyncio

        self.loop = loop
        self.thread = threading.get_ident()
        self.events: asyncio.Queue[Any] = asyncio.Queue()
        self.changed = asyncio.Event()
        self.asked = 0
        self.given = 0
        self.gone = False
        self.leaving = Leaving()

    def put(self, item: Any) -> None:
        if threading.get_ident() == self.thread:
            self._put(item)
        else:
            self.loop.call_soon_threadsafe(self._put, item)

    def _put(self, item: Any) -> None:
        self.given += 1
        self.events.put_nowait(item)

    async def ask(self) -> Any:
        self.asked += 1
        self.changed.set()
        try:
            return await self.events.get()
        except BaseException:  # the reader's await was cancelled: it took nothing
            self.asked -= 1
            raise

    def leave(self) -> None:
        self.gone = True
        self.changed.set()
        self.leaving.leave()  # the model call streaming tokens, if any, stops now

    def leave_soon(self) -> None:
        """``leave`` from any thread (a stream collected anywhere)."""
        if threading.get_ident() == self.thread:
            self.leave()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing runs
                self.loop.call_soon_threadsafe(self.leave)

    def gate(self) -> Callable[[], Awaitable[None]] | None:
        if self.gone:
            raise ReaderGone
        return None if self.asked > self.given else self.wait

    async def wait(self) -> None:
        while not self.gone and self.asked <= self.given:
            self.changed.clear()
            await self.changed.wait()
        if self.gone:
            raise ReaderGone


async def _awork(run: Callable[[EventSink], Awaitable[AgentResult]], sink: EventSink) -> None:
    try:
        result = await run(sink)
    except BaseException as exc:
        _end(sink, _Failure(exc))
    else:
        _end(sink, _Finished(result))


def graph_item(event: StreamEvent, several: bool, tools: Collection[str] = ()) -> Any:
    """An event as LangGraph's ``stream(stream_mode=...)`` yields it: ``messages`` mode a
    ``(token, metadata)`` pair, other modes their data; with several modes a
    ``(mode, item)`` pair. LangGraph names the node a tool's result comes from ``"tools"``
    where plait names the tool: in ``messages`` mode, beside the tool's name; in ``updates``
    mode, as the update's key (a tool's update is one from a name in ``tools``, the agent's
    tools, or one holding the tool message of a call to that name: a tool the agent does not
    have answered with an error)."""
    item: Any = event.data
    if event.mode == "messages":
        node = "tools" if getattr(event.data, "type", None) == "tool" else event.source
        item = (event.data, {"langgraph_node": node, "plait_source": event.source})
    elif event.mode == "updates" and not event.path and _from_a_tool(event, tools):
        item = {"tools": event.data[event.source]}
    return (event.mode, item) if several else item


def _from_a_tool(event: StreamEvent, tools: Collection[str]) -> bool:
    update = event.data.get(event.source) if isinstance(event.data, dict) else None
    if not isinstance(update, dict):
        return False
    if event.source in tools:
        return True
    messages = update.get("messages")
    return isinstance(messages, list) and any(
        getattr(m, "type", None) == "tool" and getattr(m, "name", None) == event.source
        for m in messages
    )


class GraphRunStream(Iterator[Any]):
    """``agent.stream(..., stream_mode=...)``: the run's events in LangGraph's shapes
    (``graph_item``; ``tools`` are the agent's tool names); ``result`` holds the
    ``AgentResult`` once they are exhausted."""

    def __init__(self, events: RunStream, several: bool, tools: Collection[str] = ()) -> None:
        self._events = events
        self._several = several
        self._tools = tools

    @property
    def result(self) -> AgentResult | None:
        return self._events.result

    def __iter__(self) -> GraphRunStream:
        return self

    def __next__(self) -> Any:
        return graph_item(next(self._events), self._several, self._tools)

    def close(self) -> None:
        """``RunStream.close``: leave the stream; the run starts no further step."""
        self._events.close()


class GraphAsyncRunStream(AsyncIterator[Any]):
    """The async form of ``GraphRunStream``."""

    def __init__(self, events: AsyncRunStream, several: bool, tools: Collection[str] = ()) -> None:
        self._events = events
        self._several = several
        self._tools = tools

    @property
    def result(self) -> AgentResult | None:
        return self._events.result

    def __aiter__(self) -> GraphAsyncRunStream:
        return self

    async def __anext__(self) -> Any:
        return graph_item(await self._events.__anext__(), self._several, self._tools)

    async def aclose(self) -> None:
        await self._events.aclose()
