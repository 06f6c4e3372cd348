"""The performer that answers model calls from a store.

Installed around a run (``plait.effects``), it sees every model call the run makes —
the agent's, and those of middleware and sub-agents — as a ``ModelCall``. Its key is
``plait.recording.request_key``: the model, the messages (their random ids aside), the
tools and the settings. A hit is the stored answer with ``usage`` set to
``Usage(cache_hits=1)`` (no tokens spent) and ``response_metadata["cache_hit"] = True``.
A miss is stored only once the answer is whole: an error stores nothing, and a stream
is stored when its last chunk has been read (a reader that stops early stores nothing).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import attrs
import cattrs

from plait import effects
from plait.lazy import frozen
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    ToolCallChunk,
    Usage,
    assemble_chunks,
    from_json,
    to_json,
)
from plait.recording import request_key
from plait.store import Store

__all__ = ["NAMESPACE", "CachePerformer", "no_cache"]

T = TypeVar("T")
NAMESPACE = ("plait", "response_cache")
"""Where answers are kept in the store (key: the request's hash)."""
HIT = Usage(cache_hits=1)

_off: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "plait_response_cache_off", default=False
)
_chunks = cattrs.Converter()
_trace = logging.getLogger("plait.trace")
"""plait's trace log (``PLAIT_TRACE=1`` prints it): each hit and each answer stored."""


@contextlib.contextmanager
def no_cache() -> Iterator[None]:
    """Model calls made inside the block neither read nor fill the cache."""
    token = _off.set(True)
    try:
        yield
    finally:
        _off.reset(token)


@frozen
class CachePerformer:
    """Answers ``ModelCall``s from ``store``; entries live ``ttl`` seconds (``None``:
    until deleted). ``skip(call)`` true leaves a call alone."""

    store: Store
    ttl: float | None
    skip: Callable[[effects.ModelCall], bool] | None
    clock: Callable[[], float] = time.time

    # -- the store --------------------------------------------------------------------------

    def _lookup(self, key: str, effect: effects.ModelCall) -> dict[str, Any] | None:
        item = self.store.get(NAMESPACE, key)
        if item is None:
            return None
        entry: dict[str, Any] = item.value
        expires = entry.get("expires")
        if expires is not None and self.clock() >= expires:
            self.store.delete(NAMESPACE, key)
            _trace.info("response_cache: expired %s (%s)", key, _model(effect))
            return None
        _trace.info("response_cache: hit %s (%s)", key, _model(effect))
        return entry

    def _save(self, key: str, **entry: Any) -> None:
        expires = None if self.ttl is None else self.clock() + self.ttl
        self.store.put(NAMESPACE, key, {"expires": expires, **entry})
        _trace.info("response_cache: stored %s", key)

    def _key(self, effect: effects.Effect) -> str | None:
        if not isinstance(effect, effects.ModelCall) or _off.get():
            return None
        if self.skip is not None and self.skip(effect):
            return None
        return request_key(attrs.evolve(effect, messages=[_as_sent(m) for m in effect.messages]))

    # -- performing -------------------------------------------------------------------------

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        key = self._key(effect)
        if key is None:
            return proceed()
        assert isinstance(effect, effects.ModelCall)
        entry = self._lookup(key, effect)
        if effect.streaming:
            if entry is not None:
                return iter(_replayed_chunks(entry))  # type: ignore[return-value]
            return self._fill(key, proceed())  # type: ignore[arg-type,return-value]
        if entry is not None:
            return _replayed_answer(entry)  # type: ignore[return-value]
        answer = proceed()
        assert isinstance(answer, AIMessage)
        self._save(key, answer=json.loads(to_json([answer]))[0])
        return answer

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        key = self._key(effect)
        if key is None:
            return await proceed()
        assert isinstance(effect, effects.ModelCall)
        entry = self._lookup(key, effect)
        if effect.streaming:
            if entry is not None:
                return _aiter(_replayed_chunks(entry))  # type: ignore[return-value]
            return self._afill(key, await proceed())  # type: ignore[arg-type,return-value]
        if entry is not None:
            return _replayed_answer(entry)  # type: ignore[return-value]
        answer = await proceed()
        assert isinstance(answer, AIMessage)
        self._save(key, answer=json.loads(to_json([answer]))[0])
        return answer

    def _fill(self, key: str, chunks: Iterator[AIMessageChunk]) -> Iterator[AIMessageChunk]:
        seen = []
        for chunk in chunks:
            seen.append(chunk)
            yield chunk
        self._save(key, chunks=[_chunks.unstructure(c) for c in seen])  # only when whole

    async def _afill(
        self, key: str, chunks: AsyncIterator[AIMessageChunk]
    ) -> AsyncIterator[AIMessageChunk]:
        seen = []
        async for chunk in chunks:
            seen.append(chunk)
            yield chunk
        self._save(key, chunks=[_chunks.unstructure(c) for c in seen])


def _model(effect: effects.ModelCall) -> str:
    return f"{effect.model.provider}:{effect.model.model_name}"


def _as_sent(message: AnyMessage) -> AnyMessage:
    """An earlier answer as the provider reads it back: its usage, and the mark of a
    cache hit, are not part of the conversation (so a turn after a hit matches the turn
    after the original answer)."""
    if not isinstance(message, AIMessage):
        return message
    metadata = {k: v for k, v in message.response_metadata.items() if k != "cache_hit"}
    return attrs.evolve(message, usage=None, response_metadata=metadata)


def _replayed_answer(entry: dict[str, Any]) -> AIMessage:
    if "answer" in entry:
        (message,) = from_json(json.dumps([entry["answer"]]))
        assert isinstance(message, AIMessage)
    else:  # stored from a stream, asked for whole
        message = assemble_chunks(_replayed_chunks(entry))
    return attrs.evolve(
        message, usage=HIT, response_metadata={**message.response_metadata, "cache_hit": True}
    )


def _replayed_chunks(entry: dict[str, Any]) -> list[AIMessageChunk]:
    """The stored chunks without their usage, then one chunk marking the hit."""
    if "chunks" in entry:
        chunks = [
            attrs.evolve(_chunks.structure(c, AIMessageChunk), usage=None) for c in entry["chunks"]
        ]
    else:  # stored whole, asked for as a stream
        (message,) = from_json(json.dumps([entry["answer"]]))
        assert isinstance(message, AIMessage)
        chunks = [_as_chunk(message)]
    return [*chunks, AIMessageChunk(usage=HIT, response_metadata={"cache_hit": True})]


def _as_chunk(message: AIMessage) -> AIMessageChunk:
    calls = tuple(
        ToolCallChunk(index=i, id=c.id, name=c.name, args=json.dumps(c.args))
        for i, c in enumerate(message.tool_calls)
    )
    content = message.content if isinstance(message.content, str) else ""
    blocks = () if isinstance(message.content, str) else tuple(message.content)
    return AIMessageChunk(
        content,
        tool_call_chunks=calls,
        response_metadata=dict(message.response_metadata),
        id=message.id,
        blocks=blocks,
    )


async def _aiter(items: list[AIMessageChunk]) -> AsyncIterator[AIMessageChunk]:
    for item in items:
        yield item
