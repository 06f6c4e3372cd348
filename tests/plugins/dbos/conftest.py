"""A PostgreSQL database of its own for each DBOS test that needs one; ``closed_port``
(a loopback port nothing listens on) for an unreachable one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from postgres_server import postgres_url_or_skip
from provider_fixtures import closed_port
from psycopg import sql

__all__ = ["closed_port", "database_url"]


@pytest.fixture
def database_url() -> Iterator[str]:
    base = postgres_url_or_skip()
    name = f"plait_dbos_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    head, _, tail = base.rpartition("/")
    query = tail.partition("?")[2]
    yield f"{head}/{name}" + (f"?{query}" if query else "")
    with psycopg.connect(base, autocommit=True) as conn:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
        conn.execute(drop.format(sql.Identifier(name)))
