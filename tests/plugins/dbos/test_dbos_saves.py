"""A thread save inside a durable run is not a DBOS step: it is written once by the
checkpointer's compare-and-set. With the checkpointer in the system database, a step's
record is written in the transaction of the save that follows it (one commit, not two).
A replay after a crash that fell after the saves but before the later steps were
recorded finds them written by this run and does not write them again; a save that
another writer got to first still fails.

Real PostgreSQL (a database of its own), a worker in this process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest

import plait
from plait.checkpoint import StepDelta
from plait.errors import ThreadBusyError
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from plait.models.base import ChatModel

calls: list[str] = []


class NoteModel(ChatModel):
    """Asks for ``note`` with the prompt, then answers with the tool's text (the same
    answer every time it is asked the same thing, as a replayed call would be)."""

    provider = "notes"
    model_name = "notes"

    def invoke(self, messages: Sequence[AnyMessage], **_: Any) -> AIMessage:
        last = messages[-1]
        calls.append(type(last).__name__)
        if isinstance(last, ToolMessage):
            return AIMessage(f"noted: {last.text}")
        assert isinstance(last, HumanMessage)
        return AIMessage("", tool_calls=[ToolCall("note", {"text": last.text}, id=plait.new_id())])


def note(text: str) -> str:
    """Note ``text``; the prompt ``intrude`` makes another writer save to the thread first."""
    if text == "usurp":  # as a takeover does: the run's workflow gets another owner
        with psycopg.connect(_database_of_test, autocommit=True) as conn:
            conn.execute(
                "UPDATE dbos.workflow_status SET owner_xid = 'another' "
                "WHERE workflow_uuid = 'run-1'"
            )
    if text == "duplicate":  # a record of this very step is there already
        from dbos import DBOS

        with psycopg.connect(_database_of_test, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO dbos.operation_outputs (workflow_uuid, function_id, function_name) "
                "VALUES ('run-1', %s, 'plait.tool:note')",
                (DBOS.step_id,),
            )
    if text == "intrude":
        agent = _agent_of_test
        assert agent is not None and agent.checkpointer is not None
        inner = agent.checkpointer.inner  # type: ignore[attr-defined]
        inner.save("t", StepDelta(step=inner.step("t") + 1, values={"x": 1}, run_id="other"))
    return f"noted {text}"


_agent_of_test: plait.Agent | None = None
_executor_of_test = ""
_database_of_test = ""


@pytest.fixture
def worker(
    database_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[plait.Agent]:
    """A worker whose threads are in the system database; or, parametrized with
    ``"sqlite"``, in a SQLite file (the records then commit on DBOS's pool)."""
    global _agent_of_test, _executor_of_test, _database_of_test
    from plait_dbos import Worker

    options = {"database_url": database_url, "poll_interval": 0.05}
    elsewhere = getattr(request, "param", None) == "sqlite"
    agent = plait.create_agent(
        model=NoteModel(),
        tools=[note],
        middleware=[("dbos", options)],
        checkpointer=f"sqlite:///{tmp_path / 'threads.db'}" if elsewhere else database_url,
        name="saves",
    )
    running = Worker(agent, executor_id="saves")
    running.start()
    _agent_of_test, _executor_of_test = agent, running.executor_id
    _database_of_test = database_url
    calls.clear()
    try:
        yield agent
    finally:
        _agent_of_test = None
        running.stop()


def _run(workflow_id: str, prompt: str) -> dict[str, Any]:
    from dbos import SetWorkflowID

    from plait_dbos._worker import _run_workflow

    with SetWorkflowID(workflow_id):
        return _run_workflow("saves", "t", {"prompt": prompt})


def test_a_replay_does_not_write_again_what_the_run_saved(
    worker: plait.Agent, database_url: str
) -> None:
    from plait_dbos._submit import _client

    first = _run("run-1", "hello")
    steps = [s["function_name"] for s in _client(database_url).list_workflow_steps("run-1")]
    load, model, tool = "plait.checkpoint:load", "plait.model:notes", "plait.tool:note"
    assert steps == [load, model, tool, model]  # the saves are not steps
    # The worker "died" after all its saves committed but before anything after the
    # thread's load was recorded: the run is pending again, with one step recorded.
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "DELETE FROM dbos.operation_outputs WHERE workflow_uuid = 'run-1' AND "
            "function_id > (SELECT min(function_id) FROM dbos.operation_outputs "
            "WHERE workflow_uuid = 'run-1')"
        )
        conn.execute(
            "UPDATE dbos.workflow_status SET status = 'PENDING' WHERE workflow_uuid = 'run-1'"
        )
    calls.clear()
    from dbos import DBOS

    # DBOS's recovery of this worker's pending runs, as a worker taking it over does
    (handle,) = DBOS._recover_pending_workflows([_executor_of_test])
    again: dict[str, Any] = handle.get_result()

    assert calls == ["HumanMessage", "ToolMessage"]  # made again, as nothing recorded them
    assert again["text"] == first["text"] == "noted: noted hello"
    assert again["messages"] == first["messages"]
    assert worker.checkpointer is not None
    checkpoint = worker.checkpointer.load("t")
    assert checkpoint is not None
    kinds = [type(m).__name__ for m in checkpoint.messages]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    history = worker.checkpointer.history("t")  # type: ignore[attr-defined]
    assert sorted((i.step, i.run_id) for i in history) == [
        (n, first["run_id"]) for n in (1, 2, 3, 4, 5)
    ]


