"""Crossing between sync and async code without blocking an event loop.

The sync path runs async hooks and tools on an event-loop thread the agent owns (never
``asyncio.run`` inside a running loop); the async path runs sync ones in worker threads
whose handlers submit back to the loop. Context variables travel both ways.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import weakref
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures

T = TypeVar("T")


def submit(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], *, on_leave: bool = False
) -> T:
    """Run ``coro`` on ``loop`` (from another thread) in this thread's context; wait.
    ``on_leave``: if the reader of the run's stream leaves meanwhile, the task is
    cancelled and the wait ends as ``ReaderGone`` (``StopOnLeave``)."""
    import concurrent.futures

    context = contextvars.copy_context()
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    started: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coro, context=context)
        started.append(task)

        def done(t: asyncio.Task[T]) -> None:
            if t.cancelled():
                future.cancel()
            elif (exc := t.exception()) is not None:
                future.set_exception(exc)
            else:
                future.set_result(t.result())

        task.add_done_callback(done)

    if not on_leave:
        loop.call_soon_threadsafe(start)
        return future.result()
    from plait._stream import StopOnLeave

    def cancel() -> None:  # on the loop, after ``start``: the task exists
        for task in started:
            task.cancel()

    def stop() -> None:  # in the reader's thread
        loop.call_soon_threadsafe(cancel)

    try:
        with StopOnLeave(stop):
            loop.call_soon_threadsafe(start)
            return future.result()
    except BaseException:
        if not started:
            coro.close()  # never started (the reader had left): no never-awaited warning
        raise


class LoopThread:
    """A lazily started event loop on a daemon thread, for async code on the sync path.

    ``close()`` (``agent.close()``) stops the loop and joins its thread; a loop thread
    nobody closed is stopped when its owner is garbage-collected, so agents built per
    request leave no thread behind. A closed one starts a fresh loop if used again."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: weakref.finalize[Any, Any] | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="plait-event-loop", daemon=True
                )
                thread.start()
                self._loop = loop
                self._stop = weakref.finalize(self, _stop_loop, loop, thread)
                self._stop.atexit = False  # a daemon thread: exit does not wait for it
            return self._loop

    @property
    def running(self) -> bool:
        """Whether the loop's thread is running (it starts on first use)."""
        return self._loop is not None

    def run(self, awaitable: Awaitable[T], *, on_leave: bool = False) -> T:
        """``awaitable``'s result, run on the loop; ``on_leave`` as for ``submit``."""

        began = False

        async def wrapper() -> T:
            nonlocal began
            began = True
            return await awaitable

        try:
            return submit(self.loop, wrapper(), on_leave=on_leave)
        except BaseException:
            if not began and isinstance(awaitable, Coroutine):
                awaitable.close()  # cancelled before it began: no never-awaited warning
            raise

    def close(self) -> None:
        """Stop the loop and join its thread."""
        with self._lock:
            stop, self._stop, self._loop = self._stop, None, None
        if stop is not None:
            stop()


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    """Cancel what still runs on ``loop`` (a sync caller waiting on it gets the
    cancellation, not a wait that never ends), stop it and join its thread."""
    import asyncio

    if thread is threading.current_thread():  # dropped by a coroutine on the loop itself
        loop.call_soon(loop.stop)
        return

    async def shutdown() -> None:
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        loop.stop()

    try:
        asyncio.run_coroutine_threadsafe(shutdown(), loop)
    except RuntimeError:  # already closed
        return
    thread.join(timeout=5)
    if not thread.is_alive():
        loop.close()


def resolve(value: Any, loops: LoopThread) -> Any:
    """``value``, or its result if it is awaitable (run on the agent's loop thread).

    A sync run never imports asyncio for this check: a coroutine is recognised without
    it, and an ``asyncio.Future`` cannot exist unless asyncio was imported."""
    asyncio = sys.modules.get("asyncio")
    if isinstance(value, Coroutine) or (asyncio is not None and isinstance(value, asyncio.Future)):
        return loops.run(value)
    return value
