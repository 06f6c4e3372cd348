"""``STEP_LAYOUT`` names what a durable run records, and a worker replays only runs of
its own layout.

- The reference runs record the steps and saves that ``data/layout-LAYOUT.json`` holds
  for the current ``STEP_LAYOUT``: a change to them (a save more, a step more, a record
  written with another save) fails here until the layout is bumped and recorded anew.
- A run of this layout left by a SIGKILLed worker (``data/run-LAYOUT.json``, the system
  database as the dead worker left it) is finished by a worker of this plait: no tool
  run again, each save and run-log event once.
- A run of an older layout (``data/run-plait-3.json``, recorded by plait before its
  input save) is left alone: nothing replayed or written, the dead worker kept for a
  worker of that layout, and the worker's log says which runs wait for which layout
  and what to do; once they are cancelled the dead worker is forgotten.

Real PostgreSQL (a database of its own) and real worker processes. ``layouts.py``
writes the data files.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from layouts import DATA, DEAD_WORKER, dump_state, load_state, record_layout  # noqa: E402
from worker_process import start_worker  # noqa: E402

RECORDED_RUNS = sorted(DATA.glob("run-*.json"))
_BUMP = (
    "bump STEP_LAYOUT in plugins/dbos/plait_dbos/_config.py (and say why in its "
    "docstring), then record the new layout: PLAIT_TEST_POSTGRES_URL=... python "
    "tests/plugins/dbos/layouts.py"
)


def _current() -> str:
    from plait_dbos._config import STEP_LAYOUT

    return STEP_LAYOUT


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_a_run_records_the_layout_step_layout_names(database_url: str, tmp_path: Path) -> None:
    layout = DATA / f"layout-{_current()}.json"
    assert layout.exists(), f"no recorded layout for STEP_LAYOUT {_current()!r}: {_BUMP}"
    recorded = record_layout(database_url, tmp_path / "tool.log")
    assert recorded == _read(layout), (
        f"the steps and saves a run records are no longer those of layout {_current()!r} "
        f"({layout.name}): runs it recorded would be replayed out of step; {_BUMP}"
    )


def test_each_older_layout_records_otherwise() -> None:
    """A layout bumped without a change would strand runs in flight for nothing."""
    current = _read(DATA / f"layout-{_current()}.json")
    older = [path for path in DATA.glob("layout-*.json") if path.stem != f"layout-{_current()}"]
    assert older
    for path in older:
        layout = _read(path)
        assert layout["layout"] != current["layout"]
        assert layout["runs"] != current["runs"], path.name
    # plait-3 -> plait-4: the same DBOS steps, a save more (the input's) before the first
    # model call, so the first call's record rides on the second save, not the first
    plait3 = _read(DATA / "layout-plait-3.json")["runs"][0]
    plait4 = _read(DATA / "layout-plait-4.json")["runs"][0]
    assert [name for name, _ in plait3["steps"]] == [name for name, _ in plait4["steps"]]
    assert [node for _, node in plait4["saves"]] == ["input"] + [n for _, n in plait3["saves"]]


def _workflows(state: dict[str, Any]) -> dict[str, str]:
    """The recorded runs' workflow ids by thread (``plain`` and ``logged``)."""
    return {
        row["workflow_uuid"].split(":")[2]: row["workflow_uuid"]
        for row in state["dbos.workflow_status"]
    }


def _start(database_url: str, tmp_path: Path) -> tuple[Any, Path]:
    """A worker of this plait, labelled as the dead one: it looks at the dead worker's
    runs as it starts (``plait worker --id``, as after an upgrade)."""
    log = tmp_path / "tool.log"
    process, _ = start_worker(
        HERE / "durable_app.py",
        DEAD_WORKER,
        database_url,
        str(log),
        errors=tmp_path / "worker.err",
    )
    return process, log


def _stop(process: Any) -> None:
    process.kill()
    process.wait()