def test_a_step_is_recorded_in_the_transaction_of_the_save_after_it(
    worker: plait.Agent, database_url: str
) -> None:
    """A run of a model call, a tool and a model call commits its four recorded steps
    and five saves in five transactions: the thread's load with the first save (the
    input, saved before the first call), the first call with the second, the tool with
    the third, the last call with the fourth; the fifth save (the run's end) commits
    alone. Each row's ``xmin`` is the transaction that wrote it."""
    _run("run-1", "hello")
    with psycopg.connect(database_url, autocommit=True) as conn:
        steps = conn.execute(
            "SELECT function_name, xmin::text FROM dbos.operation_outputs "
            "WHERE workflow_uuid = 'run-1' ORDER BY function_id"
        ).fetchall()
        saves = conn.execute(
            "SELECT step, xmin::text FROM plait_steps WHERE thread = 't' ORDER BY step"
        ).fetchall()
    assert [name for name, _ in steps] == [
        "plait.checkpoint:load",
        "plait.model:notes",
        "plait.tool:note",
        "plait.model:notes",
    ]
    assert [step for step, _ in saves] == [1, 2, 3, 4, 5]
    save_of = {xid: step for step, xid in saves}
    assert [save_of.get(xid) for _, xid in steps] == [1, 2, 3, 4]
    assert len({xid for _, xid in steps} | set(save_of)) == 5


def test_a_run_no_longer_owned_records_neither_its_step_nor_its_save(
    worker: plait.Agent, database_url: str
) -> None:
    """The tool's record and the save after it are one transaction, refused together
    when the run's workflow has passed to another owner meanwhile (a takeover, a cancel):
    the thread keeps only what the run wrote while it owned it."""
    from plait_dbos._steps import RecordedCheckpointer

    refused: list[BaseException] = []

    @attrs.frozen
    class Watched(RecordedCheckpointer):
        def save(self, thread_id: str, delta: StepDelta) -> None:
            try:
                super().save(thread_id, delta)
            except BaseException as exc:
                refused.append(exc)
                raise

    assert isinstance(worker.checkpointer, RecordedCheckpointer)
    worker.checkpointer = Watched(worker.checkpointer.inner)
    # DBOS parks an execution that lost its workflow until the owner records an outcome
    ended: list[BaseException] = []

    def parked() -> None:
        try:
            _run("run-1", "usurp")
        except BaseException as exc:
            ended.append(exc)

    run = threading.Thread(target=parked, daemon=True)
    run.start()
    deadline = time.monotonic() + 30
    while not refused and time.monotonic() < deadline:
        time.sleep(0.05)
    # the tool's save, then the run's record of its failure: each refused
    assert refused and {type(e).__name__ for e in refused} == {"DBOSWorkflowConflictIDError"}
    with psycopg.connect(database_url, autocommit=True) as conn:
        steps = conn.execute(
            "SELECT function_name FROM dbos.operation_outputs "
            "WHERE workflow_uuid = 'run-1' ORDER BY function_id"
        ).fetchall()
        saves = conn.execute("SELECT step FROM plait_steps WHERE thread = 't'").fetchall()
        # the "owner" ends the run, which lets the parked execution go
        conn.execute(
            "UPDATE dbos.workflow_status SET status = 'CANCELLED' WHERE workflow_uuid = 'run-1'"
        )
    run.join(30)
    assert [type(e).__name__ for e in ended] == ["DBOSAwaitedWorkflowCancelledError"]
    assert steps == [("plait.checkpoint:load",), ("plait.model:notes",)]
    assert saves == [(1,), (2,)]  # the input's and the model call's


def test_a_save_another_writer_got_to_first_fails(worker: plait.Agent) -> None:
    _run("run-0", "hello")
    with pytest.raises(ThreadBusyError, match="another run wrote to it"):
        _run("run-1", "intrude")
    assert worker.checkpointer is not None
    history = sorted(worker.checkpointer.history("t"), key=lambda i: i.step)  # type: ignore[attr-defined]
    # run-0 saved steps 1-5; run-1 its input (6) and its model's answer (7); the tool's
    # writer took step 8 first
    assert [i.step for i in history][-2:] == [7, 8]
    assert history[-1].run_id == "other" != history[-2].run_id


