"""Durable checkpointers and stores that ship with plait (PostgreSQL is the
``plait-postgres`` plugin). Each is also reachable by URL through the
``plait.checkpointers`` / ``plait.stores`` entry points, e.g. ``"sqlite:///agent.db"``."""

from __future__ import annotations

from plait.persistence.sqlite import SQLiteCheckpointer, SQLiteStore

__all__ = ["SQLiteCheckpointer", "SQLiteStore"]
