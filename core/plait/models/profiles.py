"""Known model limits, so fraction-based options (summarize at 80% of the window...) work
out of the box for the models people use.

Figures are the providers' documented limits: ``max_input_tokens`` is the context window
(for the GPT-5 family, the documented input limit of 272,000 of its 400,000-token window,
since the other 128,000 are reserved for output), ``max_output_tokens`` the largest answer.
Extended windows that need a beta header (Claude's 1M context) are not assumed; pass
``profile=`` to say you use them. A name matches a family when it is the family name, or
the family name plus a date or ``-latest`` suffix (``gpt-4o-2024-08-06``,
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

__all__ = ["KNOWN_PROFILES", "lookup_profile", "resolve_profile"]


def _p(max_input: int, max_output: int) -> ModelProfile:
    return ModelProfile(max_input_tokens=max_input, max_output_tokens=max_output)


_GPT5 = _p(272_000, 128_000)

KNOWN_PROFILES: dict[str, dict[str, ModelProfile]] = {
    "openai": {
        # GPT-5 family: 400k window = 272k input + 128k output.
        "gpt-5": _GPT5,
        "gpt-5-mini": _GPT5,
        "gpt-5-nano": _GPT5,
        "gpt-5-codex": _GPT5,
        "gpt-5.1": _GPT5,
        "gpt-5.1-codex": _GPT5,
        "gpt-5.2": _GPT5,
        "gpt-5-chat": _p(128_000, 16_384),
        # GPT-4.1 family: 1,047,576-token window, 32,768 out.
        "gpt-4.1": _p(1_047_576, 32_768),
        "gpt-4.1-mini": _p(1_047_576, 32_768),
        "gpt-4.1-nano": _p(1_047_576, 32_768),
        # GPT-4o family.
        "gpt-4o": _p(128_000, 16_384),
        "gpt-4o-mini": _p(128_000, 16_384),
        "chatgpt-4o": _p(128_000, 16_384),
        # o-series reasoning models.
        "o1": _p(200_000, 100_000),
        "o1-pro": _p(200_000, 100_000),
        "o1-mini": _p(128_000, 65_536),
        "o1-preview": _p(128_000, 32_768),
        "o3": _p(200_000, 100_000),
        "o3-pro": _p(200_000, 100_000),
        "o3-mini": _p(200_000, 100_000),
        "o4-mini": _p(200_000, 100_000),
        # Older models still served.
        "gpt-4-turbo": _p(128_000, 4_096),
        "gpt-4": _p(8_192, 8_192),
        "gpt-3.5-turbo": _p(16_385, 4_096),
    },
    "anthropic": {
        "claude-opus-4-5": _p(200_000, 64_000),
        "claude-sonnet-4-5": _p(200_000, 64_000),
        "claude-haiku-4-5": _p(200_000, 64_000),
        "claude-opus-4-1": _p(200_000, 32_000),
        "claude-opus-4": _p(200_000, 32_000),
        "claude-opus-4-0": _p(200_000, 32_000),
        "claude-sonnet-4": _p(200_000, 64_000),
        "claude-sonnet-4-0": _p(200_000, 64_000),
        "claude-3-7-sonnet": _p(200_000, 64_000),
        "claude-3-5-sonnet": _p(200_000, 8_192),
        "claude-3-5-haiku": _p(200_000, 8_192),
        "claude-3-opus": _p(200_000, 4_096),
        "claude-3-haiku": _p(200_000, 4_096),
    },
}

# The Responses API serves the same models with the same windows.
KNOWN_PROFILES["openai-responses"] = KNOWN_PROFILES["openai"]

# What may follow a family name: a snapshot date (2024-08-06 or 20250929) or "latest".
_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)")


def lookup_profile(provider: str, model: str) -> ModelProfile | None:
    """The known profile of ``model`` at ``provider``, or ``None`` if it is not known."""
    table = KNOWN_PROFILES.get(provider, {})
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
    provider: str, model: str, override: ModelProfile | Mapping[str, Any] | None
) -> ModelProfile | None:
    """The profile a model instance gets: ``override`` if it is a ``ModelProfile``; the
    known profile updated with ``override`` if it is a mapping (so ``{"max_input_tokens":
    1_000_000}`` changes only the window); else the known profile or ``None``."""
    if isinstance(override, ModelProfile):
        return override
    known = lookup_profile(provider, model)
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
