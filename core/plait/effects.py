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

This module is where performer authors look; each name is defined where it belongs —
the performer stack in ``plait._performers``, ``ModelCall`` beside ``ChatModel``,
``ToolRun`` beside ``ToolCallRequest`` — so the kernel's modules import each other
without a cycle.
"""

from __future__ import annotations

from plait._ids import id_source, new_id
from plait._performers import Effect, Performer, active, aperform, perform, performing
from plait.models.base import ModelCall
from plait.types import ToolRun

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
