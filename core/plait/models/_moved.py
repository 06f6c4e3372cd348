"""Old import paths of providers that left the kernel for plugins, kept one release.

``plait.models.anthropic`` and ``plait.models.openai_responses`` were kernel modules; the
models now ship in ``plait-anthropic`` and ``plait-openai-responses``. Each old module is
a stub whose ``__getattr__`` imports the plugin on first use (never at import time: the
kernel imports no plugin) and warns that the path goes away.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved(old: str, new: str, distribution: str) -> Callable[..., Any]:
    """A module ``__getattr__`` for ``old`` that hands out ``new``'s names with a
    ``DeprecationWarning``, or says which distribution to install."""

    def __getattr__(name: str, stacklevel: int = 2) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old} is deprecated and will be removed in the next release: "
            f"import {name} from {new.rpartition('.')[0]} (the {distribution} plugin)",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        try:
            module = importlib.import_module(new)
        except ModuleNotFoundError as exc:
            raise ImportError(
                f"{old}.{name} moved to the plugin {distribution}, which is not installed: "
                f"install it with `pip install ./plugins/{new.split('.')[0][6:]}` from a "
                "checkout of plait (or `pip install . ./plugins/*`)"
            ) from exc
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None

    return __getattr__
