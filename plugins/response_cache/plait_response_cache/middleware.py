"""``ResponseCacheMiddleware``: installs the cache performer around each run, on the
store ``url`` names — the agent's store by default (memory, SQLite, PostgreSQL: whatever
the agent was given), else one of its own."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from typing import Any

import attrs

from plait import effects
from plait.errors import ConfigError
from plait.lazy import frozen
from plait.middleware import Middleware
from plait.options import FieldError, expected, number
from plait.store import MemoryStore, Store
from plait.types import AgentConfig, AgentResult, RunRequest
from plait_response_cache.cache import CachePerformer

__all__ = ["ResponseCacheMiddleware"]


def _check_url(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None or isinstance(value, Store) or (isinstance(value, str) and value):
        return
    raise FieldError(
        attribute.name,
        expected(
            "a store URL ('memory', 'sqlite:///cache.db', 'postgresql://...'), a Store or None",
            value,
        ),
    )


def _check_callable(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise FieldError(attribute.name, expected("a callable (ModelCall) -> bool or None", value))


@frozen
class ResponseCacheMiddleware(Middleware):
    """Answers a model call from the cache when the same request (model, messages,
    tools, settings) was answered before; otherwise stores the answer once it is whole.
    Errors are never stored, a stream only once it is read to its end."""

    url: str | Store | None = attrs.field(default=None, kw_only=True, validator=_check_url)
    """Where answers are kept: ``None`` the agent's store (an in-process one if it has
    none); ``"memory"``, ``"sqlite:///path"``, ``"postgresql://..."`` or a ``Store``."""
    ttl: float | None = attrs.field(
        default=None, kw_only=True, validator=number(minimum=0, optional=True)
    )
    """Seconds an answer stays usable; ``None``: until deleted."""
    skip: Callable[[effects.ModelCall], bool] | None = attrs.field(
        default=None, kw_only=True, validator=_check_callable
    )
    """Calls for which this is true are neither answered from nor stored in the cache."""
    clock: Callable[[], float] = attrs.field(
        default=time.time, kw_only=True, validator=_check_callable, repr=False
    )
    """Test hook: the time in seconds, for ``ttl``."""
    _performer: list[CachePerformer] = attrs.field(init=False, factory=list, eq=False, repr=False)

    def validate_agent(self, agent_config: AgentConfig) -> None:
        store = self._store(agent_config.store)
        self._performer[:] = [CachePerformer(store, self.ttl, self.skip, self.clock)]

    def _store(self, agent_store: Store | None) -> Store:
        if isinstance(self.url, Store):
            return self.url
        if self.url is None:
            return agent_store if agent_store is not None else MemoryStore()
        scheme = self.url.split(":", 1)[0]
        found = [ep for ep in entry_points(group="plait.stores") if ep.name == scheme]
        if not found:
            known = ", ".join(sorted({ep.name for ep in entry_points(group="plait.stores")}))
            raise ConfigError(
                f"expected a store URL whose scheme is one of {known}, got {self.url!r}",
                option="url",
            )
        try:
            store: Store = found[0].load()(self.url)
        except ConfigError as exc:
            raise ConfigError(str(exc), option="url") from exc
        return store

    @property
    def performer(self) -> CachePerformer:
        if not self._performer:
            raise ConfigError("used before create_agent built it")
        return self._performer[0]

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        with effects.performing(self.performer):
            return handler(request)

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
    ) -> AgentResult:
        with effects.performing(self.performer):
            return await handler(request)
