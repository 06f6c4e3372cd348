"""Per-step checkpoint cost against thread length: memory, sqlite and (when
``PLAIT_TEST_POSTGRES_URL`` is set) postgresql.

For each thread length (10, 100, 1,000, 10,000 messages) a thread is built in one save,
then ``STEPS`` steps are timed, each the size of a typical agent step: one new AI
message with a tool call, one tool result, one replaced state value. The figures are
the median and 90th percentile of one ``save``, the ratio of the 10,000-message median
to the 10-message one (goal: at most 1.3), and the bytes written per step (SQLite, with
the default ``synchronous=full`` and with ``normal``: WAL bytes; PostgreSQL: WAL bytes
from ``pg_current_wal_lsn``; memory: the JSON size of the delta). The lengths are timed
round robin, so drift affects them alike. Figures are printed, never asserted.

    python benchmarks/checkpoint_growth.py
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import attrs

from plait.checkpoint import Checkpointer, MemoryCheckpointer, StepDelta, dump_value
from plait.messages import AIMessage, HumanMessage, ToolCall, ToolMessage, unstructure_message
from plait.persistence import SQLiteCheckpointer

LENGTHS = (10, 100, 1_000, 10_000)
STEPS = 200
BYTE_STEPS = 30
WARMUP = 5
TEXT = "The quick brown fox jumps over the lazy dog. " * 6  # ~270 characters


def history(length: int) -> tuple[HumanMessage | AIMessage, ...]:
    return tuple(
        HumanMessage(f"{i}: {TEXT}") if i % 2 == 0 else AIMessage(f"{i}: {TEXT}")
        for i in range(length)
    )


def step_delta(step: int) -> StepDelta:
    call = ToolCall("search", {"query": f"question {step}", "limit": 5}, f"call-{step}")
    return StepDelta(
        step,
        upserts=(
            AIMessage("", tool_calls=[call]),
            ToolMessage(f"result {step}: {TEXT}", tool_call_id=call.id, name="search"),
        ),
        values={"__run__": {"node": "before_model", "model_calls": step, "status": "running"}},
    )


def delta_bytes(delta: StepDelta) -> int:
    messages = sum(len(json.dumps(unstructure_message(m))) for m in delta.upserts)
    return messages + sum(len(dump_value(v)) for v in delta.values.values())


class Meter:
    """Bytes a backend has written so far; ``reset`` starts a fresh count."""

    def read(self) -> int:
        raise NotImplementedError

    def reset(self) -> None:
        pass


class SQLiteWAL(Meter):
    """The size of one database's write-ahead log, truncated by ``reset``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> int:
        wal = self.path.with_name(self.path.name + "-wal")
        return wal.stat().st_size if wal.exists() else 0

    def reset(self) -> None:
        # Fold the WAL into the database and truncate it, so its size afterwards is
        # exactly what the following steps appended.
        with sqlite3.connect(self.path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class PostgresWAL(Meter):
    """The server's WAL position in bytes (the benchmark should be its only writer)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def read(self) -> int:
        row = self.conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()
        return int(row[0])


Maker = Callable[[], tuple[Checkpointer, Meter | None]]
Backend = Iterator[Maker]


@contextmanager
def memory_backend() -> Backend:
    yield lambda: (MemoryCheckpointer(), None)


@contextmanager
def sqlite_backend(synchronous: Literal["full", "normal"] = "full") -> Backend:
    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(1_000_000))

        def make() -> tuple[Checkpointer, Meter | None]:
            path = Path(tmp) / f"bench-{next(counter)}.db"
            return SQLiteCheckpointer(path, synchronous=synchronous), SQLiteWAL(path)

        yield make


@contextmanager
def postgres_backend(url: str) -> Backend:
    import psycopg
    from psycopg import sql

    from plait_postgres import PostgresCheckpointer

    schema = f"plait_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        try:
            yield lambda: (PostgresCheckpointer(url, schema=schema), PostgresWAL(admin))
        finally:
            admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


@attrs.define
class Thread:
    """One benchmark thread of a given length and the next step to write to it."""

    cp: Checkpointer
    meter: Meter | None
    name: str
    step: int = 1
    timings: list[float] = attrs.field(factory=list)

    def save(self) -> float:
        self.step += 1
        delta = step_delta(self.step)
        start = time.perf_counter()
        self.cp.save(self.name, delta)
        return time.perf_counter() - start


def measure(make: Maker) -> dict[int, dict[str, Any]]:
    threads: dict[int, Thread] = {}
    for length in LENGTHS:
        cp, meter = make()
        thread = threads[length] = Thread(cp, meter, f"bench-{length}")
        cp.save(thread.name, StepDelta(1, upserts=history(length), values={"__run__": {}}))
        for _ in range(WARMUP):
            thread.save()
    results: dict[int, dict[str, Any]] = {}
    # Bytes: one thread at a time, so a server-wide WAL counts only that thread's steps.
    for length, thread in threads.items():
        if thread.meter is None:
            results[length] = {"bytes": delta_bytes(step_delta(0)), "bytes_kind": "JSON"}
            continue
        thread.meter.reset()
        before = thread.meter.read()
        for _ in range(BYTE_STEPS):
            thread.save()
        written = (thread.meter.read() - before) / BYTE_STEPS
        results[length] = {"bytes": written, "bytes_kind": "WAL"}
    # Time: round robin over the lengths, so drift (disk, cache, other load) hits all alike.
    order = list(LENGTHS)
    for _ in range(STEPS):
        for length in order:
            threads[length].timings.append(threads[length].save())
        order.append(order.pop(0))
    for length, thread in threads.items():
        timings = sorted(thread.timings)
        results[length]["median_ms"] = statistics.median(timings) * 1000
        results[length]["p90_ms"] = timings[int(len(timings) * 0.9)] * 1000
        close = getattr(thread.cp, "close", None)
        if close is not None:
            close()
    return results


def main() -> int:
    backends: list[tuple[str, Any]] = [
        ("memory", memory_backend),
        ("sqlite", sqlite_backend),
        ("sqlite/normal", lambda: sqlite_backend("normal")),
    ]
    url = os.environ.get("PLAIT_TEST_POSTGRES_URL")
    if url:
        backends.append(("postgresql", lambda: postgres_backend(url)))
    else:
        print("(postgresql skipped: set PLAIT_TEST_POSTGRES_URL to include it)")
    print(f"per-step save cost; {STEPS} timed steps per length, each 2 messages + 1 value\n")
    print(f"{'backend':<14} {'messages':>9} {'median ms':>10} {'p90 ms':>9} {'bytes/step':>14}")
    ratios: dict[str, float] = {}
    for name, backend in backends:
        with backend() as make:
            results = measure(make)
        for length, r in results.items():
            print(
                f"{name:<14} {length:>9,} {r['median_ms']:>10.3f} {r['p90_ms']:>9.3f} "
                f"{r['bytes']:>9,.0f} {r['bytes_kind']}"
            )
        ratios[name] = results[LENGTHS[-1]]["median_ms"] / results[LENGTHS[0]]["median_ms"]
    print()
    for name, ratio in ratios.items():
        verdict = "ok" if ratio <= 1.3 else "over the 1.3 goal"
        print(f"{name:<14} median ratio 10,000 / 10 messages: {ratio:.2f} ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
