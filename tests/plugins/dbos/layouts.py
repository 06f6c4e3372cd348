"""What a durable run records, in the terms ``STEP_LAYOUT`` names: the tests of
``test_dbos_layout`` compare it with the files in ``data/``, which this module also writes.

- ``record_layout``: reference runs served by a worker in this process; for each, its
  DBOS steps in order, each with the thread save whose transaction carried its record,
  and its thread saves with the node that wrote each.
- ``record_state``: a run recorded by a worker process SIGKILLed in the middle of its
  second model call, as the system database then holds it (``dump_state``), for
  ``load_state`` to put back into a database of a test.

Run ``python tests/plugins/dbos/layouts.py`` (``PLAIT_TEST_POSTGRES_URL`` set) to write
``data/layout-LAYOUT.json`` and ``data/run-LAYOUT.json`` for the layout of the plait on
the path: after bumping ``STEP_LAYOUT``, or, with ``PYTHONPATH`` naming an older
checkout's ``core``, ``plugins/dbos`` and ``plugins/postgres``, for an older layout.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

HERE = Path(__file__).parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE))

import durable_app  # noqa: E402
from app_support import dbos  # noqa: E402
from worker_process import start_worker  # noqa: E402

import plait  # noqa: E402

DEAD_WORKER = "recorder"
"""The label of the worker a recorded state's run was left by."""
_SCHEMAS = ("dbos", "public")
_NOT_STATE = frozenset({"dbos.dbos_migrations"})  # the schema's version: the loader's own


# -- the layout -------------------------------------------------------------------------------


def _approving(database_url: str, log: str) -> plait.Agent:
    """The reference agent with a person approving each call of its tool."""
    return plait.create_agent(
        model=durable_app.EchoModel(),
        tools=[durable_app.make_record(database_url, log)],
        middleware=[
            dbos(database_url, worker_concurrency=4),
            ("human_in_the_loop", {"interrupt_on": {"record": True}}),
        ],
        checkpointer=database_url,
        name="approving",
    )


def record_layout(database_url: str, log: Path) -> dict[str, Any]:
    """The layout of the reference runs (``{"layout": ..., "runs": [...]}``)."""
    from plait.runlog import RunJob, event_log
    from plait_dbos import Worker, submit
    from plait_dbos._config import STEP_LAYOUT
    from plait_dbos._submit import _client, submit_job

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("create table if not exists effects (key text primary key, item text)")
    agent = durable_app.build_agent(database_url, str(log))
    approving = _approving(database_url, str(log))
    worker = Worker([agent, approving], executor_id="layout")
    worker.start()
    client = _client(database_url)
    runs: list[dict[str, Any]] = []

    def wait(what: str, workflow_id: str, thread_id: str) -> None:
        client.retrieve_workflow(workflow_id).get_result(polling_interval_sec=0.1)
        runs.append(_run_layout(database_url, what, workflow_id, thread_id, saved[thread_id]))
        saved[thread_id] += len(runs[-1]["saves"])

    saved = {"t": 0, "a": 0, "logged": 0}  # the step each thread is at

    try:
        for what, prompt in (("a first run on a new thread", "alpha"), ("a later run", "beta")):
            queued = submit(agent, prompt, thread_id="t")
            wait(what, queued.workflow_id, "t")
        queued = submit(approving, "gamma", thread_id="a")
        wait("a run paused for approval", queued.workflow_id, "a")
        queued = submit(approving, thread_id="a", resume={"decisions": [{"type": "approve"}]})
        wait("its resume, approved", queued.workflow_id, "a")
        log_ = event_log(agent)
        start = log_.append_events("logged", [{"type": "run_started", "run_id": "r"}], after=0)
        job = submit_job(worker.options, agent, RunJob("logged", "delta", "r", start))
        wait("a recorded run (plait serve's)", job.workflow_id, "logged")
    finally:
        worker.stop()
    return {"layout": STEP_LAYOUT, "runs": runs}


def _run_layout(
    database_url: str, what: str, workflow_id: str, thread_id: str, after: int
) -> dict[str, Any]:
    """The run's steps, each with the save its record was written with (numbered from
    the run's first save; ``None``: written alone), and the saves after step ``after``."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        steps = conn.execute(
            "SELECT function_name, xmin::text FROM dbos.operation_outputs "
            "WHERE workflow_uuid = %s ORDER BY function_id",
            (workflow_id,),
        ).fetchall()
        saves = conn.execute(
            "SELECT node, xmin::text FROM plait_steps WHERE thread = %s AND step > %s "
            "ORDER BY step",
            (thread_id, after),
        ).fetchall()
    save_of = {xid: n for n, (_, xid) in enumerate(saves, start=1)}
    return {
        "run": what,
        "steps": [[name, save_of.get(xid)] for name, xid in steps],
        "saves": [[n, node] for n, (node, _) in enumerate(saves, start=1)],
    }


# -- a recorded state ---------------------------------------------------------------------------


def dump_state(database_url: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of the system database's tables (DBOS's and plait's), by table."""
    state: dict[str, list[dict[str, Any]]] = {}
    with psycopg.connect(database_url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema = ANY(%s) AND table_type = 'BASE TABLE' ORDER BY 1, 2",
            (list(_SCHEMAS),),
        ).fetchall()
        for schema, table in tables:
            if f"{schema}.{table}" in _NOT_STATE:
                continue
            query = sql.SQL("SELECT coalesce(json_agg(r), '[]') FROM {}.{} r").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            row = conn.execute(query).fetchone()
            assert row is not None
            if row[0]:
                state[f"{schema}.{table}"] = row[0]
    return state


