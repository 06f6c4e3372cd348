"""A backend as a middleware option: given as an object in Python, or named in text in an
agent file ("state", "store", "store:NS", "disk:/path"). Shared by every plugin whose tools
work on files, so the spelling is the same everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plait._convert import expected
from plait.backends.composite import CompositeBackend
from plait.backends.disk import DiskBackend
from plait.backends.protocol import Backend
from plait.backends.state import StateBackend
from plait.backends.store import StoreBackend
from plait.errors import ConfigError

if TYPE_CHECKING:
    from plait.types import AgentConfig

__all__ = ["BACKEND_SPELLINGS", "check_store", "needs_store", "resolve_backend"]

BACKEND_SPELLINGS = "'state', 'store', 'store:NAMESPACE' (parts separated by '/'), 'disk:/path'"
"""The ways to name a backend in an option (``resolve_backend``), as an error about one lists
them."""


def resolve_backend(value: Any, default_namespace: tuple[str, ...] = ("filesystem",)) -> Backend:
    """``value`` itself if it is a ``Backend``; else the backend its text names.

    ``"store"`` alone uses ``default_namespace``. Raises ``ValueError`` (which option
    validation reports with the plugin and option) for anything else.
    """
    if isinstance(value, Backend):
        return value
    if isinstance(value, str):
        kind, _, arg = value.partition(":")
        if kind == "state" and not arg:
            return StateBackend()
        if kind == "store":
            return StoreBackend(tuple(arg.split("/")) if arg else default_namespace)
        if kind == "disk" and arg:
            return DiskBackend(arg)
    raise ValueError(
        expected(f"a Backend (an object with bind(runtime)) or one of {BACKEND_SPELLINGS}", value)
    )


def needs_store(backend: Backend) -> bool:
    """Whether ``backend`` (or any route of a ``CompositeBackend``) keeps files in the
    agent's store, so the agent must be built with one."""
    if isinstance(backend, StoreBackend):
        return True
    if isinstance(backend, CompositeBackend):
        return needs_store(backend.default) or any(map(needs_store, backend.routes.values()))
    return False


def check_store(
    backend: Backend,
    agent_config: AgentConfig,
    *,
    option: str = "backend",
    plugin: str | None = None,
) -> None:
    """Fail at ``create_agent`` when ``backend`` needs a store the agent was built without.

    Call it from ``validate_agent``: otherwise the first file tool call would fail instead
    (the kernel then names your plugin: leave ``plugin`` out).

    :raises ConfigError: naming the plugin and the option.
    """
    if agent_config.store is None and needs_store(backend):
        raise ConfigError(
            "a StoreBackend needs the agent's store, and this agent has none "
            "(create it with store=...)",
            option=option,
            plugin=plugin,
        )