def test_a_replay_of_a_later_run_sees_the_thread_as_the_run_first_found_it(
    worker: plait.Agent, database_url: str
) -> None:
    from dbos import DBOS

    from plait_dbos._submit import _client

    _run("run-0", "first")
    second = _run("run-1", "second")
    steps = _client(database_url).list_workflow_steps("run-1")
    # The load records the step the thread was at (run-0 wrote steps 1-5), not the thread
    assert (steps[0]["function_name"], steps[0]["output"]) == ("plait.checkpoint:load", 5)
    # The worker "died" after run-1's saves but before its calls were recorded
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "DELETE FROM dbos.operation_outputs WHERE workflow_uuid = 'run-1' AND function_id > %s",
            (steps[0]["function_id"],),
        )
        conn.execute(
            "UPDATE dbos.workflow_status SET status = 'PENDING' WHERE workflow_uuid = 'run-1'"
        )
    calls.clear()
    (handle,) = DBOS._recover_pending_workflows([_executor_of_test])
    again: dict[str, Any] = handle.get_result()

    # The replay saw the thread at step 5 (as run-1 first found it, though the thread
    # now holds run-1's own saves): the same calls, messages and answer
    assert calls == ["HumanMessage", "ToolMessage"]
    assert again["messages"] == second["messages"]
    assert again["text"] == second["text"] == "noted: noted second"
    assert worker.checkpointer is not None
    checkpoint = worker.checkpointer.load("t")
    assert checkpoint is not None and checkpoint.step == 10
    assert [m.text for m in checkpoint.messages if isinstance(m, HumanMessage)] == [
        "first",
        "second",
    ]


def test_a_replay_still_checks_each_recorded_step_by_name(
    worker: plait.Agent, database_url: str
) -> None:
    """Only the steps past the recorded ones skip DBOS's look for a record: a recorded
    step is still read back and compared by name, so a run whose code no longer lines up
    with its record ends in error instead of taking a wrong recorded answer."""
    from dbos import DBOS

    _run("run-1", "hello")
    with psycopg.connect(database_url, autocommit=True) as conn:
        # as if the code had changed: the second recorded step was another model's call
        conn.execute(
            "DELETE FROM dbos.operation_outputs WHERE workflow_uuid = 'run-1' AND function_id > "
            "(SELECT min(function_id) + 1 FROM dbos.operation_outputs "
            "WHERE workflow_uuid = 'run-1')"
        )
        conn.execute(
            "UPDATE dbos.operation_outputs SET function_name = 'plait.model:other' "
            "WHERE workflow_uuid = 'run-1' AND function_name = 'plait.model:notes'"
        )
        conn.execute(
            "UPDATE dbos.workflow_status SET status = 'PENDING' WHERE workflow_uuid = 'run-1'"
        )
    calls.clear()
    (handle,) = DBOS._recover_pending_workflows([_executor_of_test])
    with pytest.raises(Exception, match=r"plait\.model:other") as raised:
        handle.get_result()
    assert type(raised.value).__name__ == "DBOSUnexpectedStepError"
    assert calls == []  # the model was not called in place of the recorded step


def test_a_step_recorded_twice_is_refused_with_dbos_error_and_its_save_with_it(
    worker: plait.Agent, database_url: str
) -> None:
    """A record that finds its step recorded already fails with DBOS's nondeterminism
    error naming the step, and the save riding with it (the tool's answer) does not
    commit."""
    from dbos._error import DBOSStepNondeterminismError

    with pytest.raises(DBOSStepNondeterminismError) as refused:
        _run("run-1", "duplicate")
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT function_id FROM dbos.operation_outputs "
            "WHERE workflow_uuid = 'run-1' AND function_name = 'plait.tool:note'"
        ).fetchone()
    assert row is not None
    assert f"Step {row[0]} of workflow run-1 was recorded twice" in str(refused.value)
    assert worker.checkpointer is not None
    checkpoint = worker.checkpointer.load("t")
    assert checkpoint is not None
    texts = [m.text for m in checkpoint.messages]
    assert "duplicate" in texts  # the prompt's save committed
    assert "noted duplicate" not in texts  # the tool's did not


@pytest.mark.parametrize("worker", ["sqlite"], indirect=True)
def test_with_the_thread_elsewhere_records_commit_on_their_own_before_each_save(
    worker: plait.Agent, database_url: str
) -> None:
    """With the thread in SQLite, the held-back records are written in a transaction of
    their own on DBOS's pool just before each save: the run records its four steps and
    saves its four messages; a record of a step recorded already is refused with DBOS's
    error, and the save it came before is not written."""
    from dbos._error import DBOSStepNondeterminismError

    from plait_dbos._submit import _client

    assert _run("run-0", "hello")["text"] == "noted: noted hello"
    steps = [s["function_name"] for s in _client(database_url).list_workflow_steps("run-0")]
    load, model, tool = "plait.checkpoint:load", "plait.model:notes", "plait.tool:note"
    assert steps == [load, model, tool, model]
    assert worker.checkpointer is not None
    saved = worker.checkpointer.load("t")
    assert saved is not None and [m.text for m in saved.messages][-1] == "noted: noted hello"

    with pytest.raises(DBOSStepNondeterminismError, match="was recorded twice"):
        _run("run-1", "duplicate")
    checkpoint = worker.checkpointer.load("t")
    assert checkpoint is not None
    texts = [m.text for m in checkpoint.messages]
    assert "duplicate" in texts  # the prompt's save was written
    assert "noted duplicate" not in texts  # the tool's was not
