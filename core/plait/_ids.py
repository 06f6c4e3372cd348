"""Where run, thread and message ids come from: random by default, or from the
``id_source`` a performer installs so that a replayed run gets the same ids.

Re-exported by ``plait.effects``; its own module so that ``plait.messages`` (every
message gets an id) depends on nothing above it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator

_ids: contextvars.ContextVar[Callable[[], str] | None] = contextvars.ContextVar(
    "plait_ids", default=None
)


@contextlib.contextmanager
def id_source(factory: Callable[[], str]) -> Iterator[None]:
    """Take run, thread and message ids from ``factory`` inside the ``with`` block."""
    token = _ids.set(factory)
    try:
        yield
    finally:
        _ids.reset(token)


def new_id() -> str:
    """A fresh id: from the installed ``id_source``, else 128 random bits as 32 hex
    digits (like ``uuid4().hex`` at a quarter of its cost — every message gets one)."""
    factory = _ids.get()
    return factory() if factory is not None else os.urandom(16).hex()
