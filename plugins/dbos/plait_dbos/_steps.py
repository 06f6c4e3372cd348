"""Inside a DBOS workflow: each model call, tool run and thread load is a DBOS step
(a thread save is written once by its own compare-and-set), and ids come from the
workflow's id, so a replay after a crash returns what the first execution recorded and
repeats its ids.

A step is recorded by its position in the workflow. The worker runs agents on the sync
path, where the loop performs effects one after another — async hooks and tools
(summarization, sub-agents) included, each awaited in turn — so positions are the same
on replay. What a step does inside (a provider building its message, a tool running a
sub-agent) is not recorded separately: it is part of the step, and takes its ids from a
source named after the step so that skipping it on replay shifts no other id.

A step's record is held back until the next thing that must follow it: the thread save
after it (written in the same transaction when the checkpointer is PostgreSQL in the
system database, so a step and the save it led to commit together, once), or the start
of the next model call or tool (a tool never starts before the step ahead of it is
recorded). The thread load's record may wait past the first model call: a replay that
finds neither makes both again, reading the thread the save never changed. Records are
committed in step order, so what a crash leaves recorded is always a run's first steps.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import attrs
from dbos import DBOS

from plait import effects
from plait.checkpoint import Checkpoint, Checkpointer, History, StepDelta, StepInfo
from plait.errors import ConfigError, ThreadBusyError
from plait.lazy import define, frozen
from plait_dbos._records import Record, commit_records, find_record, look_for_any_step
from plait_dbos._takeover import check_lease

__all__ = ["STREAM_KEY", "RecordedCheckpointer", "StepPerformer", "publishing", "workflow_ids"]

T = TypeVar("T")

_in_step: contextvars.ContextVar[bool] = contextvars.ContextVar("plait_dbos_in_step", default=False)


def _ids(seed: str) -> Callable[[], str]:
    counter = itertools.count()

    def next_id() -> str:
        return hashlib.sha256(f"{seed}:{next(counter)}".encode()).hexdigest()[:32]

    return next_id


@contextlib.contextmanager
def workflow_ids(workflow_id: str) -> Iterator[None]:
    """One execution of a run's workflow: run, thread and message ids derived from the
    workflow id and their order; DBOS's look for a recorded result skipped for the steps
    this execution reaches past the recorded ones; step records held back until the
    next save or step (and written, at the latest, when the execution ends)."""
    execution = _Execution(workflow_id, _system_database())
    token = _execution.set(execution)
    _executions[workflow_id] = execution
    try:
        with effects.id_source(_ids(workflow_id)):
            yield
    except BaseException:
        # The run failed: what its steps did is still recorded (a failed step's error
        # included), unless the database itself is what failed.
        with contextlib.suppress(Exception):
            execution.flush()
        raise
    else:
        execution.flush()
    finally:
        _execution.reset(token)
        if _executions.get(workflow_id) is execution:
            del _executions[workflow_id]


LOAD_STEP = "plait.checkpoint:load"


def _may_wait(record: Record) -> bool:
    """A thread load's record may be written after the next step starts."""
    return bool(record.result["function_name"] == LOAD_STEP)


@define
class _Execution:
    """One execution of a workflow in this process (mutable: learnt as it goes) — where
    it stopped finding recorded steps, and the step records it has not written yet."""

    workflow_id: str
    sys_db: Any  # DBOS's system database, or None (a DBOS without the internals used)
    fresh_from: int | None = None
    pending: list[Record] = attrs.Factory(list)

    def take(self) -> list[Record]:
        records, self.pending = self.pending, []
        return records

    def flush(self, *, unless_waiting: bool = False) -> None:
        """Write the held-back records in one transaction (``unless_waiting``: only if
        one of them may not wait for the next step)."""
        if unless_waiting and all(_may_wait(record) for record in self.pending):
            return
        records = self.take()
        if records:
            commit_records(self.sys_db, self.workflow_id, records)


_execution: contextvars.ContextVar[_Execution | None] = contextvars.ContextVar(
    "plait_dbos_execution", default=None
)
_executions: dict[str, _Execution] = {}
"""This process's executions by workflow id, for DBOS's calls made on another thread
(its event loop runs async steps) where the context variable is not set."""


def _find(workflow_id: str) -> _Execution | None:
    execution = _execution.get()
    if execution is None or execution.workflow_id != workflow_id:
        execution = _executions.get(workflow_id)
    return execution if execution is not None and execution.sys_db is not None else None


