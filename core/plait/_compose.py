"""Composing wrap hooks into one handler per call kind, for the sync and the async path.

For middleware ``[A, B, C]`` the handler is ``A(B(C(call)))``. A middleware that has
only the other path's variant is bridged: an async hook on the sync path runs on the
agent's loop thread; a sync hook on the async path runs in a worker thread whose
``handler`` submits the rest of the chain back to the running loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from plait._bridge import LoopThread, submit
from plait._registry import Impl

Normalize = Callable[[Any, Any, str], Any]
Layers = Sequence[tuple[str, Impl | None, Impl | None]]


def chain_sync(
    layers: Layers, innermost: Callable[[Any], Any], normalize: Normalize, loops: LoopThread
) -> Callable[[Any], Any]:
    handler = innermost
    for name, sync, asyn in reversed(layers):
        handler = _sync_layer(name, sync, asyn, handler, normalize, loops)
    return handler


def _sync_layer(
    name: str,
    sync: Impl | None,
    asyn: Impl | None,
    nxt: Callable[[Any], Any],
    normalize: Normalize,
    loops: LoopThread,
) -> Callable[[Any], Any]:
    if sync is not None:
        call = sync.call

        def layer(request: Any) -> Any:
            return normalize(call(request, nxt), request, name)

        return layer
    assert asyn is not None
    acall = asyn.call

    async def async_next(request: Any) -> Any:
        return await asyncio.to_thread(nxt, request)

    def bridged(request: Any) -> Any:
        return normalize(loops.run(acall(request, async_next)), request, name)

    return bridged


def chain_async(
    layers: Layers, innermost: Callable[[Any], Awaitable[Any]], normalize: Normalize
) -> Callable[[Any], Awaitable[Any]]:
    handler = innermost
    for name, sync, asyn in reversed(layers):
        handler = _async_layer(name, sync, asyn, handler, normalize)
    return handler


def _async_layer(
    name: str,
    sync: Impl | None,
    asyn: Impl | None,
    nxt: Callable[[Any], Awaitable[Any]],
    normalize: Normalize,
) -> Callable[[Any], Awaitable[Any]]:
    if asyn is not None:
        acall = asyn.call

        async def layer(request: Any) -> Any:
            return normalize(await acall(request, nxt), request, name)

        return layer
    assert sync is not None
    call = sync.call

    async def bridged(request: Any) -> Any:
        loop = asyncio.get_running_loop()

        def sync_next(inner: Any) -> Any:
            return submit(loop, _awaited(nxt(inner)))

        return normalize(await asyncio.to_thread(call, request, sync_next), request, name)

    return bridged


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


# -- stream transforms ----------------------------------------------------------------------


def transform_sync(
    layers: Layers, chunks: Iterator[Any], request: Any, loops: LoopThread
) -> Iterator[Any]:
    """Pipe ``chunks`` through the transforms, the first middleware outermost."""
    for _name, sync, asyn in reversed(layers):
        if sync is not None:
            chunks = iter(sync.call(chunks, request))
        else:
            assert asyn is not None
            chunks = _async_transform_on_sync(asyn, chunks, request, loops)
    return chunks


def _async_transform_on_sync(
    impl: Impl, chunks: Iterator[Any], request: Any, loops: LoopThread
) -> Iterator[Any]:
    async def source() -> AsyncIterator[Any]:
        done = object()
        while (item := await asyncio.to_thread(next, chunks, done)) is not done:
            yield item

    agen = impl.call(source(), request)
    while True:
        try:
            yield loops.run(agen.__anext__())
        except StopAsyncIteration:
            return


def transform_async(layers: Layers, chunks: AsyncIterator[Any], request: Any) -> AsyncIterator[Any]:
    for _name, sync, asyn in reversed(layers):
        if asyn is not None:
            chunks = aiter(asyn.call(chunks, request))
        else:
            assert sync is not None
            chunks = _sync_transform_on_async(sync, chunks, request)
    return chunks


async def _sync_transform_on_async(
    impl: Impl, chunks: AsyncIterator[Any], request: Any
) -> AsyncIterator[Any]:
    # A sync generator cannot pull from an async source without blocking the loop, so
    # it gets the chunks gathered so far and runs in a worker thread.
    received = [chunk async for chunk in chunks]
    produced = await asyncio.to_thread(lambda: list(impl.call(iter(received), request)))
    for chunk in produced:
        yield chunk
