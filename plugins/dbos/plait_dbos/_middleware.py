"""``dbos``: the middleware that makes an agent's runs durable DBOS workflows.

Its options say where the queue lives; ``plait worker`` and ``plait submit`` (or
``plait_dbos.Worker`` and ``plait_dbos.submit``) read them from the agent. Around each
run it installs the step performer when the run is a workflow, and refuses a run that
is not one (unless told otherwise), because such a run would quietly not be durable.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Literal

import attrs

from plait import effects
from plait.agent import Agent, AgentResult
from plait.errors import ConfigError
from plait.lazy import frozen
from plait.middleware import Middleware
from plait.options import FieldError, expected, number, positive_or_none
from plait.runlog import RunHandle, RunJob
from plait.types import RunRequest
from plait_dbos._steps import StepPerformer, in_workflow

__all__ = ["DBOSMiddleware"]

_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")


def _database_url(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value.startswith(("postgresql://", "postgres://", "postgresql+", "sqlite://")):
        wanted = "a postgresql://... or sqlite:///FILE URL"
        raise FieldError(attribute.name, expected(wanted, value))


def _queue_name(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not _QUEUE_NAME.match(value):
        wanted = "1-100 letters, digits or '_.:-'"
        raise FieldError(attribute.name, expected(wanted, value))


@frozen(kw_only=True)
class DBOSMiddleware(Middleware):
    """Runs of this agent are DBOS workflows on a queue, served by ``plait worker``
    processes; each model call, tool run and thread load is a step."""

    database_url: str = attrs.field(default="sqlite:///plait_dbos.sqlite", validator=_database_url)
    """The DBOS system database: ``postgresql://...`` for workers on many machines, or
    ``sqlite:///FILE`` (the default) to try it on one."""
    queue: str = attrs.field(default="plait", validator=_queue_name)
    """The DBOS queue runs are put on; every worker of the agent serves it."""
    worker_concurrency: int | None = attrs.field(default=4, validator=positive_or_none)
    """Most runs one worker process runs at once (``None``: no limit)."""
    poll_interval: float = attrs.field(default=1.0, validator=number(above=0))
    """Seconds between a worker's looks at the queue (the longest a queued run waits
    for an idle worker)."""
    heartbeat_interval: float = attrs.field(default=5.0, validator=number(above=0))
    """Seconds between a worker's heartbeats (and its looks for dead workers)."""
    takeover_after: float = attrs.field(default=30.0, validator=number(above=0))
    """Seconds without a heartbeat after which a worker counts as dead and another worker
    takes its unfinished runs over. A worker that could not record a heartbeat for half
    this time stops itself first, so no run is ever served by two workers at once.
    At least three heartbeat intervals."""
    outside_workflow: Literal["error", "allow"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "allow"))
    )
    """A run started directly (``agent.invoke``) rather than through the queue: ``'error'``
    refuses it, ``'allow'`` runs it without durability."""

    def __attrs_post_init__(self) -> None:
        if self.takeover_after < 3 * self.heartbeat_interval:
            raise ConfigError(
                "expected at least three "
                f"heartbeat_interval ({3 * self.heartbeat_interval:g} s), "
                f"got {self.takeover_after!r}",
                option="takeover_after",
            )

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        if not in_workflow():
            if self.outside_workflow == "error":
                raise ConfigError(
                    "this agent's runs are durable only when queued — use "
                    "plait_dbos.submit(...) or `plait submit`, served by `plait worker` "
                    "(or set outside_workflow = 'allow' to run it here without durability)"
                )
            return handler(request)
        with effects.performing(StepPerformer()):
            return handler(request)

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
    ) -> AgentResult:
        if in_workflow():
            # On the async path a step's tool calls run concurrently, and the order in
            # which they reach DBOS would decide which recorded result each gets on
            # replay. Async hooks and tools inside a (sync) run are fine: awaited in turn.
            raise ConfigError(
                "a run inside a DBOS workflow uses the sync path "
                "(agent.invoke or agent.stream, as the worker does); ainvoke/astream "
                "cannot be replayed step for step"
            )
        if self.outside_workflow == "error":
            raise ConfigError(
                "this agent's runs are durable only when queued — use "
                "plait_dbos.submit(...) or `plait submit`, served by `plait worker` "
                "(or set outside_workflow = 'allow' to run it here without durability)"
            )
        return await handler(request)

    def submit_run(self, job: RunJob, agent: Agent) -> RunHandle:
        """A recorded run (``plait serve``'s, a background task's) goes on the queue: a
        worker runs it and appends its events to the thread's run log."""
        from plait_dbos._submit import submit_job

        return submit_job(self, agent, job)
