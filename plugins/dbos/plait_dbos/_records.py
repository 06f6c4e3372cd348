"""Writing held-back step records into a system-database transaction plait holds (see
``_steps``): each row as DBOS's own ``record_operation_result`` writes it, checked
against the workflow's current owner the same way.

DBOS builds and compiles that insert anew for every step (SQLAlchemy does not cache a
PostgreSQL insert), a large share of a durable step's client CPU. On PostgreSQL without
sharding, through psycopg, plait compiles its statements once from DBOS's own table
definitions and sends them with psycopg, bypassing SQLAlchemy's per-statement execution
(about a tenth of a millisecond of CPU each): the records go in the pipeline of the save
they ride on (on the checkpointer's own connection, or one of DBOS's pool), and the
owner is checked inside the transaction's first insert rather than in a query of its
own. Elsewhere, or with a DBOS lacking those internals, each record goes through
DBOS's own code. The look for a recorded step (``find_record``) is likewise one
statement in autocommit where DBOS runs a transaction of two queries.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

from plait.lazy import frozen

__all__ = ["Record", "commit_records", "find_record", "look_for_any_step"]


@frozen
class Record:
    """A step's outcome as DBOS hands it to its system database, with what DBOS would
    have read from the step's context at that moment."""

    result: Any  # DBOS's OperationResultInternal
    completed_at: int
    owner_xid: str | None
    shard_key: str | None
    child_values: dict[str, Any]


def _write_each(sys_db: Any, conn: Any, workflow_id: str, records: list[Record]) -> None:
    """DBOS's own writing of ``records`` on ``conn``, a SQLAlchemy connection in a
    transaction of the system database (each checked against the workflow's owner)."""
    for record in records:
        sys_db._record_operation_result_txn(
            record.result,
            record.completed_at,
            conn,
            owner_xid=record.owner_xid,
            child_values=record.child_values,
        )


_ROW = (
    "workflow_uuid",
    "function_id",
    "function_name",
    "output",
    "error",
    "child_workflow_id",
    "started_at_epoch_ms",
    "completed_at_epoch_ms",
    "serialization",
    "application_name",
)


_NEEDED = (
    "_now_ms_sql",
    "_wf",
    "_wf_values",
    "tables",
    "dialect",
    "app_name",
)
_COLUMNS = {*_ROW, "retention_timestamp"}


def _statements(sys_db: Any, workflow_id: str) -> _Statements | None:
    """plait's compiled statements, if it may read and write ``workflow_id``'s rows
    itself: PostgreSQL through psycopg, no sharding (a workflow's rows found by its id
    alone), and the step table holding the columns DBOS 3 writes (every one, so no
    column of a newer DBOS is left out); compiled and checked once per system database."""
    if sys_db in _compiled:
        statements = _compiled[sys_db]
    else:
        statements = _compiled[sys_db] = _compile(sys_db) if _plain_database(sys_db) else None
    if statements is None or sys_db._wf_values(workflow_id):
        return None
    return statements


def _plain_database(sys_db: Any) -> bool:
    if not all(hasattr(sys_db, name) for name in _NEEDED):
        return False
    if sys_db.engine.dialect.name != "postgresql":
        return False
    if len(sys_db._wf(sys_db.tables.workflow_status, "x")) != 1:
        return False
    return {column.name for column in sys_db.tables.operation_outputs.columns} == _COLUMNS


def find_record(sys_db: Any, workflow_id: str, function_id: int, function_name: str) -> Any:
    """What DBOS's ``check_operation_execution`` answers (the recorded result, ``None``,
    or its errors for a cancelled workflow and a step recorded under another name), in
    one statement; ``NotImplemented`` where plait leaves the look to DBOS (another
    database or driver, sharding, a DBOS without these internals, a database error it
    retries)."""
    statements = _statements(sys_db, workflow_id)
    if statements is None:
        return NotImplemented
    import psycopg
    from dbos._error import DBOSUnexpectedStepError, DBOSWorkflowCancelledError

    values = {"workflow_uuid": workflow_id, "function_id": function_id}
    raw = sys_db.engine.raw_connection()
    try:
        driver = raw.driver_connection
        driver.autocommit = True
        try:
            row = statements.find.run(driver, values).fetchone()
        finally:
            driver.autocommit = False
    except psycopg.Error:
        return NotImplemented  # DBOS's own look retries what can be retried
    finally:
        raw.close()
    assert row is not None, f"Error: Workflow {workflow_id} does not exist"
    state, recorded_name, output, error, serialization, child = row
    if state == "CANCELLED":
        raise DBOSWorkflowCancelledError(f"Workflow {workflow_id} is cancelled. Aborting function.")
    if recorded_name is None:
        return None
    if recorded_name != function_name:
        raise DBOSUnexpectedStepError(
            workflow_id=workflow_id,
            step_id=function_id,
            expected_name=function_name,
            recorded_name=recorded_name,
        )
    return {
        "output": output,
        "error": error,
        "serialization": serialization,
        "child_workflow_id": child,
        "child_shard_key": None,
    }


