"""Running an agent as part of the run in progress.

A run started inside a tool call of another run (a sub-agent behind a tool) is nested in
it by the kernel: its model calls count in the outer run's usage ledger and against its
limits (``plait.usage``), and its events reach the outer run's stream with
``StreamEvent.path`` prefixed by the tool call's id. ``nest`` gives the same to a run
started elsewhere in a run: in a ``wrap_model_call`` hook (a handoff's receiving agent
answering the model call). ``detached_context`` carries where a run nests into a task
that outlives the call that started it (a background sub-agent). ``emit`` and
``stream_modes`` let a run plait does not run itself (a remote agent's) stream there too,
``count`` count its usage there.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs

from plait import usage
from plait._stream import EventSink, ToolCallScope, in_tool_call, run_sink
from plait.usage import RunUsage, current

if TYPE_CHECKING:
    from plait.messages import Usage
    from plait.types import StreamEvent

__all__ = ["count", "detached_context", "emit", "nest", "stream_modes"]


@contextlib.contextmanager
def nest(name: str) -> Iterator[tuple[str, ...]]:
    """Runs started inside the ``with`` block are nested in the run in progress, under
    ``name`` (a tool call's id, by convention: the call that led to them).

    Their usage counts in the run's ledger (``result.usage``), reported per nested run in
    ``RunUsage.nested`` under their path; the run's ``usage_limit`` and
    ``model_call_limit`` refuse their model calls (unless started inside
    ``plait.usage.exempt``); their events reach the run's stream, in every mode, with
    ``StreamEvent.path`` starting with ``name``. Inside a tool call they nest below the
    call: the path is ``(call id, name)``. Outside a run the block changes nothing.

    Yields the nested runs' path from the outermost run (``()`` outside a run)::

        with plait.nesting.nest(call_id):
            result = other_agent.invoke(messages)
    """
    ledger = current()
    if ledger is None:
        yield ()
        return
    call = in_tool_call.get()
    if call is not None:
        scope = ToolCallScope((*call.below, name), (*call.path, name), call.sink)
    else:
        scope = ToolCallScope((name,), (*ledger.path, name), run_sink.get())
    token = in_tool_call.set(scope)
    try:
        yield scope.path
    finally:
        in_tool_call.reset(token)


def detached_context() -> contextvars.Context:
    """A fresh context holding only where a run started here would nest, for a task that
    may outlive the call that starts it (``loop.create_task(work,
    context=detached_context())``): a run the task starts nests as if started here.

    Its model calls count in the run's ledger and its limits refuse them, even after the
    run has ended (the ledger keeps counting what the run started; its ``result.usage``,
    already returned, does not change); its events reach the run's stream while that
    stream is open, then stop. Nothing else of this context is carried (tracing spans, a
    durable workflow, interrupt scopes): they end with the call."""
    call, sink = in_tool_call.get(), run_sink.get()
    ledger, exempt = usage._current.get(), usage._exempt.get()

    def enter() -> None:
        in_tool_call.set(call)
        run_sink.set(sink)
        usage._current.set(ledger)
        usage._exempt.set(exempt)

    context = contextvars.Context()
    context.run(enter)
    return context


def _here() -> tuple[EventSink | None, tuple[str, ...]]:
    """The open sink a run nested here would stream to, and the path below it."""
    call = in_tool_call.get()
    sink, below = (call.sink, call.below) if call is not None else (run_sink.get(), ())
    if sink is None or sink.closed:
        return None, ()
    return sink, below


def stream_modes() -> frozenset[str]:
    """The stream modes an event passed to ``emit`` here would reach: those of the run in
    progress's stream while it is open, none if the run is not streamed (or outside a
    run). A remote agent's run asks its server for these only."""
    sink, _ = _here()
    return sink.modes if sink is not None else frozenset()


def emit(event: StreamEvent) -> None:
    """Put ``event`` on the run in progress's stream as an event of a run nested here, for
    a run plait does not run itself (a remote agent's, re-streamed as it arrives): inside
    a tool call its ``path`` is prefixed with the call's id (inside ``nest(name)``, with
    ``name``), as a nested run's events are. Dropped if the stream does not read its
    ``mode``, has ended, or the run is not streamed::

        plait.nesting.emit(StreamEvent("custom", {"progress": 0.5}, "custom"))
    """
    sink, below = _here()
    if sink is not None:
        sink(attrs.evolve(event, path=(*below, *event.path)))


def count(spent: Usage, *, calls: int = 0) -> None:
    """Count ``spent`` (of ``calls`` model calls) in the run in progress's ledger as the
    usage of a run nested here, for a run plait did not run in this process (a durable
    background task's run in a worker, its usage read from its run log): it is in the
    run's ``result.usage`` (if the run has not ended yet) and in ``RunUsage.nested``
    under this tool call's path, and it counts against the run's limits from then on,
    as a nested run's model calls would. Outside a run nothing happens."""
    ledger = current()
    if ledger is None:
        return
    call = in_tool_call.get()
    RunUsage(parent=ledger, path=call.path if call is not None else ledger.path).add(
        spent, calls=calls
    )
