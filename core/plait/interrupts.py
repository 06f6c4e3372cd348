"""``plait.interrupt``: pause a run for an answer from outside, resume it later."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from plait.errors import PlaitError

if TYPE_CHECKING:
    from plait._interrupt import Interrupt

__all__ = ["interrupt"]


class InterruptSignal(BaseException):
    """Raised by ``interrupt`` to unwind to the kernel. A ``BaseException`` so that
    ``except Exception`` in tools and retry middleware never swallows it."""

    def __init__(self, interrupt: Interrupt) -> None:
        super().__init__(interrupt)
        self.interrupt = interrupt


class Scope:
    """Where ``interrupt`` is being called: its ids derive from ``key``, and answers
    given on resume are found in ``resume`` by id; ``counter`` counts the calls so far.
    A plain class rather than an attrs class: nothing compares or shows one, and it is
    made at import, where an attrs class compiles its methods."""

    __slots__ = ("counter", "key", "resume", "run_id")

    def __init__(self, run_id: str, key: str, resume: Mapping[str, Any]) -> None:
        self.run_id = run_id
        self.key = key
        self.resume = resume
        self.counter = 0


current_scope: ContextVar[Scope | None] = ContextVar("plait_interrupt_scope", default=None)


def interrupt_id(run_id: str, key: str, index: int) -> str:
    import hashlib  # here: only a run that pauses needs it (importing it costs ~2 ms)

    return hashlib.sha1(f"{run_id}:{key}:{index}".encode()).hexdigest()[:16]


def interrupt(value: Any) -> Any:
    """Pause the run with ``value`` (JSON-serializable) for a human or another system.

    The run stops, its state is checkpointed, and ``invoke`` returns a result whose
    ``interrupts`` holds ``Interrupt(id, value)``. ``agent.invoke(Command(resume=answer),
    thread_id=...)`` runs the same hook (or tool) again from its start, and this call then
    returns ``answer``. Several calls in one hook are answered in order.
    """
    scope = current_scope.get()
    if scope is None:
        raise PlaitError("plait.interrupt() can only be called inside a hook or a tool of a run")
    iid = interrupt_id(scope.run_id, scope.key, scope.counter)
    scope.counter += 1
    if iid in scope.resume:
        return scope.resume[iid]
    from plait._interrupt import Interrupt  # a pausing run's: made on first use

    raise InterruptSignal(Interrupt(iid, value))
