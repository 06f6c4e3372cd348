"""Worker heartbeats, and the takeover of a dead worker's runs by a live one.

Each worker process is a DBOS executor with an id of its own (its label and a random
part), so no two processes ever share one. It writes a heartbeat row every
``heartbeat_interval`` seconds, stamped with the *database's* clock, so machines' clocks
do not matter. A live worker that finds a row older than that row's ``takeover_after``
hands the executor's unfinished runs back to the queue with DBOS's recovery (which
re-enqueues a PENDING workflow only while it still belongs to that executor, so two
workers recovering one executor recover it once) and forgets the row.

A run recorded under another step layout (``STEP_LAYOUT``: a worker of another plait
release) cannot be continued here, and DBOS's recovery leaves it alone. Its executor's
row is then kept, so that a worker of that layout still finds the executor stale and
takes its runs over, and the worker says once, in its log, which runs wait for which
layout and what to do.

Never two workers on one run: a worker that has not recorded a heartbeat for half its
``takeover_after`` (measured on its own monotonic clock from before the last write that
succeeded) stops its process at once — from its heartbeat thread, and at the start of
every step it runs — well before its peers may see it stale. A takeover therefore only
recovers the runs of a process that has stopped, or that has been frozen (suspended,
stalled) for longer than ``takeover_after`` while inside a step: that step is the
at-least-once window, and DBOS refuses its late record (a step is recorded only by the
run's current owner, a token each dequeue renews).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Heartbeats", "Lease"]

TABLE = "plait_dbos_workers"
_log = logging.getLogger("plait_dbos")

_PG_NOW = "(extract(epoch from clock_timestamp()) * 1000)::bigint"
_SQLITE_NOW = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"


class Heartbeats:
    """The heartbeat table in DBOS's system database (PostgreSQL or the SQLite file).
    On PostgreSQL one connection is kept for the beats (a fresh one per beat would make
    each beat slower, and a slow beat can stop a worker); it is replaced after an error."""

    def __init__(self, database_url: str, timeout: float = 5.0) -> None:
        self.database_url = database_url
        self.timeout = timeout
        self._lock = threading.Lock()
        self._pg: Any = None

    @property
    def _sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        if self._sqlite:
            conn = sqlite3.connect(
                self.database_url.removeprefix("sqlite:///"),
                timeout=self.timeout,
                isolation_level=None,
            )
            try:
                yield conn
            finally:
                conn.close()
            return
        with self._lock:
            if self._pg is None or self._pg.closed:
                self._pg = self._open_pg()
            try:
                yield self._pg
            except BaseException:
                self._pg.close()
                self._pg = None
                raise

    def _open_pg(self) -> Any:
        import psycopg

        scheme, _, rest = self.database_url.partition("://")
        url = f"{scheme.partition('+')[0]}://{rest}"
        millis = int(self.timeout * 1000)
        return psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=max(2, int(self.timeout)),
            options=f"-c statement_timeout={millis} -c lock_timeout={millis}",
        )

    def close(self) -> None:
        with self._lock:
            if self._pg is not None:
                self._pg.close()
                self._pg = None

    def _sql(self, text: str) -> str:
        if self._sqlite:
            return text.replace("{now}", _SQLITE_NOW).replace("%s", "?")
        return text.replace("{now}", _PG_NOW)

    def create(self) -> None:
        statement = (
            f"create table if not exists {TABLE} (executor_id text primary key, "
            "label text not null, takeover_ms bigint not null, "
            "started_ms bigint not null, beat_ms bigint not null)"
        )
        with self._connect() as conn:
            try:
                conn.execute(statement)
            except Exception:
                # Two workers of an empty database create it at once on PostgreSQL: one
                # wins, the other's "already exists" is fine if the table is there.
                conn.execute(f"select 1 from {TABLE} limit 1")

    def join(self, executor_id: str, label: str, takeover_after: float) -> None:
        """This executor's row, with its first beat."""
        statement = self._sql(f"insert into {TABLE} values (%s, %s, %s, {{now}}, {{now}})")
        with self._connect() as conn:
            conn.execute(statement, (executor_id, label, int(takeover_after * 1000)))

    def beat(self, executor_id: str) -> bool:
        """Record a beat; False if the row is gone (the executor was taken over)."""
        statement = self._sql(f"update {TABLE} set beat_ms = {{now}} where executor_id = %s")
        with self._connect() as conn:
            return bool(conn.execute(statement, (executor_id,)).rowcount == 1)

    def stale(self, other_than: str) -> list[tuple[str, int]]:
        """Executors (other than ``other_than``) whose last beat is older than their
        ``takeover_after``, with that beat."""
        statement = self._sql(
            f"select executor_id, beat_ms from {TABLE} "
            "where executor_id <> %s and beat_ms < {now} - takeover_ms order by beat_ms"
        )
        with self._connect() as conn:
            return [(str(e), int(b)) for e, b in conn.execute(statement, (other_than,))]

    def labelled(self, label: str, other_than: str) -> list[tuple[str, int]]:
        """Earlier executors of this label (a worker restarted with the same id)."""
        statement = self._sql(
            f"select executor_id, beat_ms from {TABLE} where label = %s and executor_id <> %s"
        )
        with self._connect() as conn:
            return [(str(e), int(b)) for e, b in conn.execute(statement, (label, other_than))]

    def forget(self, executor_id: str, beat_ms: int) -> None:
        statement = self._sql(f"delete from {TABLE} where executor_id = %s and beat_ms = %s")
        with self._connect() as conn:
            conn.execute(statement, (executor_id, beat_ms))

    def rows(self) -> list[dict[str, Any]]:
        """Every worker's row, with the age of its last beat (ms, database clock)."""
        statement = self._sql(
            f"select executor_id, label, takeover_ms, {{now}} - beat_ms from {TABLE} "
            "order by label, executor_id"
        )
        with self._connect() as conn:
            return [
                {"executor_id": e, "label": lb, "takeover_ms": t, "age_ms": a}
                for e, lb, t, a in conn.execute(statement)
            ]


