"""``Interrupt``, a pending question of a paused run (``plait.types`` exports it). Only a
run that pauses, or reads a paused one back, makes any, so the class is made then, not
when ``plait`` is imported."""

from __future__ import annotations

from typing import Any

from plait.lazy import frozen

__all__ = ["Interrupt"]


@frozen
class Interrupt:
    """A pending question from ``plait.interrupt(value)``; answer it with
    ``Command(resume=...)`` (or ``{interrupt.id: answer}``)."""

    id: str
    value: Any