def look_for_any_step(sys_db: Any, workflow_id: str) -> Callable[[Any], Any] | None:
    """For an execution's first look, sent with other reads (in the pipeline of a
    connection to the same database): a function that sends the look whether any step
    of ``workflow_id`` is recorded and returns what reads its answer — ``True`` when
    none is and the workflow is not cancelled, so no step of this execution can find a
    record and DBOS's look before each may be skipped. ``None`` where plait leaves the
    looks to DBOS."""
    statements = _statements(sys_db, workflow_id)
    if statements is None:
        return None
    any_step = statements.any_step

    def send(driver: Any) -> Callable[[], bool]:
        cursor = any_step.run(driver, {"workflow_uuid": workflow_id})

        def fresh() -> bool:
            row = cursor.fetchone()
            return row is not None and row[0] != "CANCELLED" and not row[1]

        return fresh

    return send


def commit_records(
    sys_db: Any,
    workflow_id: str,
    records: list[Record],
    *,
    save: Callable[[Any], None] | None = None,
    transaction: Callable[[Callable[[Any], None]], None] | None = None,
) -> None:
    """One transaction of the system database, committed: ``save`` first (called with
    the transaction's psycopg connection: a thread save joining it), then ``records``,
    the first of each owner checking that the worker still owns the workflow — if it
    does not, or a step is recorded already, nothing commits and DBOS's error is raised.
    ``transaction``: where to hold it, a function that runs a block in a pipelined
    transaction on a connection to the same database and commits (the checkpointer's
    own, which spares a connection from DBOS's pool; it may run the block again on a
    new connection if the first was dead); else on a connection from that pool."""
    children = any(record.child_values or record.result["child_workflow_id"] for record in records)
    statements = None if children else _statements(sys_db, workflow_id)
    if statements is None:
        key = records[0].shard_key if records else None
        with sys_db._own_key(workflow_id, key=key), sys_db.engine.begin() as conn:
            if save is not None:
                save(conn.connection.driver_connection)
            _write_each(sys_db, conn, workflow_id, records)
        return

    def block(driver: Any) -> None:
        # The save first: the transaction's BEGIN rides with its compare-and-set; the
        # records and the sync that reads their answers share its round trip.
        if save is not None:
            save(driver)
        sent = _send(driver, statements, workflow_id, records, sys_db.app_name)
        _check(driver, statements, workflow_id, sent)

    (transaction or _on_pool(sys_db))(block)


def _on_pool(sys_db: Any) -> Callable[[Callable[[Any], None]], None]:
    """Where ``commit_records`` holds its transaction when the caller gives none: a
    pipelined transaction on a connection of DBOS's pool, committed when the block ends,
    rolled back if it raises."""

    def transaction(block: Callable[[Any], None]) -> None:
        raw = sys_db.engine.raw_connection()
        try:
            driver = raw.driver_connection
            try:
                with driver.pipeline():
                    block(driver)
                driver.commit()
            except BaseException:
                if not driver.closed:
                    with contextlib.suppress(Exception):
                        driver.rollback()
                raise
        finally:
            raw.close()

    return transaction


@frozen
class _Statement:
    """One statement compiled for psycopg: SQL with named parameters, and the constants
    its compilation made parameters of."""

    sql: str
    constants: dict[str, Any]

    def run(self, driver: Any, values: dict[str, Any]) -> Any:
        cursor = driver.cursor()
        cursor.execute(self.sql, {**self.constants, **values} if self.constants else values)
        return cursor


@frozen
class _Statements:
    """plait's statements on one system database, compiled once."""

    insert: _Statement
    """A step's record (``RETURNING 1``; no row if the step is recorded already)."""
    checked_insert: _Statement
    """The same, inserted only while ``owner`` owns the workflow (whose status row it
    locks until the commit, FOR NO KEY UPDATE as DBOS does, so no hand-off — a cancel,
    a recovery — lands before it)."""
    owned: _Statement
    """Whether ``owner`` owns the workflow (read only when a checked insert wrote no row)."""
    find: _Statement
    """The workflow's status and the step ``function_id``'s record, if any."""
    any_step: _Statement
    """The workflow's status and whether any step of it is recorded."""


_compiled: weakref.WeakKeyDictionary[Any, _Statements | None] = weakref.WeakKeyDictionary()


