"""Writing held-back step records into a system-database transaction plait holds (see
``_steps``): each row as DBOS's own ``record_operation_result`` writes it, checked
against the workflow's current owner the same way.

DBOS builds and compiles that insert anew for every step (SQLAlchemy does not cache a
PostgreSQL insert), a large share of a durable step's client CPU. On PostgreSQL without
sharding, plait compiles the same statements once through DBOS's own compile-once path
(``_execute_prepared``, over DBOS's table definitions), and checks the owner inside the
transaction's first insert rather than in a query of its own; elsewhere, or with a DBOS
lacking those internals, each record goes through DBOS's own code. The look for a
recorded step (``find_record``) is likewise one compiled statement in autocommit where
DBOS runs a transaction of two queries.
"""

from __future__ import annotations

import weakref
from typing import Any

import attrs

__all__ = ["Record", "find_record", "write_records"]


@attrs.frozen
class Record:
    """A step's outcome as DBOS hands it to its system database, with what DBOS would
    have read from the step's context at that moment."""

    result: Any  # DBOS's OperationResultInternal
    completed_at: int
    owner_xid: str | None
    shard_key: str | None
    child_values: dict[str, Any]


def write_records(sys_db: Any, conn: Any, workflow_id: str, records: list[Record]) -> None:
    """Insert ``records`` (all of ``workflow_id``, in step order) on ``conn``, a
    SQLAlchemy connection in a transaction of DBOS's system database."""
    if not _compiled_once(sys_db, workflow_id, records):
        for record in records:
            sys_db._record_operation_result_txn(
                record.result,
                record.completed_at,
                conn,
                owner_xid=record.owner_xid,
                child_values=record.child_values,
            )
        return
    import sqlalchemy as sa
    from dbos._error import DBOSStepNondeterminismError, DBOSWorkflowConflictIDError

    status = sys_db.tables.workflow_status
    outputs = sys_db.tables.operation_outputs
    columns = [*_ROW, "retention_timestamp"]

    def insert() -> Any:
        return sys_db.dialect.insert(outputs).values(retention_timestamp=sys_db._now_ms_sql())

    def checked_insert() -> Any:
        # The owner check of DBOS's record in the insert's own round trip: the row is
        # inserted only while ``owner`` owns the workflow, whose status row stays locked
        # (FOR NO KEY UPDATE, as DBOS) until the commit, so no hand-off (cancel,
        # recovery) lands before it — and the rest of the transaction needs no check.
        owned = (
            sa.select(sa.literal(1))
            .select_from(status)
            .where(
                status.c.workflow_uuid == sa.bindparam("owned_workflow", type_=sa.Text()),
                status.c.owner_xid == sa.bindparam("owner", type_=sa.Text()),
            )
            .with_for_update(key_share=True)
        )
        row = sa.select(
            *[sa.bindparam(name, type_=outputs.c[name].type) for name in _ROW],
            sys_db._now_ms_sql(),
        ).where(sa.exists(owned))
        return (
            sys_db.dialect.insert(outputs)
            .from_select(columns, row)
            .returning(sa.literal_column("1"))
        )

    checked: set[str] = set()
    for record in records:
        result = record.result
        row = {
            "workflow_uuid": workflow_id,
            "function_id": result["function_id"],
            "function_name": result["function_name"],
            "output": result["output"],
            "error": result["error"],
            "child_workflow_id": result["child_workflow_id"],
            "started_at_epoch_ms": result["started_at_epoch_ms"],
            "completed_at_epoch_ms": record.completed_at,
            "serialization": result["serialization"],
            "application_name": sys_db.app_name,
        }
        owner = record.owner_xid
        try:
            if owner is None or owner in checked:
                sys_db._execute_prepared(conn, "plait.step_record", row, insert)
                continue
            values = {**row, "owned_workflow": workflow_id, "owner": owner}
            inserted = sys_db._execute_prepared(
                conn, "plait.owned_step_record", values, checked_insert, insert_columns=False
            ).first()
        except sa.exc.DBAPIError as exc:
            # A step of this execution recorded already (this transaction is not retried,
            # so it is not a retry of this record): DBOS's word for it.
            if sys_db._is_unique_constraint_violation(exc):
                raise DBOSStepNondeterminismError(workflow_id, result["function_id"]) from None
            raise
        if inserted is None:  # no longer this execution's workflow
            raise DBOSWorkflowConflictIDError(workflow_id)
        checked.add(owner)


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
    "_execute_prepared",
    "_now_ms_sql",
    "_is_unique_constraint_violation",
    "_wf",
    "_wf_values",
    "tables",
    "dialect",
    "app_name",
)
_COLUMNS = {*_ROW, "retention_timestamp"}


def _compiled_once(sys_db: Any, workflow_id: str, records: list[Record]) -> bool:
    """Whether plait may write these records itself (no child workflow among them)."""
    if any(record.child_values or record.result["child_workflow_id"] for record in records):
        return False
    return _plain_postgres(sys_db, workflow_id)


def _plain_postgres(sys_db: Any, workflow_id: str) -> bool:
    """PostgreSQL, no sharding (a workflow's rows found by its id alone), and the step
    table holding the columns DBOS 3 writes (every one, so no column of a newer DBOS is
    left out). What does not depend on the workflow is found once per system database
    (it was a fifth of plait's own CPU in a durable run's bookkeeping)."""
    plain = _plain_databases.get(sys_db)
    if plain is None:
        plain = _plain_databases[sys_db] = _plain_database(sys_db)
    return plain and not sys_db._wf_values(workflow_id)


_plain_databases: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


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
    database, sharding, a DBOS without these internals, a database error it retries)."""
    if not _plain_postgres(sys_db, workflow_id):
        return NotImplemented
    import sqlalchemy as sa
    from dbos._error import DBOSUnexpectedStepError, DBOSWorkflowCancelledError

    status = sys_db.tables.workflow_status
    outputs = sys_db.tables.operation_outputs

    def build() -> Any:
        step = sa.and_(
            outputs.c.workflow_uuid == status.c.workflow_uuid,
            outputs.c.function_id == sa.bindparam("function_id"),
        )
        return (
            sa.select(
                status.c.status,
                outputs.c.function_name,
                outputs.c.output,
                outputs.c.error,
                outputs.c.serialization,
                outputs.c.child_workflow_id,
            )
            .select_from(status.outerjoin(outputs, step))
            .where(status.c.workflow_uuid == sa.bindparam("workflow_uuid"))
        )

    values = {"workflow_uuid": workflow_id, "function_id": function_id}
    try:
        with sys_db.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            row = sys_db._execute_prepared(
                conn, "plait.step_check", values, build, insert_columns=False
            ).first()
    except sa.exc.DBAPIError:
        return NotImplemented  # DBOS's own look retries what can be retried
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
