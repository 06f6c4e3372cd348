"""plait-postgres: a PostgreSQL checkpointer and store, so many worker processes on many
machines can share threads (``checkpointer="postgresql://user:pw@host/db"``)."""

from __future__ import annotations

from plait_postgres._postgres import (
    SCHEMA_VERSION,
    PostgresCheckpointer,
    PostgresStore,
    redact_url,
)

__all__ = ["SCHEMA_VERSION", "PostgresCheckpointer", "PostgresStore", "redact_url"]
