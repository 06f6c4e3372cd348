"""Shared facts of workers and submitters: the workflow's name, DBOS's configuration,
the options found on an agent, and a run's result as plain data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plait.errors import ConfigError

if TYPE_CHECKING:
    from dbos import DBOSConfig

    from plait.agent import Agent, AgentResult
    from plait_dbos._middleware import DBOSMiddleware

WORKFLOW_NAME = "plait.run"
APP_NAME = "plait"
STEP_LAYOUT = "plait-4"
"""DBOS's application version of plait's workflows: which steps a run records, in which
order, and which thread save each step's record is written with. A worker recovers and
dequeues only runs of its own version, so a run started under another layout is never
replayed against this one (it would end in DBOS's unexpected-step error, or save the
thread out of step with its record); a worker that meets one left by a dead worker
leaves it to a worker of that layout and says so (``_takeover``). Bump it whenever what
a run records or saves changes (``tests/plugins/dbos/test_dbos_layout.py`` fails until
then). plait-1: a thread save was a step of its own; plait-2: saves are written by their
compare-and-set, not recorded; plait-3: a step's record is written in the transaction
of the save that follows it (a replay of a plait-2 run could find a save whose step is
not recorded); plait-4: the run's input is saved before its first model call (a save
more: a replay of a plait-3 run finds its saves numbered one off, skips the wrong ones,
writes a step twice and logs finished steps again)."""


def find_options(agent: Agent) -> DBOSMiddleware:
    """The agent's ``dbos`` middleware (its options say where the queue is)."""
    from plait_dbos._middleware import DBOSMiddleware

    for middleware in agent.middleware:
        if isinstance(middleware, DBOSMiddleware):
            return middleware
    raise ConfigError(
        f"plugin 'dbos': agent {agent.name!r} does not use the dbos middleware "
        "(add middleware=['dbos'] or [[middleware]] use = \"dbos\")"
    )


def dbos_config(options: DBOSMiddleware, *, executor_id: str) -> DBOSConfig:
    return {
        "name": APP_NAME,
        "system_database_url": options.database_url,
        "executor_id": executor_id,
        "application_version": STEP_LAYOUT,
        "log_level": "WARNING",
        # DBOS pings each pooled connection before every system-database transaction —
        # two of the ~10 round trips a durable step costs. A dropped connection is
        # retried by DBOS itself (its retry of connection errors), so the ping is spared.
        "db_engine_kwargs": {"pool_pre_ping": False},
    }


def summary(result: AgentResult) -> dict[str, Any]:
    """What a queued run returns to whoever waits for it: plain JSON data."""
    import json

    from plait.messages import unstructure_message

    def jsonable(value: Any) -> Any:
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            return repr(value)
        return value

    return {
        "text": result.text,
        "thread_id": result.thread_id,
        "run_id": result.run_id,
        "interrupts": [{"id": i.id, "value": jsonable(i.value)} for i in result.interrupts],
        "messages": [unstructure_message(m) for m in result.messages],
    }
