"""Lazy entry-point lookup: names are read from metadata, objects imported on demand."""

from __future__ import annotations

import functools
import os
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from plait.errors import ConfigError

GROUPS = {
    "middleware": "plait.middleware",
    "models": "plait.models",
    "checkpointers": "plait.checkpointers",
    "stores": "plait.stores",
}


def disabled() -> frozenset[str]:
    """Names blocked by ``PLAIT_DISABLE_PLUGINS`` (comma separated)."""
    raw = os.environ.get("PLAIT_DISABLE_PLUGINS", "")
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


@functools.cache
def _group(group: str) -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def available(group: str) -> dict[str, EntryPoint]:
    """The installed, non-disabled entry points of ``group`` by name."""
    blocked = disabled()
    return {name: ep for name, ep in _group(group).items() if name not in blocked}


def load(group: str, name: str, *, what: str) -> Any:
    """Import the object ``name`` stands for in ``group``; unknown names list the known."""
    eps = available(group)
    try:
        ep = eps[name]
    except KeyError:
        known = ", ".join(sorted(eps)) or "none"
        hint = " (it is disabled by PLAIT_DISABLE_PLUGINS)" if name in disabled() else ""
        raise ConfigError(f"unknown {what} {name!r}{hint}; installed: {known}") from None
    try:
        return ep.load()
    except Exception as exc:
        raise ConfigError(
            f"{what} {name!r} ({ep.value}) could not be imported: {type(exc).__name__}: {exc}"
        ) from exc


def refresh() -> None:
    """Forget cached entry points (after installing a distribution at run time)."""
    _group.cache_clear()
