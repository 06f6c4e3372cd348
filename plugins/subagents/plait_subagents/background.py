"""Background sub-agents: ``start_task`` returns at once while the sub-agent works.

Each task is an asyncio task on the event loop the tool runs on: on the sync path the
agent's own loop thread, which outlives the run, so a task goes on after ``invoke``
returns; on the async path the caller's loop (a task ends with it). The task's run is
nested in the run that started it, under the ``start_task`` call's id
(``plait.nesting.detached_context``): its model calls count in that run's usage ledger
and its ``usage_limit``/``model_call_limit`` refuse them, also once that run has ended;
its events reach that run's stream while the stream is open. Its usage is also reported
with its result. A durable task's run (``submit``) runs in a worker: the usage its run log
records counts in the starting run's ledger once it has ended.

Tasks are kept in memory by the middleware (``BackgroundTasks``), per main thread, and
mirrored in the thread's ``background_tasks`` state key. A finished task's result is
added to the main thread as a human message at the next model call of that thread (the
next run, or the current one if it is still going), unless ``check_task`` already gave
it. A task the state says is running but this process does not know (it ran in a process
that ended) is reported as lost.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import threading
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

import attrs

from plait.agent import Agent
from plait.checkpoint import EventLog
from plait.lazy import define
from plait.messages import HumanMessage
from plait.nesting import count, detached_context
from plait.runlog import END_TYPES, RunHandle, RunJob, event_log, logged_usage, start_run
from plait.usage import exempt as exempt_from

__all__ = ["BACKGROUND_KEY", "BackgroundTasks", "TaskRecord", "merge_records"]

log = logging.getLogger("plait_subagents")

BACKGROUND_KEY = "background_tasks"
"""Thread-scoped state: task id → ``{subagent_type, description, status, result}``."""


def merge_records(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> dict[str, Any]:
    """Reducer of ``background_tasks``: records by task id, a newer one replacing."""
    return {**(old or {}), **(new or {})}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


@define
class TaskRecord:
    """One background task, as this process knows it."""

    id: str
    thread_id: str
    subagent_type: str
    description: str
    status: str = "running"
    """running, completed, failed, cancelled, or interrupted (a remote run paused)."""
    result: str | None = None
    usage: dict[str, Any] | None = None
    started_at: str = attrs.field(factory=_now)
    finished_at: str | None = None
    delivered: bool = False
    """Whether the main agent has seen the outcome (a message, or ``check_task``)."""
    followups: list[str] = attrs.field(factory=list)
    handle: asyncio.Task[None] | None = attrs.field(default=None, repr=False)
    loop: asyncio.AbstractEventLoop | None = attrs.field(default=None, repr=False)
    remote: dict[str, str] | None = None
    """Where a remote task runs (``url``, ``thread_id``, ``run_id``): kept in the thread's
    state, so a later process can still follow it (``plait_subagents.remote``)."""
    durable: dict[str, Any] | None = None
    """Where a task a middleware runs (``submit_run``: the ``dbos`` middleware's workflow)
    logs its run (``thread_id``, ``run_id``, ``start``: its ``run_started`` number): kept
    in the thread's state, so any process can read its outcome from the run log."""

    def state(self) -> dict[str, Any]:
        """What the thread's state keeps of it."""
        state: dict[str, Any] = {
            "subagent_type": self.subagent_type,
            "description": self.description,
            "status": self.status,
            "result": self.result,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }
        if self.remote is not None:
            state["remote"] = dict(self.remote)
        if self.durable is not None:
            state["durable"] = dict(self.durable)
        return state

    def message(self) -> HumanMessage:
        """The outcome, as the message added to the main thread."""
        head = f"[Background task {self.id} ({self.subagent_type}) {self.status}]"
        body = f"Task: {self.description}"
        if self.result is not None:
            body += f"\nResult:\n{self.result}"
        report: dict[str, Any] = {
            "task_id": self.id,
            "subagent_type": self.subagent_type,
            "status": self.status,
        }
        if self.usage is not None:
            report["usage"] = self.usage
        return HumanMessage(f"{head}\n{body}", metadata={"subagents": report})


class BackgroundTasks:
    """The background tasks of one middleware instance, across threads. Thread-safe: tools
    and hooks reach it from worker threads and the loop thread."""

    def __init__(self) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._changed = threading.Condition()

    def start(
        self,
        agent: Agent,
        name: str,
        description: str,
        thread_id: str,
        persistent: bool,
        exempt: Sequence[str] = (),
    ) -> TaskRecord:
        """Start ``agent`` on ``description`` on the running loop; return at once.
        ``exempt``: the limits of the starting run its calls skip (``plait.usage.exempt``)."""
        record = self.new(name, description, thread_id)
        sub_thread = f"{thread_id}/background/{record.id}" if persistent else None
        self.launch(record, self._run(record, agent, sub_thread, tuple(exempt)))
        return record

    async def submit(self, agent: Agent, name: str, description: str, thread_id: str) -> TaskRecord:
        """Start a task whose run a middleware of ``agent`` takes over (``submit_run``:
        the ``dbos`` middleware queues it as a workflow, which survives a worker's
        crash); return once it is submitted. The task's outcome is read from its run
        log, by this process or, once this one has ended, by any other."""
        record = self.new(name, description, thread_id)
        thread = f"{thread_id}/background/{record.id}"
        handle = await _submit_run(agent, thread, description)
        record.durable = {
            "thread_id": thread,
            "run_id": handle.job.run_id,
            "start": handle.job.start,
        }
        self.launch(record, self._follow(record, agent, handle))
        return record

    def adopt_durable(
        self, agent: Agent, task_id: str, thread_id: str, known: Mapping[str, Any]
    ) -> TaskRecord:
        """Know a durable task another process started, from the thread's state: finished
        now if its run log has ended, else followed from here."""
        record = TaskRecord(
            id=task_id,
            thread_id=thread_id,
            subagent_type=str(known.get("subagent_type")),
            description=str(known.get("description")),
            durable=dict(known["durable"]),
        )
        found = self.adopt(record)
        if found is not record:
            return found
        end = ended(event_log(agent), record.durable or {})
        if end is not None:
            self.finish(record, *outcome(end))
        else:
            self.launch(record, self._follow(record, agent, None))
        return record

    async def _follow(self, record: TaskRecord, agent: Agent, handle: RunHandle | None) -> None:
        """Wait for a durable task's run and take its outcome from the run log; more
        instructions (``update_task``) start another run on its thread. The usage each
        run logged counts in the starting run's ledger (``plait.nesting.count``), as an
        in-memory task's model calls do, with its model calls (``model_call_limit`` sees
        them; a log from before they were logged gives its tokens only); a task adopted
        from another process (no ``handle``) is not counted in the run that adopts it."""
        log = event_log(agent)
        here = handle is not None
        while True:
            durable = record.durable or {}
            try:
                if handle is not None:
                    await handle.wait()
                while (end := await asyncio.to_thread(ended, log, durable)) is None:
                    await asyncio.sleep(0.2)
            except asyncio.CancelledError:
                if handle is not None:
                    await asyncio.shield(handle.cancel())
                self.finish(record, "cancelled", None)
                raise
            status, result, usage = outcome(end)
            if here and usage:
                spent, calls = logged_usage(end)
                count(spent, calls=calls)
            followups = self.take_followups(record)
            if followups and status == "completed":
                handle = await _submit_run(agent, durable["thread_id"], "\n\n".join(followups))
                record.durable = {**durable, "run_id": handle.job.run_id, "start": handle.job.start}
                continue
            self.finish(record, status, result, usage)
            return

    def new(self, name: str, description: str, thread_id: str) -> TaskRecord:
        """A new task's record, known from now on (``launch`` runs it)."""
        record = TaskRecord(
            id="task_" + uuid.uuid4().hex[:12],
            thread_id=thread_id,
            subagent_type=name,
            description=description,
        )
        with self._changed:
            self._tasks[record.id] = record
        return record

    def adopt(self, record: TaskRecord) -> TaskRecord:
        """Know a task another process started (the one known already, if any)."""
        with self._changed:
            return self._tasks.setdefault(record.id, record)

    def launch(self, record: TaskRecord, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` for ``record`` (again: running, its outcome not yet seen) on the
        running loop, in a context holding only where the calling run nests runs started
        in it: the task outlives the call, whose tracing spans and interrupt scope end."""
        loop = asyncio.get_running_loop()
        with self._changed:
            record.status, record.delivered, record.loop = "running", False, loop
            record.handle = loop.create_task(work, context=detached_context())

    async def _run(
        self, record: TaskRecord, agent: Agent, thread: str | None, exempt: tuple[str, ...]
    ) -> None:
        given: Any = record.description
        while True:
            try:
                with exempt_from(*exempt):
                    result = await agent.ainvoke(given, thread_id=thread)
            except asyncio.CancelledError:
                self.finish(record, "cancelled", None)
                raise
            except Exception as exc:
                self.finish(record, "failed", f"{type(exc).__name__}: {exc}")
                return
            usage = attrs.asdict(result.usage)
            if result.interrupts:
                text = (
                    "the sub-agent paused at an interrupt, which a background task cannot "
                    "answer; run it with the task tool instead"
                )
                self.finish(record, "failed", text, usage)
                return
            followups = self.take_followups(record)
            if followups and thread is not None:
                given = "\n\n".join(followups)
                continue
            self.finish(record, "completed", result.text, usage)
            return

    def finish(
        self,
        record: TaskRecord,
        status: str,
        result: str | None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        with self._changed:
            if record.status == "cancelled" and status != "cancelled":
                return
            record.status, record.result, record.usage = status, result, usage
            record.finished_at = _now()
            self._changed.notify_all()
        log.info("background task %s (%s) %s", record.id, record.subagent_type, status)

    def get(self, task_id: str, thread_id: str) -> TaskRecord | None:
        with self._changed:
            record = self._tasks.get(task_id)
        return record if record is not None and record.thread_id == thread_id else None

    def of_thread(self, thread_id: str) -> list[TaskRecord]:
        with self._changed:
            return [r for r in self._tasks.values() if r.thread_id == thread_id]

    def follow_up(self, record: TaskRecord, message: str) -> None:
        with self._changed:
            record.followups.append(message)

    def take_followups(self, record: TaskRecord) -> list[str]:
        """The instructions queued by ``update_task`` since the last take."""
        with self._changed:
            followups, record.followups = record.followups, []
        return followups

    def cancel(self, record: TaskRecord) -> None:
        with self._changed:
            record.status, record.finished_at, record.delivered = "cancelled", _now(), True
            self._changed.notify_all()
        if record.handle is not None and record.loop is not None and not record.loop.is_closed():
            record.loop.call_soon_threadsafe(record.handle.cancel)

    def undelivered(self, thread_id: str) -> list[TaskRecord]:
        """The finished tasks of the thread the main agent has not seen; now marked seen."""
        with self._changed:
            found = [
                r
                for r in self._tasks.values()
                if r.thread_id == thread_id and r.status != "running" and not r.delivered
            ]
            for record in found:
                record.delivered = True
        return found

    def wait(self, thread_id: str, timeout: float | None = None) -> bool:
        """Block until no task of the thread is running; ``False`` if ``timeout`` (seconds)
        passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while any(
                r.thread_id == thread_id and r.status == "running" for r in self._tasks.values()
            ):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
        return True


async def _submit_run(agent: Agent, thread: str, input: str) -> RunHandle:
    """Log the start of a run of ``agent`` on ``thread`` and hand it to the middleware
    that runs it (``plait.runlog.start_run``)."""
    log = event_log(agent)
    run_id = "run-" + uuid.uuid4().hex

    def begin() -> int:
        started = {"type": "run_started", "run_id": run_id}
        return log.append_events(thread, [started], after=log.last_event(thread))

    start = await asyncio.to_thread(begin)
    return await start_run(agent, RunJob(thread, input, run_id, start))


def ended(log: EventLog, durable: Mapping[str, Any]) -> dict[str, Any] | None:
    """The end event of a durable task's run, if its log has it yet (blocking)."""
    for _, event in log.read_events(str(durable["thread_id"]), after=int(durable["start"])):
        if event.get("type") in END_TYPES and event.get("run_id") == durable["run_id"]:
            return dict(event)
    return None


def outcome(end: Mapping[str, Any]) -> tuple[str, str | None, dict[str, Any] | None]:
    """``(status, result, usage)`` of a task from its run's end event."""
    if end.get("type") == "run_error":
        return "failed", f"{end.get('code')}: {end.get('message')}", None
    usage = end.get("usage")
    usage = dict(usage) if isinstance(usage, Mapping) else None
    status = end.get("status")
    if status == "interrupted":
        text = (
            "the sub-agent paused at an interrupt, which a background task cannot "
            "answer; run it with the task tool instead"
        )
        return "failed", text, usage
    if status == "cancelled":
        return "cancelled", None, usage
    return "completed", end.get("text"), usage