def _system_database() -> Any:
    """This process's DBOS system database with plait's two hooks installed (once):
    the skipped looks and the held-back records; ``None`` for a DBOS without the
    internals they use (which then checks and records every step itself)."""
    try:
        from dbos._context import current_owner_xid, get_local_dbos_context
        from dbos._dbos import _get_dbos_instance

        sys_db: Any = _get_dbos_instance()._sys_db
        needed = (
            "check_operation_execution",
            "record_operation_result",
            "engine",
            "_record_operation_result_txn",
            "_own_key",
            "_child_values",
        )
        if not all(hasattr(sys_db, name) for name in needed):
            return None
    except (ImportError, AttributeError):
        return None
    if not getattr(sys_db.check_operation_execution, "plait_hooks", False):
        _install(sys_db, current_owner_xid, get_local_dbos_context)
    return sys_db


def _install(sys_db: Any, current_owner_xid: Any, get_local_dbos_context: Any) -> None:
    check_original = sys_db.check_operation_execution
    record_original = sys_db.record_operation_result

    def check(workflow_id: str, function_id: int, function_name: str, **kwargs: Any) -> Any:
        """Before each step DBOS reads the system database for a result recorded by an
        earlier execution (a transaction of two queries). A workflow's steps run one
        after another and are recorded in order, so once a step id is found unrecorded,
        no later id of this execution can be recorded: the check of those ids answers
        "none" without a query. A replay still checks each recorded step (and its name)
        until it passes the last one. Cancelling a run with DBOS's own tools still
        stops it: the next record is refused once the run is no longer owned. Held-back
        records of model calls and tools are written before the next step starts."""
        execution = _find(workflow_id)
        if execution is None:
            return check_original(workflow_id, function_id, function_name, **kwargs)
        execution.flush(unless_waiting=True)
        if execution.fresh_from is not None and function_id >= execution.fresh_from:
            return None
        recorded = NotImplemented
        if not kwargs:
            recorded = find_record(sys_db, workflow_id, function_id, function_name)
        if recorded is NotImplemented:
            recorded = check_original(workflow_id, function_id, function_name, **kwargs)
        if recorded is None:
            execution.fresh_from = function_id
        return recorded

    def record(result: Any, **kwargs: Any) -> None:
        """A step's outcome, held back by a plait execution of its workflow (see the
        module's docstring); written at once otherwise, after any held back."""
        execution = _find(result["workflow_uuid"])
        if execution is None:
            return record_original(result, **kwargs)  # type: ignore[no-any-return]
        if kwargs or result["child_workflow_id"] is not None:
            execution.flush()
            return record_original(result, **kwargs)  # type: ignore[no-any-return]
        ctx = get_local_dbos_context()
        workflow_id = result["workflow_uuid"]
        ours = ctx is not None and ctx.workflow_id == workflow_id
        execution.pending.append(
            Record(
                result,
                int(time.time() * 1000),
                current_owner_xid(workflow_id, ctx),
                ctx.shard_key if ours else None,
                sys_db._child_values(None),
            )
        )
        return None

    check.plait_hooks = True  # type: ignore[attr-defined]
    sys_db.check_operation_execution = check
    sys_db.record_operation_result = record


def in_workflow() -> bool:
    return DBOS.workflow_id is not None and not _in_step.get()


def _step(name: str, call: Callable[[], T]) -> T:
    """``call`` as a DBOS step named ``name``: run once, recorded; replayed from the record."""

    def body() -> T:
        # A worker whose heartbeat lapsed may have been taken over: it stops here rather
        # than run the step a second worker may be running.
        check_lease()
        seed = f"{DBOS.workflow_id}/step{DBOS.step_id}"
        token = _in_step.set(True)
        try:
            with effects.id_source(_ids(seed)):
                return call()
        finally:
            _in_step.reset(token)

    # No DBOS retries: a failure is recorded and raised, and retrying is the job of
    # plait's retry middleware (whose attempts are each a step of their own).
    return DBOS.run_step({"name": name, "retries_allowed": False}, body)


def _effect_name(effect: effects.Effect) -> str:
    if isinstance(effect, effects.ModelCall):
        model = effect.model
        label = getattr(model, "model_name", None) or getattr(model, "model", None)
        return f"plait.model:{label or type(model).__name__}"
    if isinstance(effect, effects.ToolRun):
        return f"plait.tool:{effect.request.tool_call.name}"
    return f"plait.effect:{type(effect).__name__}"


STREAM_KEY = "plait.text"
"""The DBOS stream a streamed run's model text is written to, piece by piece."""

_publishing: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "plait_dbos_publishing", default=False
)


@contextlib.contextmanager
def publishing() -> Iterator[None]:
    """Streamed model calls of this run write their text to the run's DBOS stream."""
    token = _publishing.set(True)
    try:
        yield
    finally:
        _publishing.reset(token)


