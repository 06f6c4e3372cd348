"""Inside a DBOS workflow: each model call, tool run and checkpoint read or write is a
DBOS step, and ids come from the workflow's id, so a replay after a crash returns what
the first execution recorded and repeats its ids.

A step is recorded by its position in the workflow. The worker runs agents on the sync
path, where the loop performs effects one after another, so positions are the same on
replay. What a step does inside (a provider building its message, a tool running a
sub-agent) is not recorded separately: it is part of the step, and takes its ids from a
source named after the step so that skipping it on replay shifts no other id.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import attrs
from dbos import DBOS

from plait import effects
from plait.checkpoint import Checkpoint, Checkpointer, StepDelta
from plait.errors import ThreadBusyError
from plait_dbos._takeover import check_lease

__all__ = ["RecordedCheckpointer", "StepPerformer", "workflow_ids"]

T = TypeVar("T")

_in_step: contextvars.ContextVar[bool] = contextvars.ContextVar("plait_dbos_in_step", default=False)


def _ids(seed: str) -> Callable[[], str]:
    counter = itertools.count()

    def next_id() -> str:
        return hashlib.sha256(f"{seed}:{next(counter)}".encode()).hexdigest()[:32]

    return next_id


@contextlib.contextmanager
def workflow_ids(workflow_id: str) -> Iterator[None]:
    """Run, thread and message ids derived from the workflow id and their order."""
    with effects.id_source(_ids(workflow_id)):
        yield


def in_workflow() -> bool:
    return DBOS.workflow_id is not None and not _in_step.get()


def _step(name: str, call: Callable[[], T]) -> T:
    """``call`` as a DBOS step named ``name``: run once, recorded; replayed from the record."""

    def body() -> T:
        # A worker whose heartbeat lapsed may have been taken over: it stops here rather
        # than run the step a second worker may be running.
        check_lease()
        seed = f"{DBOS.workflow_id}/step{DBOS.step_id}"
        token = _in_step.set(True)
        try:
            with effects.id_source(_ids(seed)):
                return call()
        finally:
            _in_step.reset(token)

    # No DBOS retries: a failure is recorded and raised, and retrying is the job of
    # plait's retry middleware (whose attempts are each a step of their own).
    return DBOS.run_step({"name": name, "retries_allowed": False}, body)


def _effect_name(effect: effects.Effect) -> str:
    if isinstance(effect, effects.ModelCall):
        model = effect.model
        label = getattr(model, "model_name", None) or getattr(model, "model", None)
        return f"plait.model:{label or type(model).__name__}"
    return f"plait.tool:{effect.request.tool_call.name}"


@attrs.frozen
class StepPerformer:
    """Performs model calls and tool runs as DBOS steps (installed by ``DBOSMiddleware``
    for runs inside a workflow). A streamed model call is recorded as its list of chunks."""

    def perform(self, effect: effects.Effect, proceed: Callable[[], T]) -> T:
        if not in_workflow():
            return proceed()
        if isinstance(effect, effects.ModelCall) and effect.streaming:
            chunks: Any = _step(_effect_name(effect), lambda: list(proceed()))  # type: ignore[call-overload]
            return chunks  # type: ignore[no-any-return]
        return _step(_effect_name(effect), proceed)

    async def aperform(self, effect: effects.Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        # Workers run agents on the sync path; an async run inside a workflow would make
        # step order depend on task scheduling, so it is refused.
        if in_workflow():
            from plait.errors import PlaitError

            raise PlaitError(
                "plugin 'dbos': runs inside a DBOS workflow use the sync path "
                "(agent.invoke); ainvoke/astream cannot be replayed step for step"
            )
        return await proceed()


@attrs.frozen
class RecordedCheckpointer:
    """Wraps the agent's checkpointer for workers. Inside a workflow, loading the thread
    is a step — a replay sees the thread as the run first found it, not as the crashed
    attempt left it — and each save is a step, so a replay does not write again what was
    written. Outside a workflow it is the wrapped checkpointer."""

    inner: Checkpointer

    def load(self, thread_id: str) -> Checkpoint | None:
        if not in_workflow():
            return self.inner.load(thread_id)
        return _step("plait.checkpoint:load", lambda: self.inner.load(thread_id))

    def step(self, thread_id: str) -> int:
        if not in_workflow():
            return self.inner.step(thread_id)
        # Never matches the agent's cached copy, so every run loads (as a step) and a
        # replay in another process records and reads the same steps.
        return -1

    def save(self, thread_id: str, delta: StepDelta) -> None:
        if not in_workflow():
            self.inner.save(thread_id, delta)
            return
        _step("plait.checkpoint:save", lambda: self._save_once(thread_id, delta))

    def _save_once(self, thread_id: str, delta: StepDelta) -> None:
        try:
            self.inner.save(thread_id, delta)
        except ThreadBusyError:
            # A crash after the write committed and before DBOS recorded the step: the
            # replay computed the same delta, which is already there.
            if self.inner.step(thread_id) != delta.step:
                raise

    def list_threads(self) -> list[str]:
        return self.inner.list_threads()

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)
