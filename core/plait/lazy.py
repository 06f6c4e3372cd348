"""Names a package exports but imports only when first used (PEP 562).

A plugin's package is imported whenever ``plait`` reads one of its entry points — the CLI
does for every command on every call — so a package whose names pull in a heavy SDK
(Starlette, DBOS, MCP, pydantic-evals) exports them lazily::

    from plait.lazy import lazy_exports

    _EXPORTS = {"Worker": "plait_dbos._worker", "submit": "plait_dbos._submit"}
    __all__ = sorted(_EXPORTS)
    __getattr__ = lazy_exports(__name__, _EXPORTS)

with the same names imported under ``if TYPE_CHECKING:`` for type checkers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module``: a name of ``names`` is imported from the module
    it maps to on first use and kept in ``module``'s namespace (later uses are plain
    lookups); any other name is an ``AttributeError``, as for an ordinary module."""

    def __getattr__(name: str) -> Any:
        try:
            source = names[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[module], name, value)
        return value

    return __getattr__
