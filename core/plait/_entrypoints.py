"""Lazy entry-point lookup: names are read from metadata, objects imported on demand."""

from __future__ import annotations

import difflib
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
    "commands": "plait.commands",
    "tool_adapters": "plait.tool_adapters",
}


BUILTIN: dict[str, dict[str, str]] = {
    "plait.middleware": {
        **{
            name: "anthropic"
            for name in (
                "anthropic_prompt_caching",
                "anthropic_bash",
                "anthropic_text_editor",
                "anthropic_memory",
                "anthropic_file_search",
            )
        },
        **{
            name: name
            for name in (
                "agents_md",
                "context_editing",
                "dbos",
                "filesystem",
                "guardrails",
                "handoff",
                "human_in_the_loop",
                "llm_tool_emulator",
                "llm_tool_selector",
                "mcp",
                "model_call_limit",
                "model_fallback",
                "model_refusal",
                "model_retry",
                "model_router",
                "otel",
                "pii",
                "response_cache",
                "skills",
                "subagents",
                "summarization",
                "todo_list",
                "tool_call_limit",
                "tool_errors",
                "tool_retry",
                "tool_search",
                "usage_limit",
            )
        },
    },
    "plait.models": {
        "anthropic": "anthropic",
        "google": "google",
        "langchain": "langchain",
        "openai-responses": "openai_responses",
    },
    "plait.checkpointers": {"postgresql": "postgres", "postgres": "postgres"},
    "plait.stores": {"postgresql": "postgres", "postgres": "postgres"},
    "plait.commands": {
        "worker": "dbos",
        "submit": "dbos",
        "workers": "dbos",
        "mcp-serve": "mcp",
        "serve": "serve",
        "dev": "serve",
        "eval": "evals",
    },
    "plait.answerers": {"human_in_the_loop": "human_in_the_loop"},
    "plait.text_marks": {
        "cache_control": "anthropic",
        "citations": "anthropic",
        "thought_signature": "google",
    },
    "plait.tool_adapters": {"langchain": "langchain"},
}
"""Entry points of plait's built-in plugins, by group: name → folder under ``plugins/``
(its distribution is ``plait-<folder with dashes>``); for the hint when one is missing."""


def _missing_hint(group: str, name: str, known: list[str]) -> str:
    folder = BUILTIN.get(group, {}).get(name)
    if folder is not None:
        dist = "plait-" + folder.replace("_", "-")
        return (
            f"; it is a built-in plugin of the distribution {dist}: install it with "
            f"`pip install ./plugins/{folder}` from a checkout of plait "
            f"(or `pip install . ./plugins/*` for every built-in plugin)"
        )
    close = difflib.get_close_matches(name, [*known, *BUILTIN.get(group, {})], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def disabled() -> frozenset[str]:
    """Names blocked by ``PLAIT_DISABLE_PLUGINS`` (comma separated)."""
    raw = os.environ.get("PLAIT_DISABLE_PLUGINS", "")
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


@functools.cache
def _installed() -> Any:
    """Every installed entry point, read in one scan of the installed distributions'
    metadata, once per process (``refresh`` forgets it); each group is selected from it."""
    return entry_points()


@functools.cache
def _group(group: str) -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in _installed().select(group=group):
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
        if name in disabled():
            raise ConfigError(
                f"unknown {what} {name!r} (it is disabled by PLAIT_DISABLE_PLUGINS); "
                f"installed: {known}"
            ) from None
        hint = _missing_hint(group, name, sorted(eps))
        raise ConfigError(f"unknown {what} {name!r}; installed: {known}{hint}") from None
    try:
        return ep.load()
    except Exception as exc:
        raise ConfigError(
            f"{what} {name!r} ({ep.value}) could not be imported: {type(exc).__name__}: {exc}"
        ) from exc


def refresh() -> None:
    """Forget cached entry points (after installing a distribution at run time)."""
    _installed.cache_clear()
    _group.cache_clear()
