"""``plait.checkpoint.RunLeases`` on the built-in checkpointers: a lease is held for a
run, renewed, read back from another checkpointer object on the same database, dropped
only by the run holding it, and forgotten with the thread."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_server import fresh_postgres_schema

from plait.checkpoint import MemoryCheckpointer, RunLease, RunLeases
from plait.persistence.sqlite import SQLiteCheckpointer


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """Two checkpointer objects on one database (the same object for memory)."""
    if request.param == "memory":
        one = MemoryCheckpointer()
        yield one, one
    elif request.param == "sqlite":
        path = str(tmp_path / "leases.db")
        yield SQLiteCheckpointer(path), SQLiteCheckpointer(path)
    else:
        from plait_postgres import PostgresCheckpointer

        with fresh_postgres_schema() as url:
            a, b = PostgresCheckpointer.from_url(url), PostgresCheckpointer.from_url(url)
            yield a, b
            a.close()
            b.close()


def test_a_lease_is_renewed_read_elsewhere_and_ended_by_its_run(pair: tuple[Any, Any]) -> None:
    writer, reader = pair
    assert isinstance(writer, RunLeases)
    assert reader.run_lease("t") is None
    before = time.time()
    writer.renew_lease("t", "r1", 10.0)
    lease = reader.run_lease("t")
    assert isinstance(lease, RunLease) and lease.run_id == "r1"
    assert before + 10.0 <= lease.expires <= time.time() + 10.0
    writer.renew_lease("t", "r1", 0.0)  # a heartbeat missed: the lease runs out
    expired = reader.run_lease("t")
    assert expired is not None and expired.expires <= time.time()
    writer.end_lease("t", "r0")  # not the holder: nothing changes
    assert reader.run_lease("t") == expired
    writer.renew_lease("t", "r2", 5.0)  # the next run takes the thread's lease over
    assert reader.run_lease("t").run_id == "r2"  # type: ignore[union-attr]
    writer.end_lease("t", "r2")
    assert reader.run_lease("t") is None
    writer.renew_lease("t", "r3", 5.0)
    writer.delete_thread("t")
    assert reader.run_lease("t") is None
