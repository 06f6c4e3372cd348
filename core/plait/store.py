"""Stores: a namespaced key-value store shared across threads (long-term memory)."""

from __future__ import annotations

import copy
import threading
from typing import Any, Protocol, runtime_checkable

from plait.checkpoint import check_memory_url
from plait.lazy import frozen

__all__ = ["MemoryStore", "Store", "StoreItem"]


@frozen
class StoreItem:
    """One stored value with its namespace and key."""

    namespace: tuple[str, ...]
    key: str
    value: Any


@runtime_checkable
class Store(Protocol):
    """Values are JSON-serializable; namespaces are tuples of strings."""

    def put(self, namespace: tuple[str, ...], key: str, value: Any) -> None:
        """Create or replace the value at ``(namespace, key)``."""

    def get(self, namespace: tuple[str, ...], key: str) -> StoreItem | None:
        """The item at ``(namespace, key)``, or ``None``."""

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Remove the item (a no-op if absent)."""

    def search(self, prefix: tuple[str, ...], *, limit: int = 10) -> list[StoreItem]:
        """Items whose namespace starts with ``prefix``, ordered by namespace then key."""


class MemoryStore:
    """A store in this process's memory."""

    def __init__(self) -> None:
        self._items: dict[tuple[tuple[str, ...], str], Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str = "memory") -> MemoryStore:
        """The ``plait.stores`` entry point of ``"memory"``, which takes no path."""
        check_memory_url(url, "store")
        return cls()

    def put(self, namespace: tuple[str, ...], key: str, value: Any) -> None:
        with self._lock:
            self._items[(tuple(namespace), key)] = copy.deepcopy(value)

    def get(self, namespace: tuple[str, ...], key: str) -> StoreItem | None:
        with self._lock:
            found = (tuple(namespace), key)
            if found not in self._items:
                return None
            return StoreItem(found[0], key, copy.deepcopy(self._items[found]))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        with self._lock:
            self._items.pop((tuple(namespace), key), None)

    def search(self, prefix: tuple[str, ...], *, limit: int = 10) -> list[StoreItem]:
        prefix = tuple(prefix)
        with self._lock:
            hits = sorted(k for k in self._items if k[0][: len(prefix)] == prefix)
            return [
                StoreItem(ns, key, copy.deepcopy(self._items[(ns, key)]))
                for ns, key in hits[:limit]
            ]