def load_state(database_url: str, state: dict[str, list[dict[str, Any]]]) -> None:
    """Put a dumped state into the (empty) database: the tables made as this plait and
    DBOS make them, then each dumped table's rows in place of any there."""
    from dbos import DBOS

    from plait_dbos._takeover import Heartbeats

    DBOS.migrate(database_url)
    Heartbeats(database_url).create()
    threads: Any = durable_app.build_agent(database_url, os.devnull).checkpointer
    threads.load("-"), threads.read_events("-"), threads.history("-"), threads.run_lease("-")
    with psycopg.connect(database_url) as conn:
        conn.execute("create table if not exists effects (key text primary key, item text)")
        for name, rows in state.items():
            schema, table = name.split(".")
            target = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))
            columns = sql.SQL(", ").join(map(sql.Identifier, sorted({k for r in rows for k in r})))
            conn.execute(sql.SQL("DELETE FROM {}").format(target))
            conn.execute(
                sql.SQL(
                    "INSERT INTO {t} ({c}) OVERRIDING SYSTEM VALUE "
                    "SELECT {c} FROM json_populate_recordset(NULL::{t}, %s)"
                ).format(t=target, c=columns),
                (json.dumps(rows),),
            )
        # identity columns go on after the loaded rows
        identities = conn.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = ANY(%s) AND is_identity = 'YES'",
            (list(_SCHEMAS),),
        ).fetchall()
        for schema, table, column in identities:
            if f"{schema}.{table}" in state:
                conn.execute(
                    sql.SQL(
                        "SELECT setval(pg_get_serial_sequence(%s, %s), max({c})) FROM {t} "
                        "HAVING max({c}) IS NOT NULL"
                    ).format(
                        c=sql.Identifier(column),
                        t=sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table)),
                    ),
                    (f"{schema}.{table}", column),
                )


def record_state(database_url: str, tmp: Path) -> dict[str, Any]:
    """Two runs (a plain one on thread ``plain``, a recorded one on ``logged``) served by
    a worker process labelled ``DEAD_WORKER``, SIGKILLed during their second model call
    (each has recorded its load, first call and tool); the state it left."""
    from plait.runlog import RunJob, event_log
    from plait_dbos import submit
    from plait_dbos._config import STEP_LAYOUT, find_options
    from plait_dbos._submit import submit_job

    log = tmp / "tool.log"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("create table effects (key text primary key, item text)")
    worker, _ = start_worker(
        HERE / "durable_app.py",
        DEAD_WORKER,
        database_url,
        str(log),
        errors=tmp / "recorder.err",
        env={"DURABLE_MODEL_SECONDS": "3"},
    )
    try:
        agent = durable_app.build_agent(database_url, str(log))
        submit(agent, "alpha", thread_id="plain")
        run_log = event_log(agent)
        start = run_log.append_events("logged", [{"type": "run_started", "run_id": "r"}], after=0)
        submit_job(find_options(agent), agent, RunJob("logged", "beta", "r", start))
        deadline = time.monotonic() + 60
        while _count(log, "done") < 2:
            assert time.monotonic() < deadline, (tmp / "recorder.err").read_text()
            time.sleep(0.05)
        time.sleep(1.0)  # the tools' saves are in; the second calls take 3 s
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    return {"layout": STEP_LAYOUT, "state": dump_state(database_url)}


def _count(log: Path, kind: str) -> int:
    if not log.exists():
        return 0
    return sum(line.startswith(kind + " ") for line in log.read_text().splitlines())


@contextmanager
def scratch_database() -> Iterator[str]:
    """A database of its own on ``PLAIT_TEST_POSTGRES_URL``'s server, dropped after."""
    base = os.environ["PLAIT_TEST_POSTGRES_URL"]
    name = f"plait_dbos_layout_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"{base.rpartition('/')[0]}/{name}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(drop.format(sql.Identifier(name)))


def write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    import tempfile

    from plait_dbos._config import STEP_LAYOUT

    DATA.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, scratch_database() as url:
        write(DATA / f"layout-{STEP_LAYOUT}.json", record_layout(url, Path(folder) / "a.log"))
    with tempfile.TemporaryDirectory() as folder, scratch_database() as url:
        write(DATA / f"run-{STEP_LAYOUT}.json", record_state(url, Path(folder)))
    print(f"wrote the layout and a recorded run of {STEP_LAYOUT} to {DATA}")