def test_a_run_of_this_layout_left_by_a_dead_worker_is_finished(
    database_url: str, tmp_path: Path
) -> None:
    path = DATA / f"run-{_current()}.json"
    assert path.exists(), f"no recorded run for STEP_LAYOUT {_current()!r}: {_BUMP}"
    recorded = _read(path)
    state = recorded["state"]
    load_state(database_url, state)
    from plait_dbos._submit import _client

    client = _client(database_url)
    workflows = _workflows(state)
    before = {row["workflow_uuid"]: row for row in state["dbos.workflow_status"]}
    assert {row["status"] for row in before.values()} == {"PENDING"}
    process, log = _start(database_url, tmp_path)
    try:
        results = {
            thread: client.retrieve_workflow(wf).get_result(polling_interval_sec=0.1)
            for thread, wf in workflows.items()
        }
    finally:
        _stop(process)

    assert results["plain"]["text"] == "done: recorded alpha"
    assert results["logged"]["text"] == "done: recorded beta"
    # the dead worker's tool runs were recorded: none ran again
    assert not log.exists() or "start" not in log.read_text()
    after = dump_state(database_url)
    import durable_app

    checkpointer = durable_app.build_agent(database_url, str(log)).checkpointer
    saves = _read(DATA / f"layout-{_current()}.json")["runs"][0]["saves"]
    assert checkpointer is not None
    for thread, workflow_id in workflows.items():
        steps = client.list_workflow_steps(workflow_id)
        names = [step["function_name"] for step in steps]
        loads = ["plait.checkpoint:load"] * (2 if thread == "logged" else 1)
        assert names == [*loads, "plait.model:echo", "plait.tool:record", "plait.model:echo"]
        checkpoint = checkpointer.load(thread)
        assert checkpoint is not None
        kinds = [type(m).__name__ for m in checkpoint.messages]
        assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
        history = sorted(checkpointer.history(thread), key=lambda info: info.step)  # type: ignore[attr-defined]
        # each save once, as the layout has them: the dead worker's and the rest
        assert [[i.step, i.node] for i in history] == saves
        assert len({i.run_id for i in history}) == 1
    # the run log: the dead worker's events stand, the rest follows once, none voided
    logged = [row for row in after["public.plait_events"] if row["thread"] == "logged"]
    events = [json.loads(row["data"]) for row in sorted(logged, key=lambda row: row["seq"])]
    old = sorted(
        (row for row in state["public.plait_events"] if row["thread"] == "logged"),
        key=lambda row: row["seq"],
    )
    assert events[: len(old)] == [json.loads(row["data"]) for row in old]
    kinds = [event["type"] for event in events]
    assert "step_restarted" not in kinds
    assert kinds[-1] == "run_finished" and events[-1]["status"] == "success"
    assert kinds.count("tool_result") == 1 and kinds.count("message_start") == 1


OLDER = [path for path in RECORDED_RUNS if path.stem != f"run-{_current()}"]


@pytest.mark.parametrize("path", OLDER, ids=[path.stem for path in OLDER])
def test_a_run_of_an_older_layout_is_left_to_a_worker_of_that_layout(
    path: Path, database_url: str, tmp_path: Path
) -> None:
    recorded = _read(path)
    layout, state = recorded["layout"], recorded["state"]
    assert layout != _current()
    load_state(database_url, state)
    (dead,) = state["public.plait_dbos_workers"]
    from plait_dbos._submit import _client

    client = _client(database_url)
    workflows = _workflows(state)
    process, log = _start(database_url, tmp_path)
    try:
        # started (it looked at the dead worker's runs as it started), then three
        # rounds of its heartbeat, each of which finds the dead worker stale
        time.sleep(3 * 1.0 + 0.5)
        kept = dump_state(database_url)
        statuses = {
            wf: client.retrieve_workflow(wf).get_status() for wf in sorted(workflows.values())
        }
        for workflow_id in workflows.values():
            client.cancel_workflow(workflow_id)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _workers(database_url) != []:
            time.sleep(0.1)
        rows_after_cancel = _workers(database_url)
    finally:
        _stop(process)
    errors = (tmp_path / "worker.err").read_text()

    # nothing replayed: still pending under their own layout, no step, save or event more
    assert {wf: (s.status, s.app_version) for wf, s in statuses.items()} == {
        wf: ("PENDING", layout) for wf in workflows.values()
    }
    for table in ("dbos.operation_outputs", "public.plait_steps", "public.plait_events"):
        assert _rows(kept[table]) == _rows(state[table]), table
    assert not log.exists()  # no tool ran
    # the dead worker is kept for a worker of its layout to take its runs over
    assert [row["executor_id"] for row in kept["public.plait_dbos_workers"]].count(
        dead["executor_id"]
    ) == 1
    # said once, naming both layouts, the runs and what to do
    lines = [line for line in errors.splitlines() if "unfinished run(s)" in line]
    assert len(lines) == 1, errors
    (line,) = lines
    assert f"worker {dead['executor_id']!r} left 2 unfinished run(s) recorded under step " in line
    assert f"layout {layout!r}, which this worker (layout {_current()!r}) cannot continue" in line
    assert all(wf in line for wf in workflows.values())
    assert f"Start a worker of the plait release that records {layout!r} to finish them" in line
    assert "or cancel them (`dbos workflow cancel ID -s DATABASE_URL`)" in line
    # cancelled, they no longer wait: the dead worker is forgotten
    assert rows_after_cancel == []


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def _workers(database_url: str) -> list[str]:
    """The executors in the heartbeat table other than live ones of this test."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT executor_id FROM plait_dbos_workers WHERE "
            "beat_ms < (extract(epoch from clock_timestamp()) * 1000)::bigint - takeover_ms"
        ).fetchall()
    return [str(row[0]) for row in rows]
