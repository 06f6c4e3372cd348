"""The worker side: the workflow every queued run executes, and ``Worker``, a process's
connection to the queue.

DBOS keeps one instance per process, so one ``Worker`` runs at a time in a process; it
may serve several agents (by name) from the same database and queue.
"""

from __future__ import annotations

import secrets
import socket
import threading
from collections.abc import Sequence
from typing import Any

from dbos import DBOS
from dbos._error import DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError

from plait.agent import Agent
from plait.errors import ConfigError, PlaitError
from plait.runlog import LogWriter, RunJob, event_log, record_run
from plait.types import Command
from plait_dbos._config import STEP_LAYOUT, WORKFLOW_NAME, dbos_config, find_options, summary
from plait_dbos._database import check_database, install_one_line_failures
from plait_dbos._middleware import DBOSMiddleware
from plait_dbos._steps import RecordedCheckpointer, publishing, workflow_ids
from plait_dbos._takeover import Beater, Heartbeats

__all__ = ["Worker"]

_agents: dict[str, Agent] = {}


@DBOS.workflow(name=WORKFLOW_NAME, max_recovery_attempts=1000)
def _run_workflow(agent_name: str, thread_id: str, request: dict[str, Any]) -> dict[str, Any]:
    """One queued run: the agent's invoke on the thread, with ids from the workflow id."""
    try:
        agent = _agents[agent_name]
    except KeyError:
        raise PlaitError(
            f"plugin 'dbos': this worker serves {sorted(_agents)}, not agent {agent_name!r}"
        ) from None
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    if "job" in request:
        with workflow_ids(workflow_id):
            return _record(agent, RunJob.from_json(request["job"]))
    run_input: Any = Command(resume=request["resume"]) if "resume" in request else request["prompt"]
    with workflow_ids(workflow_id):
        if not request.get("stream"):
            return summary(agent.invoke(run_input, thread_id=thread_id))
        # Streamed: the model is streamed and each call's text written to the run's
        # DBOS stream as it comes (the events themselves are not needed here).
        with publishing():
            stream = agent.stream(run_input, thread_id=thread_id, mode="messages")
            for _ in stream:
                pass
        assert stream.result is not None
        return summary(stream.result)


def _record(agent: Agent, job: RunJob) -> dict[str, Any]:
    """A recorded run (``submit_run``'s): its events appended to the thread's run log
    after its ``run_started``. Replayed after a takeover, the events of the steps the
    dead worker finished are already there and are not written again."""
    writer = LogWriter(event_log(agent), job.thread_id, start=job.start)
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    database_url = find_options(agent).database_url

    def cancelled(exc: BaseException) -> bool:
        """DBOS stops a cancelled workflow at its next step (or its step's record): with
        ``DBOSWorkflowCancelledError``, or as an execution that no longer owns its
        workflow — which is also what a worker taken over meets, so the status says."""
        if isinstance(exc, DBOSWorkflowCancelledError):
            return True
        if not isinstance(exc, DBOSWorkflowConflictIDError):
            return False
        from plait_dbos._submit import _client

        status = _client(database_url).retrieve_workflow(workflow_id).get_status()
        return bool(status.status == "CANCELLED")

    try:
        result = record_run(
            agent,
            job.input,
            thread_id=job.thread_id,
            run_id=job.run_id,
            emit=writer.emit,
            cancelled=cancelled,
        )
    finally:
        writer.flush()
    if result is None:  # failed: its run_error is in the log
        return {"thread_id": job.thread_id, "run_id": job.run_id, "failed": True}
    return summary(result)


