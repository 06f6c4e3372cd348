"""Running an agent as part of the run in progress.

A run started inside a tool call of another run (a sub-agent behind a tool) is nested in
it by the kernel: its model calls count in the outer run's usage ledger and against its
limits (``plait.usage``), and its events reach the outer run's stream with
``StreamEvent.path`` prefixed by the tool call's id. ``nest`` gives the same to a run
started elsewhere in a run: in a ``wrap_model_call`` hook (a handoff's receiving agent
answering the model call), or in an asyncio task a tool starts (a background sub-agent,
which copies the tool call's context instead).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from plait._stream import ToolCallScope, in_tool_call, run_sink
from plait.usage import current

__all__ = ["nest"]


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