def _publish(n: int, chunk: Any) -> None:
    """One piece of a streamed call, written as it arrives (inside the call's step, so
    a call made again after a crash writes its pieces again, numbered from 0)."""
    text = getattr(chunk, "content", "")
    if _publishing.get() and isinstance(text, str) and text:
        DBOS.write_stream(STREAM_KEY, {"step": DBOS.step_id, "n": n, "text": text})


async def _astep(name: str, call: Callable[[], Awaitable[T]]) -> T:
    """The async form of ``_step``, for async hooks and tools of a run (which the sync
    path awaits one at a time, so step order stays that of the code)."""

    async def body() -> T:
        check_lease()
        seed = f"{DBOS.workflow_id}/step{DBOS.step_id}"
        token = _in_step.set(True)
        try:
            with effects.id_source(_ids(seed)):
                return await call()
        finally:
            _in_step.reset(token)

    return await DBOS.run_step_async({"name": name, "retries_allowed": False}, body)


@frozen
class StepPerformer:
    """Performs model calls and tool runs as DBOS steps (installed by ``DBOSMiddleware``
    for runs inside a workflow). A streamed model call is recorded as its list of chunks;
    in a streamed run its text is also written to the run's DBOS stream as it comes."""

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        if not in_workflow():
            return proceed()
        if isinstance(effect, effects.ModelCall) and effect.streaming:

            def collect() -> list[Any]:
                chunks: list[Any] = []
                started: Any = proceed()
                for n, chunk in enumerate(started):
                    _publish(n, chunk)
                    chunks.append(chunk)
                return chunks

            recorded: Any = _step(_effect_name(effect), collect)
            return recorded  # type: ignore[no-any-return]
        return _step(_effect_name(effect), proceed)

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        if not in_workflow():
            return await proceed()
        if isinstance(effect, effects.ModelCall) and effect.streaming:

            async def collect() -> list[Any]:
                chunks: list[Any] = []
                stream: Any = await proceed()
                async for chunk in stream:
                    if _publishing.get():
                        text = getattr(chunk, "content", "")
                        if isinstance(text, str) and text:
                            piece = {"step": DBOS.step_id, "n": len(chunks), "text": text}
                            await DBOS.write_stream_async(STREAM_KEY, piece)
                    chunks.append(chunk)
                return chunks

            recorded: Any = await _astep(_effect_name(effect), collect)
            return recorded  # type: ignore[no-any-return]
        return await _astep(_effect_name(effect), proceed)


