"""``BackendMiddleware``: the base of a middleware whose tools work on files in a backend."""

from __future__ import annotations

from typing import Any

import attrs

from plait.backends.options import check_store, resolve_backend
from plait.backends.protocol import FileSystem
from plait.backends.state import FILES, FILES_FIELD, StateBackend
from plait.lazy import frozen
from plait.middleware import Middleware
from plait.types import AgentConfig, StateField, ToolRuntime

__all__ = ["BackendMiddleware"]


def _backend_or_state(value: Any) -> Any:
    return StateBackend() if value is None else resolve_backend(value)


@frozen(kw_only=True)
class BackendMiddleware(Middleware):
    """A ``backend`` option (an object, or "state" / "store[:NS]" / "disk:/path" in an
    agent file), the shared ``files`` state key a ``StateBackend`` keeps files in, and the
    build-time check that a store-backed backend has a store. Subclasses call ``bind`` in
    their tools."""

    backend: Any = attrs.field(factory=StateBackend, converter=_backend_or_state)
    """Where files live: a ``plait.backends`` backend, or "state", "store[:NS]", "disk:/path";
    ``None`` (as LangChain's deep agents write it): a ``StateBackend``."""

    def state_fields(self) -> dict[str, StateField]:
        return {FILES: FILES_FIELD}

    def validate_agent(self, agent_config: AgentConfig) -> None:
        check_store(self.backend, agent_config)

    def bind(self, runtime: ToolRuntime) -> FileSystem:
        """The backend's file system for one tool call."""
        return self.backend.bind(runtime)  # type: ignore[no-any-return]
