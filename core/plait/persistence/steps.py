"""Thread history in SQL, shared by the SQLite checkpointer and plait-postgres.

Two tables beside a checkpointer's ``plait_threads``/``plait_messages``/``plait_values``:
``plait_steps`` (one undo record per step, ``plait.history``) and ``plait_forks`` (a
fork's parent pointer, and whether the fork has its own rows yet). Every function takes
``q``, which runs one statement inside the caller's transaction and returns its rows;
statements are written with ``?`` placeholders (``StepSQL`` turns them into ``%s`` for
PostgreSQL).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from plait.checkpoint import StepDelta
from plait.history import HistoryError, Rows, StepInfo, missing_step, prune_cutoff, rewind

__all__ = ["Query", "Statement", "StepSQL"]

Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
"""Runs one statement with its parameters on the checkpointer's connection and returns its
rows: how ``StepSQL`` reaches a database it does not own."""
Statement = tuple[str, Sequence[Any]]
"""A statement in the dialect's placeholders, and its parameters."""


class StepSQL:
    """The history statements of one SQL dialect.

    :param postgres: write ``%s`` placeholders and ``= ANY(list)`` instead of SQLite's
        ``?`` and ``IN (SELECT value FROM json_each(text))``.
    :param value_order: the column that keeps ``plait_values`` in insertion order.
    """

    def __init__(self, *, postgres: bool, value_order: str) -> None:
        self.postgres = postgres
        self.value_order = value_order

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.postgres else text

    def _in(self, column: str) -> str:
        return (
            f"{column} = ANY(?)"
            if self.postgres
            else f"{column} IN (SELECT value FROM json_each(?))"
        )

    def _list(self, items: Sequence[str]) -> Any:
        return list(items) if self.postgres else json.dumps(list(items))

    def run(self, q: Query, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return q(self._sql(text), params)

    # -- reading ---------------------------------------------------------------------------

    def fork_of(self, q: Query, thread_id: str) -> tuple[str, int, bool] | None:
        """``(parent, step, has its own rows)`` if the thread is a fork."""
        return self.fork_from(q(*self.fork_query(thread_id)))

    def fork_query(self, thread_id: str) -> Statement:
        """``fork_of``'s statement, for a caller that sends it ahead of reading its rows
        (a pipeline) and hands them to ``fork_from``."""
        return self._sql("SELECT parent, step, copied FROM plait_forks WHERE thread = ?"), (
            thread_id,
        )

    @staticmethod
    def fork_from(rows: Sequence[tuple[Any, ...]]) -> tuple[str, int, bool] | None:
        return None if not rows else (str(rows[0][0]), int(rows[0][1]), bool(rows[0][2]))

    def current_step(self, q: Query, thread_id: str) -> int | None:
        rows = self.run(q, "SELECT step FROM plait_threads WHERE id = ?", (thread_id,))
        return None if not rows else int(rows[0][0])

    def rows_at(self, q: Query, thread_id: str, step: int) -> Rows | None:
        """The thread's stored rows as they were after ``step``, or ``None`` if that
        step is not kept."""
        current = self.current_step(q, thread_id)
        if current is None or not 0 <= step <= current:
            return None
        fork = self.fork_of(q, thread_id)
        if fork is not None and (not fork[2] or step < fork[1]):
            return self.rows_at(q, fork[0], step)
        records: list[tuple[Any, ...]] = []
        if step < current:
            records = self.run(
                q,
                "SELECT undo FROM plait_steps WHERE thread = ? AND step > ? ORDER BY step DESC",
                (thread_id, step),
            )
            if len(records) != current - step:
                return None  # forgotten (keep_steps, prune) or saved before history
        messages = self.run(
            q, "SELECT id, seq, data FROM plait_messages WHERE thread = ?", (thread_id,)
        )
        values = self.run(
            q,
            f"SELECT key, data FROM plait_values WHERE thread = ? ORDER BY {self.value_order}",
            (thread_id,),
        )
        return rewind(
            (
                {str(i): (int(seq), str(data)) for i, seq, data in messages},
                {str(k): str(data) for k, data in values},
            ),
            (json.loads(undo) for (undo,) in records),
        )

    def infos(self, q: Query, thread_id: str, upto: int | None = None) -> list[StepInfo]:
        """The thread's kept steps up to ``upto``, newest first, then its parent's."""
        rows = self.run(
            q,
            "SELECT step, run, node, time FROM plait_steps WHERE thread = ? AND step <= ? "
            "ORDER BY step DESC",
            (thread_id, 2**62 if upto is None else upto),
        )
        infos = [StepInfo(thread_id, int(s), str(r), str(n), float(t)) for s, r, n, t in rows]
        fork = self.fork_of(q, thread_id)
        if fork is not None:
            infos += self.infos(q, fork[0], fork[1] if upto is None else min(upto, fork[1]))
        return infos

    def missing(self, q: Query, thread_id: str, step: int) -> HistoryError:
        return missing_step(thread_id, step, [i.step for i in self.infos(q, thread_id)])

    def touched(
        self, q: Query, thread_id: str, delta: StepDelta
    ) -> tuple[dict[str, tuple[int, str]], dict[str, str]]:
        """The stored rows ``delta`` replaces: what its undo record keeps."""
        messages, values = self.touched_queries(thread_id, delta)
        return self.touched_from(
            q(*messages) if messages is not None else [],
            q(*values) if values is not None else [],
        )

    def touched_queries(
        self, thread_id: str, delta: StepDelta
    ) -> tuple[Statement | None, Statement | None]:
        """``touched``'s two statements (messages, values; ``None`` where nothing is
        read), for a caller that sends them ahead of reading their rows (a pipeline) and
        hands the rows to ``touched_from``."""
        if delta.reset:
            messages: Statement | None = (
                self._sql("SELECT id, seq, data FROM plait_messages WHERE thread = ?"),
                (thread_id,),
            )
        else:
            ids = [m.id for m in delta.upserts] + list(delta.removed)
            messages = (
                (
                    self._sql(
                        "SELECT id, seq, data FROM plait_messages WHERE thread = ? AND "
                        + self._in("id")
                    ),
                    (thread_id, self._list(ids)),
                )
                if ids
                else None
            )
        keys = list(delta.values)
        values: Statement | None = (
            (
                self._sql(
                    "SELECT key, data FROM plait_values WHERE thread = ? AND " + self._in("key")
                ),
                (thread_id, self._list(keys)),
            )
            if keys
            else None
        )
        return messages, values

    @staticmethod
    def touched_from(
        messages: Sequence[tuple[Any, ...]], values: Sequence[tuple[Any, ...]]
    ) -> tuple[dict[str, tuple[int, str]], dict[str, str]]:
        return (
            {str(i): (int(seq), str(data)) for i, seq, data in messages},
            {str(k): str(data) for k, data in values},
        )

    # -- writing ---------------------------------------------------------------------------

    def copy_fork(self, q: Query, fork_id: str, parent: str, step: int, where: str) -> int:
        """Write a fork's own rows (its first write: copy on write); its next sequence
        number."""
        rows = self.rows_at(q, parent, step)
        if rows is None:
            raise HistoryError(
                f"{where}: fork {fork_id!r} reads step {step} of thread {parent!r}, "
                "which is no longer kept"
            )
        messages, values = rows
        for message_id, (seq, data) in messages.items():
            self.run(
                q,
                "INSERT INTO plait_messages (thread, id, seq, data) VALUES (?, ?, ?, ?)",
                (fork_id, message_id, seq, data),
            )
        for key, data in values.items():
            self.run(
                q,
                "INSERT INTO plait_values (thread, key, data) VALUES (?, ?, ?)",
                (fork_id, key, data),
            )
        next_seq = max((seq for seq, _ in messages.values()), default=-1) + 1
        self.run(q, "UPDATE plait_threads SET next_seq = ? WHERE id = ?", (next_seq, fork_id))
        self.run(q, "UPDATE plait_forks SET copied = 1 WHERE thread = ?", (fork_id,))
        return next_seq

    def record(
        self,
        q: Query,
        thread_id: str,
        delta: StepDelta,
        undo: str,
        when: float,
        keep_steps: int | None,
    ) -> None:
        """Save the step's undo record and forget what ``keep_steps`` no longer keeps."""
        self.run(
            q,
            "INSERT INTO plait_steps (thread, step, run, node, time, undo) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (thread_id, delta.step, delta.run_id, delta.node, when, undo),
        )
        if keep_steps is None or delta.step <= keep_steps:
            return  # nothing to forget yet
        pins = self.run(
            q, "SELECT step FROM plait_forks WHERE parent = ? AND copied = 0", (thread_id,)
        )
        cutoff = prune_cutoff(delta.step, keep_steps, [int(p[0]) for p in pins])
        if cutoff:
            self.run(
                q, "DELETE FROM plait_steps WHERE thread = ? AND step <= ?", (thread_id, cutoff)
            )

    def owner(self, q: Query, thread_id: str, step: int) -> str:
        """The thread whose own records hold ``step`` of ``thread_id``: a fork's steps
        before its fork point are its parent's (and so on up), and all of them are until
        the fork is first written to."""
        while True:
            fork = self.fork_of(q, thread_id)
            if fork is None or (fork[2] and step >= fork[1]):
                return thread_id
            thread_id = fork[0]

    def kept(self, q: Query, thread_id: str, step: int) -> bool:
        """Whether ``step`` of ``thread_id`` (whose own records hold it) can be rebuilt:
        one indexed count, not the rebuild."""
        current = self.current_step(q, thread_id)
        if current is None or not 0 <= step <= current:
            return False
        (count,) = self.run(
            q, "SELECT count(*) FROM plait_steps WHERE thread = ? AND step > ?", (thread_id, step)
        )[0]
        return int(count) == current - step

    def fork(self, q: Query, thread_id: str, step: int, new_thread_id: str, when: float) -> None:
        """Make ``new_thread_id`` a fork of ``thread_id`` at ``step``: two rows."""
        if self.current_step(q, new_thread_id) is not None:
            raise HistoryError(f"cannot fork onto thread {new_thread_id!r}: it exists")
        owner = self.owner(q, thread_id, step)
        if not self.kept(q, owner, step):
            raise self.missing(q, thread_id, step)
        self.run(
            q,
            "INSERT INTO plait_threads (id, step, next_seq, created) VALUES (?, ?, 0, "
            + ("to_timestamp(?)" if self.postgres else "?")
            + ")",
            (new_thread_id, step, when),
        )
        self.run(
            q,
            "INSERT INTO plait_forks (thread, parent, step, copied) VALUES (?, ?, ?, 0)",
            (new_thread_id, owner, step),
        )

    def forget(self, q: Query, thread_id: str, where: str) -> None:
        """Before a thread is deleted: the forks still reading it get their own rows and
        the records of their steps up to the fork point (they were this thread's), so a
        fork's history stays listed and loadable, as the memory checkpointer keeps it;
        then its records and parent pointer go."""
        mine = self.fork_of(q, thread_id)
        for fork_id, step, copied in self.run(
            q, "SELECT thread, step, copied FROM plait_forks WHERE parent = ?", (thread_id,)
        ):
            if not copied:
                self.copy_fork(q, str(fork_id), thread_id, int(step), where)
            self.run(
                q,
                "INSERT INTO plait_steps (thread, step, run, node, time, undo) "
                "SELECT CAST(? AS TEXT), step, run, node, time, undo FROM plait_steps "
                "WHERE thread = ? AND step <= ?",
                (fork_id, thread_id, step),
            )
            if mine is None:
                self.run(q, "DELETE FROM plait_forks WHERE thread = ?", (fork_id,))
            else:
                # this thread's steps up to its own fork point are its parent's records:
                # the fork reads those there now (this thread has its own rows, since the
                # fork was made at a step this thread's records hold)
                self.run(
                    q,
                    "UPDATE plait_forks SET parent = ?, step = ?, copied = 1 WHERE thread = ?",
                    (mine[0], mine[1], fork_id),
                )
        self.run(q, "DELETE FROM plait_steps WHERE thread = ?", (thread_id,))
        self.run(q, "DELETE FROM plait_forks WHERE thread = ?", (thread_id,))

    def prune(self, q: Query, before: float) -> int:
        """Forget records saved before ``before``; steps are saved in time order, so a
        prefix of each thread's records goes: never the latest step's, never one a fork
        not yet written to reads."""
        rows = self.run(
            q,
            """DELETE FROM plait_steps WHERE time < ?
            AND step < (SELECT t.step FROM plait_threads t WHERE t.id = plait_steps.thread)
            AND step <= coalesce((SELECT min(f.step) FROM plait_forks f
                WHERE f.parent = plait_steps.thread AND f.copied = 0), step)
            RETURNING 1""",
            (before,),
        )
        return len(rows)


def history_ddl(*, postgres: bool) -> tuple[str, ...]:
    """The two tables, created if missing (a database made before history gains them)."""
    text, real = ("text", "double precision") if postgres else ("TEXT", "REAL")
    big = "bigint" if postgres else "INTEGER"
    tail = "" if postgres else " WITHOUT ROWID"
    return (
        f"""CREATE TABLE IF NOT EXISTS plait_steps (
            thread {text} NOT NULL,
            step {big} NOT NULL,
            run {text} NOT NULL,
            node {text} NOT NULL,
            time {real} NOT NULL,
            undo {text} NOT NULL,
            PRIMARY KEY (thread, step)
        ){tail}""",
        f"""CREATE TABLE IF NOT EXISTS plait_forks (
            thread {text} PRIMARY KEY NOT NULL,
            parent {text} NOT NULL,
            step {big} NOT NULL,
            copied {big} NOT NULL
        ){tail}""",
        "CREATE INDEX IF NOT EXISTS plait_forks_by_parent ON plait_forks (parent)",
    )
