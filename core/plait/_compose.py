"""Composing wrap hooks into one handler per call kind, for the sync and the async path.

For middleware ``[A, B, C]`` the handler is ``A(B(C(call)))``. A middleware that has
only the other path's variant is bridged: an async hook on the sync path runs on the
agent's loop thread; a sync hook on the async path runs in a worker thread whose
``handler`` submits the rest of the chain back to the running loop.

A ``ConfigError``/``FieldError`` a hook raises gets its plugin's name (``_plugin_errors``):
each layer names what escapes its hook, the innermost call marks what escapes it as no
hook's, so an error is named by the layer that raised it, once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from plait._bridge import LoopThread, submit
from plait._plugin_errors import NAMEABLE, innermost_async, innermost_sync, raise_named
from plait._registry import Impl

Normalize = Callable[[Any, Any, str], Any]
Layers = Sequence[tuple[str, Impl | None, Impl | None]]


def chain_sync(
    layers: Layers, innermost: Callable[[Any], Any], normalize: Normalize, loops: LoopThread
) -> Callable[[Any], Any]:
    if not layers:
        return innermost
    handler = innermost_sync(innermost)
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
        call, owner = sync.call, sync.owner

        def layer(request: Any) -> Any:
            try:
                result = call(request, nxt)
            except NAMEABLE as exc:
                raise_named(exc, name, owner)
            return normalize(result, request, name)

        return layer
    assert asyn is not None
    acall, aowner = asyn.call, asyn.owner

    async def async_next(request: Any) -> Any:
        import asyncio

        return await asyncio.to_thread(nxt, request)

    def bridged(request: Any) -> Any:
        try:
            result = loops.run(acall(request, async_next))
        except NAMEABLE as exc:
            raise_named(exc, name, aowner)
        return normalize(result, request, name)

    return bridged


def chain_async(
    layers: Layers, innermost: Callable[[Any], Awaitable[Any]], normalize: Normalize
) -> Callable[[Any], Awaitable[Any]]:
    if not layers:
        return innermost
    handler = innermost_async(innermost)
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
        acall, aowner = asyn.call, asyn.owner

        async def layer(request: Any) -> Any:
            try:
                result = await acall(request, nxt)
            except NAMEABLE as exc:
                raise_named(exc, name, aowner)
            return normalize(result, request, name)

        return layer
    assert sync is not None
    call, owner = sync.call, sync.owner

    async def bridged(request: Any) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()

        def sync_next(inner: Any) -> Any:
            return submit(loop, _awaited(nxt(inner)))

        try:
            result = await asyncio.to_thread(call, request, sync_next)
        except NAMEABLE as exc:
            raise_named(exc, name, owner)
        return normalize(result, request, name)

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
        import asyncio

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
    import asyncio

    received = [chunk async for chunk in chunks]
    produced = await asyncio.to_thread(lambda: list(impl.call(iter(received), request)))
    for chunk in produced:
        yield chunk