def _compile(sys_db: Any) -> _Statements | None:
    import sqlalchemy as sa

    dialect = sys_db.engine.dialect
    if dialect.driver != "psycopg":
        return None
    status = sys_db.tables.workflow_status
    outputs = sys_db.tables.operation_outputs
    columns = [*_ROW, "retention_timestamp"]
    row = [sa.bindparam(name, type_=outputs.c[name].type) for name in _ROW]
    owner = sa.bindparam("owner", type_=status.c.owner_xid.type)
    workflow = sa.bindparam("workflow_uuid", type_=status.c.workflow_uuid.type)
    owned: Any = sa.select(sa.literal_column("1")).where(
        status.c.workflow_uuid == workflow, status.c.owner_xid == owner
    )

    def insert(where: Any = None) -> Any:
        select = sa.select(*row, sys_db._now_ms_sql())
        return (
            sys_db.dialect.insert(outputs)
            .from_select(columns, select if where is None else select.where(where))
            .on_conflict_do_nothing()
            .returning(sa.literal_column("1"))
        )

    step = sa.and_(
        outputs.c.workflow_uuid == status.c.workflow_uuid,
        outputs.c.function_id == sa.bindparam("function_id", type_=outputs.c.function_id.type),
    )
    find = (
        sa.select(
            status.c.status,
            outputs.c.function_name,
            outputs.c.output,
            outputs.c.error,
            outputs.c.serialization,
            outputs.c.child_workflow_id,
        )
        .select_from(status.outerjoin(outputs, step))
        .where(status.c.workflow_uuid == workflow)
    )
    recorded: Any = sa.select(sa.literal_column("1")).where(
        outputs.c.workflow_uuid == status.c.workflow_uuid
    )
    any_step = sa.select(status.c.status, sa.exists(recorded)).where(
        status.c.workflow_uuid == workflow
    )
    names = {*_ROW, "owner"}
    translate = sys_db.engine.get_execution_options().get("schema_translate_map")
    compiled: list[_Statement] = []
    for statement in (
        insert(),
        insert(sa.exists(owned.with_for_update(key_share=True))),
        owned,
        find,
        any_step,
    ):
        sql = statement.compile(
            dialect=dialect, schema_translate_map=translate, render_schema_translate=True
        )
        constants: dict[str, Any] = {}
        for name, bind in sql.binds.items():
            if bind.type.dialect_impl(dialect).bind_processor(dialect) is not None:
                return None
            if name not in names:
                constants[name] = bind.value
        compiled.append(_Statement(str(sql), constants))
    return _Statements(*compiled)


def _send(
    driver: Any, statements: _Statements, workflow_id: str, records: list[Record], app_name: str
) -> list[tuple[Record, str | None, Any]]:
    """Send the records' inserts in the pipeline ``driver`` is in (the first of each
    owner checked); per record, the owner it was checked against and its cursor."""
    sent: list[tuple[Record, str | None, Any]] = []
    checked: set[str] = set()
    for record in records:
        result = record.result
        values = {
            "workflow_uuid": workflow_id,
            "function_id": result["function_id"],
            "function_name": result["function_name"],
            "output": result["output"],
            "error": result["error"],
            "child_workflow_id": result["child_workflow_id"],
            "started_at_epoch_ms": result["started_at_epoch_ms"],
            "completed_at_epoch_ms": record.completed_at,
            "serialization": result["serialization"],
            "application_name": app_name,
        }
        owner = record.owner_xid
        if owner is None or owner in checked:
            sent.append((record, None, statements.insert.run(driver, values)))
            continue
        checked.add(owner)
        cursor = statements.checked_insert.run(driver, {**values, "owner": owner})
        sent.append((record, owner, cursor))
    return sent


def _check(
    driver: Any,
    statements: _Statements,
    workflow_id: str,
    sent: list[tuple[Record, str | None, Any]],
) -> None:
    """Raise DBOS's error if a record was not written: the worker no longer owns the
    workflow (``DBOSWorkflowConflictIDError``), or its step was recorded already
    (``DBOSStepNondeterminismError``, as DBOS says when its own insert is refused)."""
    from dbos._error import DBOSStepNondeterminismError, DBOSWorkflowConflictIDError

    for record, owner, cursor in sent:
        if cursor.fetchone() is not None:
            continue
        if owner is not None:
            values = {"workflow_uuid": workflow_id, "owner": owner}
            if statements.owned.run(driver, values).fetchone() is None:
                raise DBOSWorkflowConflictIDError(workflow_id)
        raise DBOSStepNondeterminismError(workflow_id, record.result["function_id"])
