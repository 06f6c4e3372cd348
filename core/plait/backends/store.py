"""``StoreBackend``: files as items of the agent's store, shared by every thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from plait.backends._base import FileOps
from plait.backends.protocol import BackendError
from plait.lazy import frozen
from plait.store import Store
from plait.types import ToolRuntime

__all__ = ["StoreBackend"]

_ALL = 1_000_000


def _namespace(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


class _StoreFiles(FileOps):
    def __init__(self, store: Store, namespace: tuple[str, ...]) -> None:
        self._store = store
        self._namespace = namespace

    def _load(self, path: str) -> dict[str, Any] | None:
        item = self._store.get(self._namespace, path)
        return dict(item.value) if item is not None else None

    def _save(self, path: str, data: dict[str, Any]) -> None:
        self._store.put(self._namespace, path, data)

    def _remove(self, path: str) -> None:
        self._store.delete(self._namespace, path)

    def _paths(self, under: str) -> Iterable[str]:
        items = self._store.search(self._namespace, limit=_ALL)
        return [item.key for item in items if tuple(item.namespace) == self._namespace]


@frozen
class StoreBackend:
    """Files kept in the agent's ``store`` under ``namespace``, one item per path: they
    outlive the thread and every thread of the agent sees them."""

    namespace: tuple[str, ...] = attrs.field(
        default=("filesystem",),
        converter=_namespace,
        validator=attrs.validators.deep_iterable(attrs.validators.instance_of(str)),
    )

    def bind(self, runtime: ToolRuntime) -> _StoreFiles:
        store = runtime.store
        if store is None:
            raise BackendError(
                "Error: StoreBackend needs a store, and this agent has none "
                "(create it with store=...)"
            )
        return _StoreFiles(store, self.namespace)
