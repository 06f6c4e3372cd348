"""The worker side: the workflow every queued run executes, and ``Worker``, a process's
connection to the queue.

DBOS keeps one instance per process, so one ``Worker`` runs at a time in a process; it
may serve several agents (by name) from the same database and queue.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from dbos import DBOS

from plait.agent import Agent
from plait.errors import ConfigError, PlaitError
from plait.types import Command
from plait_dbos._config import WORKFLOW_NAME, dbos_config, find_options, summary
from plait_dbos._middleware import DBOSMiddleware
from plait_dbos._steps import RecordedCheckpointer, workflow_ids

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
    run_input: Any = Command(resume=request["resume"]) if "resume" in request else request["prompt"]
    with workflow_ids(workflow_id):
        result = agent.invoke(run_input, thread_id=thread_id)
    return summary(result)


class Worker:
    """Serves the queue of ``agents`` (all with the ``dbos`` middleware and the same
    ``database_url`` and ``queue``) in this process.

    ``executor_id`` names this worker: runs it had started when it died are finished
    when a worker with the same id starts again, so give each worker a stable id (the
    machine and slot, e.g. ``"host-1/0"``). The agents' checkpointers are wrapped so that
    loading and saving a thread are steps of the run.
    """

    def __init__(self, agents: Agent | Sequence[Agent], *, executor_id: str = "plait") -> None:
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
        self.executor_id = executor_id
        self._stopped = threading.Event()

    def start(self) -> None:
        """Connect, register the queue, finish this executor's unfinished runs and start
        taking runs from the queue (in DBOS's threads)."""
        for agent in self.agents:
            if agent.name in _agents and _agents[agent.name] is not agent:
                raise ConfigError(f"plugin 'dbos': two agents named {agent.name!r}")
            assert agent.checkpointer is not None
            if not isinstance(agent.checkpointer, RecordedCheckpointer):
                agent.checkpointer = RecordedCheckpointer(agent.checkpointer)
            _agents[agent.name] = agent
        DBOS(config=dbos_config(self.options, executor_id=self.executor_id))
        DBOS.launch()
        register_queue(self.options)

    def stop(self) -> None:
        self._stopped.set()
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


def register_queue(options: DBOSMiddleware) -> None:
    DBOS.register_queue(
        options.queue,
        worker_concurrency=options.worker_concurrency,
        partition_concurrency=1,
        polling_interval_sec=options.poll_interval,
    )
