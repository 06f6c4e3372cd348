"""The loop's effects on the world — model calls and tool runs — and the seam where a
plugin performs them.

The kernel never calls a provider or a tool function directly: it describes the call as
an effect (``ModelCall``, ``ToolRun``) and hands it, with a ``proceed`` function that
makes the call, to the performers installed for the current context. With none
installed (the common case) ``proceed`` runs at once. A performer may run ``proceed``
inside a trace span, record its result as a durable step and return the recorded result
on replay, and so on. ``id_source`` makes the ids of runs and messages come from the
performer too, so a replayed run produces the same ids.

Every call of a ``ChatModel``'s ``invoke``/``ainvoke``/``stream``/``astream`` is a
``ModelCall`` — the agent's own, each fallback or retry attempt, and those middleware
make (summaries, tool selection, emulation, sub-agents). A model call made while
performing another (a provider's ``stream`` built on its ``invoke``) is part of it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

import attrs

from plait._ids import id_source, new_id

if TYPE_CHECKING:
    from plait.messages import AnyMessage
    from plait.models.base import ChatModel
    from plait.types import ToolCallRequest

__all__ = [
    "Effect",
    "ModelCall",
    "Performer",
    "ToolRun",
    "active",
    "aperform",
    "id_source",
    "new_id",
    "perform",
    "performing",
]

T = TypeVar("T")


@attrs.frozen
class ModelCall:
    """One call of a chat model.

    ``proceed()`` returns the ``AIMessage``; when ``streaming``, an iterator (async
    iterator for ``aperform``) of ``AIMessageChunk`` — and the performer returns an
    iterable (async iterable) of chunks.
    """

    model: ChatModel
    messages: Sequence[AnyMessage]
    options: Mapping[str, Any]
    streaming: bool = False


@attrs.frozen
class ToolRun:
    """One run of a tool function, inside every ``wrap_tool_call`` hook; ``proceed()``
    returns the ``ToolMessage`` or ``Command`` answering the call."""

    request: ToolCallRequest


Effect: TypeAlias = ModelCall | ToolRun


class Performer(Protocol):
    """Performs effects. Both methods must call ``proceed`` at most once, or return what
    an earlier call of it returned (a recorded result)."""

    def perform(self, effect: Effect, proceed: Callable[[], T]) -> T: ...

    async def aperform(self, effect: Effect, proceed: Callable[[], Awaitable[T]]) -> T: ...


_performers: contextvars.ContextVar[tuple[Performer, ...]] = contextvars.ContextVar(
    "plait_performers", default=()
)
_in_model_call: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "plait_in_model_call", default=False
)


@contextlib.contextmanager
def performing(performer: Performer) -> Iterator[None]:
    """Install ``performer`` for the code in the ``with`` block (and the tasks and
    threads the kernel starts from it). The first installed is outermost."""
    token = _performers.set((*_performers.get(), performer))
    try:
        yield
    finally:
        _performers.reset(token)


def active() -> bool:
    """Whether a performer is installed (the kernel's fast path skips effects if not)."""
    return bool(_performers.get())


def perform(effect: Effect, proceed: Callable[[], T]) -> T:
    """Run ``proceed`` through the installed performers, first outermost."""
    performers = _performers.get()
    if not performers or (isinstance(effect, ModelCall) and _in_model_call.get()):
        return proceed()

    def step(index: int) -> T:
        if index == len(performers):
            return proceed()
        return performers[index].perform(effect, lambda: step(index + 1))

    return step(0)


async def aperform(effect: Effect, proceed: Callable[[], Awaitable[T]]) -> T:
    """The async form of ``perform``."""
    performers = _performers.get()
    if not performers or (isinstance(effect, ModelCall) and _in_model_call.get()):
        return await proceed()

    async def step(index: int) -> T:
        if index == len(performers):
            return await proceed()
        return await performers[index].aperform(effect, lambda: step(index + 1))

    return await step(0)


# -- model calls: used by ChatModel, which routes every call of a provider through here --


def call_model(effect: ModelCall, call: Callable[[], T]) -> T:
    def proceed() -> T:
        token = _in_model_call.set(True)
        try:
            return call()
        finally:
            _in_model_call.reset(token)

    return perform(effect, proceed)


async def acall_model(effect: ModelCall, call: Callable[[], Awaitable[T]]) -> T:
    async def proceed() -> T:
        token = _in_model_call.set(True)
        try:
            return await call()
        finally:
            _in_model_call.reset(token)

    return await aperform(effect, proceed)


def stream_model(effect: ModelCall, start: Callable[[], Iterator[T]]) -> Iterator[T]:
    """The chunks of a streamed model call, performed when the first one is asked for."""
    yield from perform(effect, lambda: _guarded(start()))


async def astream_model(
    effect: ModelCall, start: Callable[[], AsyncIterator[T]]
) -> AsyncIterator[T]:
    async def proceed() -> AsyncIterator[T]:
        return _aguarded(start())

    async for chunk in _aiter(await aperform(effect, proceed)):
        yield chunk


def _guarded(chunks: Iterator[T]) -> Iterator[T]:
    while True:
        token = _in_model_call.set(True)
        try:
            chunk = next(chunks)
        except StopIteration:
            return
        finally:
            _in_model_call.reset(token)
        yield chunk


async def _aguarded(chunks: AsyncIterator[T]) -> AsyncIterator[T]:
    while True:
        token = _in_model_call.set(True)
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        finally:
            _in_model_call.reset(token)
        yield chunk


async def _aiter(chunks: Any) -> AsyncIterator[Any]:
    """What a performer returned for an async stream: an async iterable, or a plain one
    (chunks recorded earlier)."""
    if hasattr(chunks, "__aiter__"):
        async for chunk in chunks:
            yield chunk
    else:
        for chunk in chunks:
            yield chunk
