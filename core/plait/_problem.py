"""``Problem``: one thing wrong with a value, as ``plait._convert`` reports it (and exports
it). Made only when a value is refused, so the class is made then, not when ``plait`` is
imported."""

from __future__ import annotations

from typing import Literal

from plait.lazy import frozen

__all__ = ["Problem"]


@frozen
class Problem:
    """One thing wrong with a value.

    :param path: where, relative to the root: ``""`` (the root), ``"run_limit"``,
        ``"edits[0].trigger_tokens"``, ``"labels['x']"``.
    :param message: what was expected, e.g. ``"expected an int, got 'two'"``.
    :param kind: ``"invalid"``, ``"missing"`` (a required key is absent) or ``"unknown"``
        (keys the type does not have, in ``keys``; its valid keys in ``valid``).
    """

    path: str
    message: str
    kind: Literal["invalid", "missing", "unknown"] = "invalid"
    keys: tuple[str, ...] = ()
    valid: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = "$" + (self.path if self.path.startswith("[") or not self.path else "." + self.path)
        return f"{where}: {self.message}"
