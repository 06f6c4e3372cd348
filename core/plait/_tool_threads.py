"""Running a sync tool function off the caller's thread, and within a time limit.

A call past its limit is abandoned, not killed (Python cannot stop a thread): it goes on
in a daemon thread of its own whose result is dropped, so it holds no pool worker and
does not keep the interpreter from exiting.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from plait.errors import ToolTimeoutError

if TYPE_CHECKING:
    import concurrent.futures


def call(func: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call a sync tool. A ``StopIteration`` cannot cross back into an event loop (the
    awaiting task would hang), so it comes back as a ``RuntimeError``."""
    try:
        return func(**kwargs)
    except StopIteration as exc:
        detail = f": {exc}" if str(exc) else ""
        raise RuntimeError(f"the tool raised StopIteration{detail}") from exc


def _timed_out(name: str, limit: float) -> ToolTimeoutError:
    return ToolTimeoutError(
        f"tool {name!r} did not finish within its timeout of {limit:g} s; the call was abandoned"
    )


def _start(func: Callable[..., Any], kwargs: dict[str, Any]) -> concurrent.futures.Future[Any]:
    import concurrent.futures

    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_running_or_notify_cancel()  # running: a waiter giving up cannot cancel it
    context = contextvars.copy_context()

    def work() -> None:
        try:
            result = context.run(call, func, kwargs)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=work, name=f"plait-tool-{func.__name__}", daemon=True).start()
    return future


def call_within(func: Callable[..., Any], kwargs: dict[str, Any], name: str, limit: float) -> Any:
    """Call a sync tool in a thread of its own, waiting at most ``limit`` seconds."""
    import concurrent.futures

    future = _start(func, kwargs)
    try:
        return future.result(timeout=limit)
    except concurrent.futures.TimeoutError:
        raise _timed_out(name, limit) from None


async def acall_within(
    func: Callable[..., Any], kwargs: dict[str, Any], name: str, limit: float
) -> Any:
    """The async form of ``call_within``: the event loop is never blocked."""
    import asyncio

    future = _start(func, kwargs)
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), limit)
    except TimeoutError:
        raise _timed_out(name, limit) from None


async def await_within(awaitable: Awaitable[Any], name: str, limit: float) -> Any:
    """Await an async tool's call, cancelling it after ``limit`` seconds."""
    import asyncio

    try:
        return await asyncio.wait_for(awaitable, limit)
    except TimeoutError:
        raise _timed_out(name, limit) from None
