"""Cache marks in an Anthropic request body: the provider's ``cache_breakpoints`` option.

The Messages API reads ``cache_control`` marks in one order (tools, system, messages) and
refuses a request where a mark with a longer ``ttl`` comes after one with a shorter
(``a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block``),
and one with more than four marks. The marks asked for here join the caller's own, so
both rules are kept here, where the whole body is known.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from plait.errors import ConfigError
from plait.lazy import frozen
from plait.options import ConversionError, structure

__all__ = ["CACHE_BREAKPOINTS", "MAX_CACHE_BREAKPOINTS", "place_breakpoints"]

CACHE_BREAKPOINTS = "cache_breakpoints"
"""The request option (``provider_options={"anthropic": {"cache_breakpoints": {...}}}``)
asking for cache marks where the request is laid out; never sent itself."""
MAX_CACHE_BREAKPOINTS = 4
"""The most ``cache_control`` marks the Messages API accepts in one request."""
TTLS = ("5m", "1h")
"""The lifetimes the API knows, shortest first; a mark without ``ttl`` has the first."""
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


@frozen
class _Breakpoints:
    """Where to put a ``cache_control`` mark, and which: the end of the last message, of
    the system prompt, of the tool definitions. Places left ``None`` get none."""

    messages: dict[str, Any] | None = None
    system: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None


def _breakpoints(value: Any) -> _Breakpoints:
    try:
        return structure(value, _Breakpoints)
    except ConversionError as exc:
        raise ConfigError(
            f"anthropic: provider option {CACHE_BREAKPOINTS!r}: {exc}; expected a mapping "
            "with any of 'messages', 'system', 'tools' to a cache_control mark such as "
            '{"type": "ephemeral", "ttl": "5m"}'
        ) from None


def _marks(body: dict[str, Any]) -> Iterator[Any]:
    """The ``cache_control`` marks ``body`` carries, in the order the API reads them:
    tools, system blocks, message blocks (the blocks inside a ``tool_result`` before it),
    then the request's own, which stands for its last block."""

    def within(blocks: Any) -> Iterator[Any]:
        if not isinstance(blocks, list):
            return
        for block in blocks:
            if isinstance(block, Mapping):
                yield from within(block.get("content"))
                if "cache_control" in block:
                    yield block["cache_control"]

    yield from within(body.get("tools"))
    yield from within(body.get("system"))
    for turn in body.get("messages") or ():
        yield from within(turn.get("content"))
    if "cache_control" in body:
        yield body["cache_control"]


def _rank(mark: Any) -> int | None:
    """Where a mark's ``ttl`` stands among ``TTLS``; ``None`` for one the API would refuse
    on its own (left for it to say so)."""
    if not isinstance(mark, Mapping):
        return None
    ttl = mark.get("ttl", TTLS[0])
    return TTLS.index(ttl) if ttl in TTLS else None


def _fit_ttls(
    body: dict[str, Any], placed: list[dict[str, Any]], last: dict[str, Any] | None
) -> None:
    """Give each mark in ``placed`` a ``ttl`` the API accepts where it stands: no longer
    than any mark before it, no shorter than any of the caller's after it. Mostly it is
    shortened to the five minutes of a mark of the caller's earlier in the prompt; one
    before a caller's "1h" mark is lengthened, which costs nothing (the API bills every
    token before a "1h" mark as an hour's write). The caller's marks are never changed.
    ``last``, the mark placed on the last message, takes the ``ttl`` of the request's own
    mark if it has one: that one stands for the same block, which the API refuses to see
    marked with two lifetimes."""
    ours = {id(mark) for mark in placed}
    marks = list(_marks(body))
    ranks = [_rank(mark) for mark in marks]
    # The longest lifetime among the caller's marks from each place on.
    floor = [-1] * (len(marks) + 1)
    for at in reversed(range(len(marks))):
        theirs = ranks[at] if id(marks[at]) not in ours else None
        floor[at] = max(floor[at + 1], -1 if theirs is None else theirs)
    ceiling = len(TTLS) - 1
    for at, mark in enumerate(marks):
        rank = ranks[at]
        if rank is None:
            continue
        if id(mark) in ours:
            fitted = min(ceiling, max(rank, floor[at + 1]))
            if fitted != rank:
                mark["ttl"] = TTLS[fitted]
            rank = fitted
        ceiling = min(ceiling, rank)
    automatic = _rank(body.get("cache_control"))
    if last is not None and automatic is not None:
        last["ttl"] = TTLS[automatic]


def _last_markable(blocks: list[dict[str, Any]]) -> dict[str, Any] | None:
    markable = (block for block in reversed(blocks) if block.get("type") not in _UNMARKABLE)
    return next(markable, None)


def place_breakpoints(body: dict[str, Any], option: Any) -> None:
    """Mark the end of the last message, then of the system prompt, then of the tools —
    in that order of worth, while the request stays within the API's four marks — with
    the marks ``option`` (the ``cache_breakpoints`` request option) asks for, each ``ttl``
    then fitted to the marks around it. A place already marked keeps its own mark."""
    wanted = _breakpoints(option)
    room = MAX_CACHE_BREAKPOINTS - sum(1 for _ in _marks(body))
    placed: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    turns = body.get("messages") or []
    if wanted.messages and turns and room > len(placed):
        turn = turns[-1]
        if isinstance(turn["content"], str):
            turn["content"] = [{"type": "text", "text": turn["content"]}]
        block = _last_markable(turn["content"])
        if block is not None and "cache_control" not in block:
            last = block["cache_control"] = dict(wanted.messages)
            placed.append(last)
    if wanted.system and body.get("system") and room > len(placed):
        if isinstance(body["system"], str):
            body["system"] = [{"type": "text", "text": body["system"]}]
        last = body["system"][-1]
        if "cache_control" not in last:
            last["cache_control"] = dict(wanted.system)
            placed.append(last["cache_control"])
    if wanted.tools and body.get("tools") and room > len(placed):
        last = body["tools"][-1] = dict(body["tools"][-1])
        if "cache_control" not in last:
            last["cache_control"] = dict(wanted.tools)
            placed.append(last["cache_control"])
    _fit_ttls(body, placed, last)
