"""The performer stack: installing performers for a context and running an effect
through them. The effects themselves are declared beside what they describe
(``ModelCall`` with ``ChatModel``, ``ToolRun`` with ``ToolCallRequest``); ``plait.effects``
is the public name of all of it."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol, TypeVar

__all__ = ["Effect", "Performer", "active", "aperform", "perform", "performing"]

T = TypeVar("T")


class Effect:
    """What the kernel hands a performer: a model call (``ModelCall``) or a tool run
    (``ToolRun``). A plain base (the effects are attrs classes): it has no fields, and an
    attrs class compiles methods at import that would compare and show none."""

    __slots__ = ()


class Performer(Protocol):
    """Performs effects. Both methods must call ``proceed`` at most once, or return what
    an earlier call of it returned (a recorded result)."""

    def perform(self, effect: Effect, proceed: Callable[[], T]) -> T: ...

    async def aperform(self, effect: Effect, proceed: Callable[[], Awaitable[T]]) -> T: ...


_performers: contextvars.ContextVar[tuple[Performer, ...]] = contextvars.ContextVar(
    "plait_performers", default=()
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
    if not performers:
        return proceed()

    def step(index: int) -> T:
        if index == len(performers):
            return proceed()
        return performers[index].perform(effect, lambda: step(index + 1))

    return step(0)


async def aperform(effect: Effect, proceed: Callable[[], Awaitable[T]]) -> T:
    """The async form of ``perform``."""
    performers = _performers.get()
    if not performers:
        return await proceed()

    async def step(index: int) -> T:
        if index == len(performers):
            return await proceed()
        return await performers[index].aperform(effect, lambda: step(index + 1))

    return await step(0)
