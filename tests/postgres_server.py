"""The PostgreSQL server the tests use: ``PLAIT_TEST_POSTGRES_URL`` (set by ``.ci/run``).

Without it the PostgreSQL tests skip — unless ``PLAIT_REQUIRE_POSTGRES=1`` (CI), where a
missing server is a failure, so CI can never pass by skipping them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest


def postgres_url_or_skip() -> str:
    """The test server's URL; skip without one unless CI requires PostgreSQL."""
    url = os.environ.get("PLAIT_TEST_POSTGRES_URL")
    if url:
        return url
    if os.environ.get("PLAIT_REQUIRE_POSTGRES") == "1":
        pytest.fail("PLAIT_REQUIRE_POSTGRES=1 but PLAIT_TEST_POSTGRES_URL is not set")
    pytest.skip("PLAIT_TEST_POSTGRES_URL is not set")


def drop_schema(base: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def new_schema_name() -> str:
    return f"plait_test_{uuid.uuid4().hex[:16]}"


@contextlib.contextmanager
def fresh_postgres_schema() -> Iterator[str]:
    """A URL whose ``?schema=`` is a new, empty PostgreSQL schema, dropped on exit."""
    base = postgres_url_or_skip()
    name = new_schema_name()
    try:
        yield base + ("&" if "?" in base else "?") + f"schema={name}"
    finally:
        drop_schema(base, name)
