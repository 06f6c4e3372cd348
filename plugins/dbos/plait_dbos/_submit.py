"""The submitting side: put a run on the queue from any process, without running
workflow code (a DBOS client talks only to the system database)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowHandle

from plait.agent import Agent
from plait.checkpoint import EventLog
from plait.errors import PlaitError, StoreError, ThreadBusyError
from plait.lazy import frozen
from plait.runlog import END_TYPES, RunJob, event_log
from plait_dbos._config import WORKFLOW_NAME, find_options
from plait_dbos._database import check_database, shown_url
from plait_dbos._middleware import DBOSMiddleware

__all__ = ["DBOSRun", "Piece", "Submitted", "submit", "submit_job"]

_log = logging.getLogger("plait_dbos")

_MISSING: Any = object()
_clients: dict[str, DBOSClient] = {}
_lock = threading.Lock()
_last_ns = 0


def _order_key() -> str:
    """Increasing within this process: a thread's queue is ordered by the time the
    database received each run (to the millisecond), then by workflow id — so runs this
    process submits within one millisecond keep their order too."""
    global _last_ns
    with _lock:
        _last_ns = max(_last_ns + 1, time.time_ns())
        return f"{_last_ns:020d}"


def _client(database_url: str) -> DBOSClient:
    """This process's client of the system database (migrated the first time: a submitter
    may come before any worker), refused if the database cannot be reached or — for
    PostgreSQL — does not exist (no worker serves it)."""
    with _lock:
        client = _clients.get(database_url)
        if client is None:
            check_database(database_url, may_create=False)
            try:
                DBOS.migrate(database_url)
                client = _clients[database_url] = DBOSClient(system_database_url=database_url)
            except Exception as exc:  # SQLAlchemy's two lines, with the URL: say it in one
                raise StoreError(
                    f"plugin 'dbos': cannot use the system database {shown_url(database_url)}: "
                    f"{type(exc).__name__}: {' '.join(str(exc).split('(Background on')[0].split())}"
                ) from None
        return client


@frozen
class Piece:
    """Text of a streamed run's model call, as it came. ``again`` marks the first piece
    of a call made again after its worker died: the pieces shown of that call before
    are void (the thread keeps only the finished call's message)."""

    text: str
    step: int
    again: bool = False


@frozen
class Submitted:
    """A queued run: its workflow id, and ``result()`` to wait for what it returns."""

    workflow_id: str
    thread_id: str
    options: DBOSMiddleware

    def result(self) -> dict[str, Any]:
        """Wait for the run; its result as plain data (``text``, ``interrupts``,
        ``messages``, ``thread_id``, ``run_id``). Raises what the run raised."""
        client = _client(self.options.database_url)
        handle: WorkflowHandle[dict[str, Any]] = client.retrieve_workflow(self.workflow_id)
        value: dict[str, Any] = handle.get_result(polling_interval_sec=0.2)
        return value

    def stream(self) -> Iterator[Piece]:
        """The model's text while the run works (submitted with ``stream=True``), until
        the run ends; then ``result()`` has its outcome."""
        from plait_dbos._steps import STREAM_KEY

        client = _client(self.options.database_url)
        last: dict[int, int] = {}
        for value in client.read_stream(self.workflow_id, STREAM_KEY, polling_interval_sec=0.1):
            step, n = int(value["step"]), int(value["n"])
            again = n <= last.get(step, -1)
            last[step] = n
            yield Piece(str(value["text"]), step, again)


def submit(
    agent: Agent | DBOSMiddleware,
    prompt: str | None = None,
    *,
    thread_id: str,
    resume: Any = _MISSING,
    agent_name: str | None = None,
    stream: bool = False,
) -> Submitted:
    """Queue a run of ``agent`` on ``thread_id``: a new ``prompt``, or ``resume`` (the
    answer to the thread's pending interrupt). Any worker of the queue runs it. Runs of
    one thread run one at a time, in the order they were submitted: each starts when the
    one before has ended (answered, failed or paused).

    ``agent`` may be the agent, or just its ``DBOSMiddleware`` options with ``agent_name``.
    ``stream=True``: the worker streams the model, and ``Submitted.stream()`` yields its
    text as it comes.
    """
    if isinstance(agent, Agent):
        options, name = find_options(agent), agent.name
    else:
        options, name = agent, agent_name or "agent"
    if (prompt is None) == (resume is _MISSING):
        raise PlaitError("plugin 'dbos': submit needs either a prompt or resume=..., not both")
    request: dict[str, Any] = {"prompt": prompt} if resume is _MISSING else {"resume": resume}
    if stream:
        request["stream"] = True
    workflow_id = _enqueue(options, name, thread_id, request)
    return Submitted(workflow_id, thread_id, options)


def _enqueue(options: DBOSMiddleware, name: str, thread_id: str, request: dict[str, Any]) -> str:
    workflow_id = f"plait:{name}:{thread_id}:{_order_key()}-{os.urandom(4).hex()}"
    queued: EnqueueOptions = {
        "queue_name": options.queue,
        "workflow_name": WORKFLOW_NAME,
        "workflow_id": workflow_id,
        "queue_partition_key": thread_id,
    }
    _client(options.database_url).enqueue(queued, name, thread_id, request)
    return workflow_id


_ENDED = frozenset({"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
_GRACE = 30.0  # seconds a cancelled run's worker has to write its log's end itself


class DBOSRun:
    """A recorded run on the queue (``submit_run``'s handle): ``wait`` until its
    workflow has ended, ``cancel`` to cancel the workflow. Its worker writes its events,
    the end included; a run that ended without one (cancelled before a worker took it,
    or given up after too many recoveries) gets its end written here."""

    def __init__(self, job: RunJob, options: DBOSMiddleware, workflow_id: str, log: EventLog):
        self.job = job
        self.options = options
        self.workflow_id = workflow_id
        self.log = log

    def status(self) -> str:
        """The workflow's DBOS status (``ENQUEUED``, ``PENDING``, ``SUCCESS``...)."""
        client = _client(self.options.database_url)
        return str(client.retrieve_workflow(self.workflow_id).get_status().status)

    async def wait(self) -> None:
        while (status := await asyncio.to_thread(self.status)) not in _ENDED:
            await asyncio.sleep(0.2)
        deadline = time.monotonic() + (_GRACE if status == "CANCELLED" else 5.0)
        while not await asyncio.to_thread(self._ended) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        await asyncio.to_thread(self._end, status)

    async def cancel(self) -> None:
        client = _client(self.options.database_url)
        await asyncio.to_thread(client.cancel_workflow, self.workflow_id)

    def _ended(self) -> bool:
        """Whether the run's log has its end event (a later run's start counts too)."""
        last = self.log.last_event(self.job.thread_id)
        if last <= self.job.start:
            return False
        tail = self.log.read_events(self.job.thread_id, after=last - 1, limit=1)
        return bool(tail) and tail[0][1].get("type") in END_TYPES | {"run_started"}

    def _end(self, status: str) -> None:
        """Write the run's end if its worker wrote none."""
        for _ in range(20):
            if self._ended():
                return
            last = self.log.last_event(self.job.thread_id)
            end: dict[str, Any]
            if status == "CANCELLED":
                end = {"type": "run_finished", "run_id": self.job.run_id, "status": "cancelled"}
            else:
                end = {
                    "type": "run_error",
                    "run_id": self.job.run_id,
                    "message": f"the run's workflow {self.workflow_id} ended {status} "
                    "without finishing its run log",
                    "code": "workflow_" + status.lower(),
                }
            try:
                self.log.append_events(self.job.thread_id, [end], after=last)
                return
            except ThreadBusyError:  # its worker is writing after all
                time.sleep(0.2)
        _log.warning("could not end the run log of workflow %s", self.workflow_id)


def submit_job(options: DBOSMiddleware, agent: Agent, job: RunJob) -> DBOSRun:
    """Queue a recorded run of ``agent`` (see the ``submit_run`` hook)."""
    log = event_log(agent)
    workflow_id = _enqueue(options, agent.name, job.thread_id, {"job": job.to_json()})
    return DBOSRun(job, options, workflow_id, log)
