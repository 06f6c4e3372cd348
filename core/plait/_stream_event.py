"""``StreamEvent``, one item of ``agent.stream`` (``plait.types`` exports it). Only a
streamed run makes any, so the class is made when one first is, not when ``plait`` is
imported."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from plait.lazy import frozen

__all__ = ["StreamEvent"]


def _path(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(ids)


@frozen
class StreamEvent:
    """One item of ``agent.stream``: ``mode`` (updates, messages, values, custom), the
    ``data`` and the ``source`` (the node, middleware or tool that produced it).

    ``path`` says which run produced it: ``()`` for the streamed run itself; for a run
    nested in it, the ids of the tool calls it was started in, outermost first
    (``("call_1",)``, ``("call_1", "call_7")``): a ``task`` sub-agent's or a background
    task's is its ``task``/``start_task`` call, a handoff's receiving agent's the
    ``transfer_to_<name>`` call (``plait.nesting.nest`` names any other).
    """

    mode: str
    data: Any
    source: str
    path: tuple[str, ...] = attrs.field(default=(), converter=_path)
    step: int | None = attrs.field(default=None, kw_only=True)
    """A ``values`` event of a saved thread: the step it is the state after (what
    ``agent.get_state(thread_id, step)`` reads back)."""
    shown: tuple[Any, ...] | None = attrs.field(default=None, kw_only=True)
    """An ``updates`` event's messages as its caller reads them, where a ``show_messages``
    hook changed any (``pii`` shows real values where the update holds placeholders);
    ``data`` is the update as the thread keeps it. ``plait serve``'s run log records
    these."""
