"""Known model limits, so fraction-based options (summarize at 80% of the window...) work
out of the box for the models people use.

Each provider class declares its vendor's documented limits by model family
(``HTTPChatModel.known_profiles``): ``max_input_tokens`` is the context window,
``max_output_tokens`` the largest answer. A name matches a family when it is the family
name, or the family name plus a date or ``-latest`` suffix (``gpt-4o-2024-08-06``,
``claude-sonnet-4-5-20250929``); anything else is unknown and gets no profile.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from plait._convert import expected, integer
from plait.errors import ConfigError
from plait.models.base import ModelProfile

__all__ = ["lookup_profile", "resolve_profile"]


# What may follow a family name: a snapshot date (2024-08-06 or 20250929) or "latest".
_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)")


def lookup_profile(table: Mapping[str, ModelProfile], model: str) -> ModelProfile | None:
    """The profile of ``model``'s family in ``table`` (a provider's ``known_profiles``), or
    ``None`` if it is not known."""
    name = model.strip().lower()
    if name in table:
        return table[name]
    best: str | None = None
    for family in table:
        rest = name[len(family) :]
        if name.startswith(family) and _SUFFIX.fullmatch(rest):
            if best is None or len(family) > len(best):
                best = family
    return table[best] if best is not None else None


_FIELDS = {field.name for field in attrs.fields(ModelProfile)}


def resolve_profile(
    provider: str,
    table: Mapping[str, ModelProfile],
    model: str,
    override: ModelProfile | Mapping[str, Any] | None,
) -> ModelProfile | None:
    """The profile a model instance gets: ``override`` if it is a ``ModelProfile``; the
    known profile updated with ``override`` if it is a mapping (so ``{"max_input_tokens":
    1_000_000}`` changes only the window); else the known profile or ``None``."""
    if isinstance(override, ModelProfile):
        return override
    known = lookup_profile(table, model)
    if override is None:
        return known
    if not isinstance(override, Mapping):
        wanted = "a ModelProfile or a mapping"
        raise ConfigError(f"{provider}: profile: {expected(wanted, override)}")
    unknown = sorted(set(override) - _FIELDS)
    if unknown:
        raise ConfigError(
            f"{provider}: unknown profile field(s) {', '.join(map(repr, unknown))}; "
            f"expected some of {', '.join(sorted(_FIELDS))}"
        )
    for key in ("max_input_tokens", "max_output_tokens"):
        problem = integer(minimum=1, optional=True).problem(override.get(key))
        if problem is not None:
            raise ConfigError(f"{provider}: profile {key}: {problem}")
    return attrs.evolve(known or ModelProfile(), **dict(override))
