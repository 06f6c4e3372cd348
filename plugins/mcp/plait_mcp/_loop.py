"""The event loop every MCP session of the process lives on.

Each session is entered and exited by one task on this loop (the SDK's sessions are anyio
task groups: closing one from another task fails with "exit cancel scope in a different
task"). Calls from any thread or event loop are submitted here, so a session is shared by
sync and async callers alike. At interpreter exit the live sessions are closed before the
loop stops, so no subprocess or HTTP session is left behind and nothing warns.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_closers: weakref.WeakSet[Any] = weakref.WeakSet()
"""Objects with an ``aclose()`` coroutine to run at exit (the live connections)."""


def loop() -> asyncio.AbstractEventLoop:
    """The loop, started on a daemon thread on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None:
            started = asyncio.new_event_loop()
            _thread = threading.Thread(target=started.run_forever, name="plait-mcp", daemon=True)
            _thread.start()
            atexit.register(_shutdown)
            _loop = started
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    return asyncio.run_coroutine_threadsafe(coro, loop())


def on_loop() -> bool:
    """Whether the caller is on the MCP loop's thread (where blocking would deadlock)."""
    return _thread is not None and threading.current_thread() is _thread


async def arun(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Await ``make()`` on the MCP loop from whatever loop the caller runs; cancelling the
    caller cancels the work."""
    return await asyncio.wrap_future(submit(make()))


def run(awaitable: Awaitable[T], timeout: float | None = None) -> T:
    """Block this (non-loop) thread until ``awaitable`` finishes on the MCP loop."""

    async def wrapper() -> T:
        return await awaitable

    return submit(wrapper()).result(timeout)


def close_at_exit(closer: Any) -> None:
    _closers.add(closer)


def _shutdown() -> None:
    running = _loop
    if running is None or not running.is_running():
        return
    closers = list(_closers)
    if closers:

        async def close_all() -> None:
            await asyncio.gather(*(c.aclose() for c in closers), return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(close_all(), running).result(10)
        except Exception:
            pass
    running.call_soon_threadsafe(running.stop)
