"""Stream transport: how a run's events reach whoever streams it.

The loop writes ``StreamEvent``s to an ``EventSink``; ``RunStream`` (sync, the run in a
worker thread) and ``AsyncRunStream`` (a task on the running loop) hand them to the
caller as they happen, then hold the run's result.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs

from plait.errors import ConfigError
from plait.types import AgentResult, StreamEvent

if TYPE_CHECKING:
    import asyncio
    import queue

__all__ = [
    "STREAM_MODES",
    "AsyncRunStream",
    "EventSink",
    "GraphAsyncRunStream",
    "GraphRunStream",
    "RunStream",
    "stream_sink",
]

STREAM_MODES = ("updates", "messages", "values", "custom")


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

        def write(data: Any) -> None:
            self(StreamEvent("custom", data, "custom"))

        return write


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


@attrs.frozen
class ToolCallScope:
    """Where a run starting in this context nests: below a tool call in progress (or a
    name given to ``plait.nesting.nest``) of a run."""

    below: tuple[str, ...]
    """The path below the run whose ``sink`` this is: ``(tool call id,)``."""
    path: tuple[str, ...]
    """The path from the outermost run (``RunUsage.path``): the run's own plus ``below``."""
    sink: EventSink | None


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


def parse_modes(mode: str | Sequence[str]) -> frozenset[str]:
    modes = frozenset((mode,) if isinstance(mode, str) else mode)
    unknown = modes - set(STREAM_MODES)
    if unknown or not modes:
        raise ConfigError(
            f"unknown stream mode(s) {sorted(unknown)}; choose from {', '.join(STREAM_MODES)}"
        )
    return modes


@attrs.frozen
class _Failure:
    error: BaseException


@attrs.frozen
class _Finished:
    result: AgentResult


class RunStream(Iterator[StreamEvent]):
    """The events of a streamed run, as they happen; the run starts on the first
    ``next()`` (in a worker thread, so tokens arrive while the model works) and, once the
    events are exhausted, ``result`` holds its ``AgentResult``."""

    def __init__(self, run: Callable[[EventSink], AgentResult], modes: frozenset[str]) -> None:
        import queue  # here: only a streamed run needs it

        self._run = run
        self._events: queue.Queue[Any] = queue.Queue()
        self._sink = EventSink(modes, self._events.put)
        self._started = False
        self.result: AgentResult | None = None

    def _work(self) -> None:
        try:
            result = self._run(self._sink)
        except BaseException as exc:
            self._sink.closed = True
            self._events.put(_Failure(exc))
        else:
            self._sink.closed = True
            self._events.put(_Finished(result))

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> StreamEvent:
        if not self._started:
            self._started = True
            context = contextvars.copy_context()
            threading.Thread(
                target=context.run, args=(self._work,), name="plait-stream", daemon=True
            ).start()
        if self.result is not None:
            raise StopIteration
        try:
            item = self._events.get()
        except BaseException:  # Ctrl-C while waiting: the run cannot go on for anyone
            self._sink.abort()
            raise
        if isinstance(item, _Finished):
            self.result = item.result
            raise StopIteration
        if isinstance(item, _Failure):
            raise item.error
        event: StreamEvent = item
        return event


class AsyncRunStream(AsyncIterator[StreamEvent]):
    """The async form of ``RunStream``: the run is a task on the running loop, cancelled
    if the stream is closed early."""

    def __init__(
        self, run: Callable[[EventSink], Awaitable[AgentResult]], modes: frozenset[str]
    ) -> None:
        self._run = run
        self._modes = modes
        self._events: asyncio.Queue[Any] | None = None
        self._task: asyncio.Future[None] | None = None
        self.result: AgentResult | None = None

    def _start(self) -> asyncio.Queue[Any]:
        import asyncio

        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()
        loop_thread = threading.get_ident()

        def put(event: Any) -> None:
            if threading.get_ident() == loop_thread:
                events.put_nowait(event)
            else:
                loop.call_soon_threadsafe(events.put_nowait, event)

        async def work() -> None:
            sink = EventSink(self._modes, put)
            try:
                result = await self._run(sink)
            except BaseException as exc:
                sink.closed = True
                put(_Failure(exc))
            else:
                sink.closed = True
                put(_Finished(result))

        self._task = asyncio.ensure_future(work())
        return events

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._events is None:
            self._events = self._start()
        if self.result is not None:
            raise StopAsyncIteration
        item = await self._events.get()
        if isinstance(item, _Finished):
            self.result = item.result
            raise StopAsyncIteration
        if isinstance(item, _Failure):
            raise item.error
        event: StreamEvent = item
        return event

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


def graph_item(event: StreamEvent, several: bool) -> Any:
    """An event as LangGraph's ``stream(stream_mode=...)`` yields it: ``messages`` mode a
    ``(token, metadata)`` pair, other modes their data; with several modes a
    ``(mode, item)`` pair."""
    item: Any = event.data
    if event.mode == "messages":
        # LangGraph names the node: "model" for chunks, "tools" for tool messages (plait's
        # source, the tool's name, is kept beside it).
        node = "tools" if getattr(event.data, "type", None) == "tool" else event.source
        item = (event.data, {"langgraph_node": node, "plait_source": event.source})
    return (event.mode, item) if several else item


class GraphRunStream(Iterator[Any]):
    """``agent.stream(..., stream_mode=...)``: the run's events in LangGraph's shapes
    (``graph_item``); ``result`` holds the ``AgentResult`` once they are exhausted."""

    def __init__(self, events: RunStream, several: bool) -> None:
        self._events = events
        self._several = several

    @property
    def result(self) -> AgentResult | None:
        return self._events.result

    def __iter__(self) -> GraphRunStream:
        return self

    def __next__(self) -> Any:
        return graph_item(next(self._events), self._several)


class GraphAsyncRunStream(AsyncIterator[Any]):
    """The async form of ``GraphRunStream``."""

    def __init__(self, events: AsyncRunStream, several: bool) -> None:
        self._events = events
        self._several = several

    @property
    def result(self) -> AgentResult | None:
        return self._events.result

    def __aiter__(self) -> GraphAsyncRunStream:
        return self

    async def __anext__(self) -> Any:
        return graph_item(await self._events.__anext__(), self._several)

    async def aclose(self) -> None:
        await self._events.aclose()
