"""Backends for the persistence conformance suites: memory, sqlite (file and in-memory)
and postgresql (a fresh PostgreSQL schema per test, dropped afterwards)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from postgres_server import fresh_postgres_schema

from plait.checkpoint import MemoryCheckpointer
from plait.persistence.sqlite import SQLiteCheckpointer, SQLiteStore
from plait.store import MemoryStore

BACKENDS = ["memory", "sqlite", "sqlite-memory", "postgresql"]


@attrs.define
class Backend:
    """One storage location; ``make()`` opens another client on it (the same object for
    memory, which has no location), ``url`` is what a subprocess opens (None: memory)."""

    kind: str
    url: str | None
    factory: Callable[[], Any]
    opened: list[Any] = attrs.field(factory=list)

    def make(self) -> Any:
        if self.kind == "memory" and self.opened:
            return self.opened[0]
        made = self.factory()
        self.opened.append(made)
        return made

    @property
    def durable(self) -> bool:
        return self.kind in ("sqlite", "postgresql")

    def close(self) -> None:
        for made in self.opened:
            close = getattr(made, "close", None)
            if close is not None:
                close()


def _backend(kind: str, tmp_path: Path, what: str) -> Iterator[Backend]:
    if kind == "memory":
        cls: Any = MemoryCheckpointer if what == "checkpointer" else MemoryStore
        backend = Backend(kind, None, cls)
    elif kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'plait.db'}"
        cls = SQLiteCheckpointer if what == "checkpointer" else SQLiteStore
        backend = Backend(kind, url, lambda: cls.from_url(url))
    elif kind == "sqlite-memory":
        cls = SQLiteCheckpointer if what == "checkpointer" else SQLiteStore
        backend = Backend(kind, None, lambda: cls.from_url("sqlite://:memory:"))
        made = backend.factory()
        backend.opened.append(made)
        backend.factory = lambda: made
    else:
        with fresh_postgres_schema() as url:
            import plait_postgres

            pg: Any = (
                plait_postgres.PostgresCheckpointer
                if what == "checkpointer"
                else plait_postgres.PostgresStore
            )
            backend = Backend(kind, url, lambda: pg.from_url(url))
            try:
                yield backend
            finally:
                backend.close()
        return
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(params=BACKENDS)
def checkpointer_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _backend(request.param, tmp_path, "checkpointer")


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _backend(request.param, tmp_path, "store")