@frozen
class RecordedCheckpointer:
    """Wraps the agent's checkpointer for workers. Inside a workflow, loading the thread
    is a step — a replay sees the thread as the run first found it, not as the crashed
    attempt left it (recorded as its step number when the checkpointer keeps history).
    A save is not a step of its own (a DBOS step costs a system-database transaction):
    it is written once by its own compare-and-set, and a replay — which recomputes the
    same save from the recorded steps and ids — finds the step already written by this
    run and skips it. Outside a workflow it is the wrapped checkpointer."""

    inner: Checkpointer
    _joined: dict[Any, bool] = attrs.field(factory=dict, init=False, eq=False, repr=False)
    """Per DBOS system database: whether saves join its transactions (found once)."""

    def load(self, thread_id: str) -> Checkpoint | None:
        if not in_workflow():
            return self.inner.load(thread_id)
        inner = self.inner
        if not isinstance(inner, History):
            return _step(LOAD_STEP, lambda: inner.load(thread_id))
        # With history, the step records the step number the thread was at, not the
        # thread: a long thread is not copied into the system database on every run. A
        # replay reads the thread as it was at that step from the history.
        loaded: list[Checkpoint | None] = []
        fresh = self._fresh_load(thread_id)

        def first_load() -> int | None:
            checkpoint = fresh[0] if fresh else inner.load(thread_id)
            loaded.append(checkpoint)
            return None if checkpoint is None else checkpoint.step

        recorded: Any = _step(LOAD_STEP, first_load)
        if loaded:
            return loaded[0]
        if recorded is None or isinstance(recorded, Checkpoint):
            return recorded  # a thread that did not exist; or a run recorded whole before
        return inner.load_step(thread_id, int(recorded))

    def _fresh_load(self, thread_id: str) -> list[Checkpoint | None]:
        """At an execution's first look, with the checkpointer in the system database:
        the thread, read in one round trip with the look whether the run has any step
        recorded; when it has none (a run's first execution), no step of this execution
        can find a record, so DBOS's look before each is skipped from here on and the
        thread just read is the load step's. Empty otherwise (a replay, or no such
        checkpointer): the load step is looked for and made as usual."""
        execution = _execution.get()
        if execution is None or execution.fresh_from is not None:
            return []
        if not self._joins(execution.sys_db):
            return []
        look = look_for_any_step(execution.sys_db, execution.workflow_id)
        if look is None:
            return []
        joined: Any = self.inner  # has the joining methods (``_joins``)

        def read(conn: Any) -> tuple[bool, Checkpoint | None]:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            fresh = look(conn)
            checkpoint = joined.load_in(conn, thread_id)
            return fresh(), checkpoint

        fresh, checkpoint = joined.transaction(read)
        if not fresh:
            return []
        execution.fresh_from = 0
        return [checkpoint]

    def step(self, thread_id: str) -> int:
        if not in_workflow():
            return self.inner.step(thread_id)
        # Never matches the agent's cached copy, so every run loads (as a step) and a
        # replay in another process records and reads the same steps.
        return -1

    def save(self, thread_id: str, delta: StepDelta) -> None:
        if not in_workflow():
            self.inner.save(thread_id, delta)
            return
        # A worker whose lease lapsed may have been taken over: it writes nothing more.
        check_lease()
        execution = _execution.get()
        records = [] if execution is None else execution.take()
        if execution is not None and self._joins(execution.sys_db):
            self._save_with(execution, records, thread_id, delta)
            return
        if records and execution is not None:
            commit_records(execution.sys_db, execution.workflow_id, records)
        try:
            self.inner.save(thread_id, delta)
        except ThreadBusyError:
            if not self._written_by_run(thread_id, delta):
                raise

    def _joins(self, sys_db: Any) -> bool:
        """Whether the wrapped checkpointer can read and write a thread inside a
        transaction of the system database: plait-postgres' ``transaction``, ``save_in``
        and ``load_in``, on the same database and user (``same_database``), through
        psycopg 3."""
        joined = self._joined.get(sys_db)
        if joined is None:
            joined = self._joined[sys_db] = self._can_join(sys_db)
        return joined

    def _can_join(self, sys_db: Any) -> bool:
        if not all(
            callable(getattr(self.inner, name, None))
            for name in ("transaction", "save_in", "load_in", "same_database")
        ):
            return False
        url = sys_db.engine.url
        if url.get_backend_name() != "postgresql" or url.get_driver_name() != "psycopg":
            return False
        joined: Any = self.inner
        return bool(joined.same_database(url.render_as_string(hide_password=False)))

    def _save_with(
        self, execution: _Execution, records: list[Record], thread_id: str, delta: StepDelta
    ) -> None:
        """The save and the records of the steps that led to it (if any) in one
        transaction of the system database: a crash leaves both or neither. A save this
        run already wrote (a replay) leaves the records to commit alone."""
        busy: list[ThreadBusyError] = []
        joined: Any = self.inner  # has the joining methods (``_joins``)

        def save(conn: Any) -> None:
            # The save first: the transaction's BEGIN rides with its compare-and-set.
            # The records follow, the first one checking that this worker still owns
            # the run: if it does not, nothing commits.
            busy.clear()  # run again on a new connection: only this attempt counts
            try:
                joined.save_in(conn, thread_id, delta)
            except ThreadBusyError as exc:  # the compare-and-set lost; nothing else failed
                busy.append(exc)

        def transaction(block: Any) -> None:
            # A save with no step's record can be made again from the recorded steps (a
            # replay recomputes it): its commit need not wait for the disk, as the next
            # commit that does — the run's outcome, or the next save carrying a record —
            # flushes it too, being later in the log.
            joined.transaction(block, flush=bool(records))

        commit_records(
            execution.sys_db, execution.workflow_id, records, save=save, transaction=transaction
        )
        if busy and not self._written_by_run(thread_id, delta):
            raise busy[0]

    def _written_by_run(self, thread_id: str, delta: StepDelta) -> bool:
        """Whether the thread already holds ``delta``'s step as written by this run: a
        replay after a crash that came after the write."""
        if isinstance(self.inner, History):
            written = {info.step: info.run_id for info in self.inner.history(thread_id)}
            if delta.step in written:
                return bool(delta.run_id) and written[delta.step] == delta.run_id
        # No history of that step (pruned, or a checkpointer without history): the
        # thread having reached it is the best evidence there is.
        return self.inner.step(thread_id) >= delta.step

    def list_threads(self) -> list[str]:
        return self.inner.list_threads()

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    # History (plait.checkpoint.History) is read and forked outside workflows: forwarded.

    def _history(self) -> History:
        if not isinstance(self.inner, History):
            raise ConfigError(f"checkpointer {self.inner!r} keeps no history")
        return self.inner

    def history(self, thread_id: str) -> list[StepInfo]:
        return self._history().history(thread_id)

    def load_step(self, thread_id: str, step: int) -> Checkpoint:
        return self._history().load_step(thread_id, step)

    def fork(self, thread_id: str, step: int, new_thread_id: str) -> None:
        self._history().fork(thread_id, step, new_thread_id)

    def prune(self, *, before: float) -> int:
        return self._history().prune(before=before)
