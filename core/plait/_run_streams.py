"""A streamed run handed to its caller: ``RunStream`` (sync, the run in a worker thread)
and ``AsyncRunStream`` (a task on the running loop) give its events as they happen, then
hold its result; the ``Graph`` forms give them in LangGraph's shapes.

Imported when a run is streamed (``agent.stream``/``astream``): a run that is not never
pays for these classes.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from plait._stream import EventSink
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
    events are exhausted, ``result`` holds its ``AgentResult``."""

    def __init__(self, run: Callable[[EventSink], AgentResult], modes: frozenset[str]) -> None:
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