def _clock() -> float:
    """Seconds on a clock that also runs while the machine sleeps (Linux), so a resumed
    laptop or VM sees how long it was away."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


def _fence(executor_id: str, why: str) -> None:
    sys.stderr.write(
        f"plait worker {executor_id!r}: {why}; stopping this process so that another worker "
        "can take its runs over\n"
    )
    sys.stderr.flush()
    os._exit(75)


class Lease:
    """This process's right to run its workflows: renewed by each recorded heartbeat,
    lost (the process stops) when none was recorded for ``fence_after`` seconds."""

    def __init__(self, executor_id: str, fence_after: float) -> None:
        self.executor_id = executor_id
        self.fence_after = fence_after
        self._renewed = _clock()
        self.released = False

    def renewed(self, sent_at: float) -> None:
        self._renewed = max(self._renewed, sent_at)

    def check(self) -> None:
        """Stop the process if the lease ran out (called before each step)."""
        if self.released:
            return
        overdue = _clock() - self._renewed
        if overdue > self.fence_after:
            _fence(self.executor_id, f"no heartbeat recorded for {overdue:.1f} s")


_lease: Lease | None = None


def check_lease() -> None:
    if _lease is not None:
        _lease.check()


class Beater:
    """The heartbeat thread of a worker: beats, fences, and takes over stale executors."""

    def __init__(
        self,
        heartbeats: Heartbeats,
        *,
        executor_id: str,
        label: str,
        interval: float,
        takeover_after: float,
        recover: Callable[[str], int],
        left_behind: Callable[[str], dict[str, list[str]]] = lambda _: {},
    ) -> None:
        self.heartbeats = heartbeats
        self.executor_id = executor_id
        self.label = label
        self.interval = interval
        self.takeover_after = takeover_after
        self.recover = recover
        self.left_behind = left_behind
        """An executor's unfinished runs this worker cannot continue, by step layout."""
        self._told: set[str] = set()  # executors whose runs left behind were logged
        self.lease = Lease(executor_id, takeover_after / 2)
        self.taken_over = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, name="plait-dbos-heartbeat", daemon=True),
            threading.Thread(target=self._watch, name="plait-dbos-watchdog", daemon=True),
        ]

    def first_beat(self) -> None:
        """Create the table and this executor's row, before it takes any run."""
        global _lease
        self.heartbeats.create()
        sent = _clock()
        self.heartbeats.join(self.executor_id, self.label, self.takeover_after)
        self.lease.renewed(sent)
        _lease = self.lease

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        global _lease
        self._stop.set()
        self.heartbeats.close()
        self.lease.released = True
        if _lease is self.lease:
            _lease = None

    def take_over(self, executors: list[tuple[str, int]]) -> int:
        """Re-enqueue the unfinished runs of ``executors``; the number re-enqueued."""
        count = 0
        for executor_id, beat_ms in executors:
            runs = self.recover(executor_id)
            waiting = self.left_behind(executor_id)
            if waiting:
                self._tell(executor_id, waiting)
            else:
                self.heartbeats.forget(executor_id, beat_ms)
            if runs:
                _log.warning(
                    "plait worker %r: took over %d run(s) of worker %r",
                    self.executor_id,
                    runs,
                    executor_id,
                )
            count += runs
        self.taken_over += count
        return count

    def _tell(self, executor_id: str, waiting: dict[str, list[str]]) -> None:
        """Say, once per executor, which of its runs wait for a worker of another layout."""
        if executor_id in self._told:
            return
        self._told.add(executor_id)
        from plait_dbos._config import STEP_LAYOUT

        for layout, runs in sorted(waiting.items()):
            _log.warning(
                "plait worker %r: worker %r left %d unfinished run(s) recorded under step "
                "layout %r, which this worker (layout %r) cannot continue: %s. Start a "
                "worker of the plait release that records %r to finish them (it takes "
                "them over), or cancel them (`dbos workflow cancel ID -s DATABASE_URL`)",
                self.executor_id,
                executor_id,
                len(runs),
                layout,
                STEP_LAYOUT,
                ", ".join(runs),
                layout,
            )

    def _watch(self) -> None:
        # Apart from the beats, which may hang on the network: the process stops within
        # half an interval of its lease running out, before peers may take it over.
        while not self._stop.wait(self.interval / 2):
            self.lease.check()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            # First the lease: a process that was frozen past it must not beat again.
            self.lease.check()
            sent = _clock()
            try:
                alive = self.heartbeats.beat(self.executor_id)
            except Exception as exc:
                _log.warning("plait worker %r: heartbeat failed: %s", self.executor_id, exc)
            else:
                if not alive and not self._stop.is_set():
                    _fence(self.executor_id, "another worker took its runs over")
                self.lease.renewed(sent)
            if self._stop.is_set():
                return
            try:
                self.take_over(self.heartbeats.stale(self.executor_id))
            except Exception as exc:
                _log.warning("plait worker %r: takeover failed: %s", self.executor_id, exc)
