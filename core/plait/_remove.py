"""``RemoveMessage``, the state update that deletes a message (``plait.messages`` exports
it). Only a middleware that trims the thread (summarization) makes one, so the class is
made when first used, not when ``plait`` is imported."""

from __future__ import annotations

from typing import ClassVar

from plait.lazy import frozen

__all__ = ["RemoveMessage"]


@frozen
class RemoveMessage:
    """A state update that deletes the message with ``id`` (``REMOVE_ALL``: every one)."""

    id: str
    type: ClassVar[str] = "remove"
