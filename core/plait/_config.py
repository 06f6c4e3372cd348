"""LangGraph's ``config`` argument, read into plait's own run options.

LangChain users call ``agent.invoke(input, config={"configurable": {"thread_id": "1"},
"recursion_limit": 50})``; plait takes the same values as keywords (``thread_id=``,
``recursion_limit=``). This reads the dict into them, refusing what plait has no
counterpart for rather than dropping it silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait._convert import expected
from plait.errors import ConfigError

_KEYS = ("configurable", "recursion_limit")
_CONFIGURABLE = ("thread_id",)


def read_config(
    config: Mapping[str, Any] | None, thread_id: str | None, recursion_limit: int | None
) -> tuple[str | None, int]:
    """``(thread_id, recursion_limit)`` from the keywords and ``config``; the same value
    given both ways must agree."""
    limit = recursion_limit
    check_thread_id(thread_id, "thread_id")
    if config is None:
        return thread_id, 25 if limit is None else limit
    if not isinstance(config, Mapping):
        wanted = "a mapping like {'configurable': {'thread_id': ...}}"
        raise ConfigError(f"config: {expected(wanted, config)}")
    unknown = [k for k in config if k not in _KEYS]
    if unknown:
        raise ConfigError(
            f"config: unknown key {unknown[0]!r} (plait reads 'configurable' and "
            "'recursion_limit'; run values for tools and middleware go in context=...)"
        )
    configurable = config.get("configurable") or {}
    if not isinstance(configurable, Mapping):
        raise ConfigError(f"config['configurable']: {expected('a mapping', configurable)}")
    extra = [k for k in configurable if k not in _CONFIGURABLE]
    if extra:
        raise ConfigError(
            f"config['configurable']: unknown key {extra[0]!r} (plait reads 'thread_id'; "
            "other run values go in context=..., typed by create_agent(context_schema=...))"
        )
    given = configurable.get("thread_id")
    if given is not None:
        if thread_id is not None and thread_id != given:
            raise ConfigError(
                f"thread_id={thread_id!r} and config['configurable']['thread_id']={given!r} "
                "disagree; give it once"
            )
        thread_id = given
    if "recursion_limit" in config:
        if limit is not None and limit != config["recursion_limit"]:
            raise ConfigError(
                f"recursion_limit={limit!r} and config['recursion_limit']="
                f"{config['recursion_limit']!r} disagree; give it once"
            )
        limit = config["recursion_limit"]
    return thread_id, 25 if limit is None else limit


def check_thread_id(thread_id: Any, where: str) -> None:
    """Refuse LangGraph's config dict where plait takes a thread id (``get_state(config)``
    in LangGraph is ``get_state(thread_id)`` here), with the fix, rather than failing later
    on an unhashable dict."""
    if isinstance(thread_id, Mapping):
        raise ConfigError(
            f"{where}: {expected('a thread id', thread_id)}; pass LangGraph's "
            "config['configurable']['thread_id'] instead"
        )