class Worker:
    """Serves the queue of ``agents`` (all with the ``dbos`` middleware and the same
    ``database_url`` and ``queue``) in this process.

    Each worker is a DBOS executor of its own (``executor_id`` and a random part) that
    records a heartbeat every ``heartbeat_interval``; when a worker's heartbeat is older
    than its ``takeover_after``, any live worker puts its unfinished runs back on the
    queue, where the next free worker continues them from their last recorded step.
    ``executor_id`` (default: the host name) labels the worker; a worker started with an
    ``executor_id`` takes over the runs of earlier workers of that id at once, without
    waiting — so give one id (host and slot, e.g. ``"host-1/0"``) to one live process
    at a time. The agents' checkpointers are wrapped so that loading and saving a thread
    are steps of the run.
    """

    def __init__(self, agents: Agent | Sequence[Agent], *, executor_id: str | None = None) -> None:
        agents = [agents] if isinstance(agents, Agent) else list(agents)
        if not agents:
            raise ConfigError("plugin 'dbos': a Worker needs at least one agent")
        options = [find_options(agent) for agent in agents]
        first = options[0]
        for agent, opts in zip(agents, options, strict=True):
            if (opts.database_url, opts.queue) != (first.database_url, first.queue):
                raise ConfigError(
                    f"plugin 'dbos': agent {agent.name!r} uses another database_url or "
                    "queue than the first agent; one Worker serves one queue"
                )
            if agent.checkpointer is None:
                raise ConfigError(
                    f"plugin 'dbos': agent {agent.name!r} has no checkpointer; durable runs "
                    "keep their threads in one (e.g. checkpointer = 'postgresql://...')"
                )
        self.options: DBOSMiddleware = first
        self.agents = agents
        self.label = executor_id or socket.gethostname()
        self._restarted = executor_id is not None
        self.executor_id = f"{self.label}#{secrets.token_hex(4)}"
        """The DBOS executor id of this process (its label and a random part)."""
        self._stopped = threading.Event()
        self._beater = Beater(
            Heartbeats(first.database_url, timeout=first.heartbeat_interval),
            executor_id=self.executor_id,
            label=self.label,
            interval=first.heartbeat_interval,
            takeover_after=first.takeover_after,
            recover=_recover,
            left_behind=_left_behind,
        )

    @property
    def taken_over(self) -> int:
        """Runs of dead workers this worker has put back on the queue."""
        return self._beater.taken_over

    def start(self) -> None:
        """Record a first heartbeat, connect, register the queue, take over the runs of
        earlier workers of this ``executor_id``, and start taking runs from the queue
        (in DBOS's threads) and beating (in a thread of its own)."""
        for agent in self.agents:
            if agent.name in _agents and _agents[agent.name] is not agent:
                raise ConfigError(f"plugin 'dbos': two agents named {agent.name!r}")
            assert agent.checkpointer is not None
            if not isinstance(agent.checkpointer, RecordedCheckpointer):
                agent.checkpointer = RecordedCheckpointer(agent.checkpointer)
            _agents[agent.name] = agent
        # The system database's tables first: the heartbeat table lives beside them.
        check_database(self.options.database_url, may_create=True)
        install_one_line_failures()
        DBOS.migrate(self.options.database_url)
        self._beater.first_beat()
        DBOS(config=dbos_config(self.options, executor_id=self.executor_id))
        DBOS.launch()
        register_queue(self.options)
        if self._restarted:
            beats = self._beater.heartbeats
            self._beater.take_over(beats.labelled(self.label, self.executor_id))
        self._beater.start()

    def take_over(self) -> int:
        """Put the unfinished runs of workers whose heartbeat is stale back on the queue
        now (the heartbeat thread does it every ``heartbeat_interval``); how many."""
        beats = self._beater.heartbeats
        return self._beater.take_over(beats.stale(self.executor_id))

    def stop(self) -> None:
        self._stopped.set()
        self._beater.stop()
        DBOS.destroy(workflow_completion_timeout_sec=0)
        for agent in self.agents:
            _agents.pop(agent.name, None)

    def run(self) -> None:
        """``start``, then serve until ``stop`` (or Ctrl-C / SIGTERM in the CLI)."""
        self.start()
        try:
            self._stopped.wait()
        finally:
            if not self._stopped.is_set():
                self.stop()


def _recover(executor_id: str) -> int:
    """DBOS's own recovery of another executor: its PENDING workflows go back on their
    queue (only while still its own, so recovering twice recovers once)."""
    return len(DBOS._recover_pending_workflows([executor_id]))


def _left_behind(executor_id: str) -> dict[str, list[str]]:
    """Another executor's unfinished runs recorded under another step layout (which
    DBOS's recovery leaves alone): their workflow ids by layout."""
    rows = DBOS.list_workflows(
        status="PENDING",
        executor_id=executor_id,
        name=WORKFLOW_NAME,
        load_input=False,
        load_output=False,
    )
    waiting: dict[str, list[str]] = {}
    for row in rows:
        if row.app_version is not None and row.app_version != STEP_LAYOUT:
            waiting.setdefault(row.app_version, []).append(row.workflow_id)
    return waiting


def register_queue(options: DBOSMiddleware) -> None:
    DBOS.register_queue(
        options.queue,
        worker_concurrency=options.worker_concurrency,
        partition_concurrency=1,
        polling_interval_sec=options.poll_interval,
    )
