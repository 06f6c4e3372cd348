"""A run to be started whose events go to its thread's run log, and the handle of a
started one: what the ``submit_run`` hook takes and returns (``plait.runlog`` is where
users find them)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from plait.errors import PlaitError
from plait.lazy import frozen
from plait.messages import structure_message, unstructure_message
from plait.types import Command

__all__ = ["RunHandle", "RunJob"]


@frozen
class RunJob:
    """A run to start whose events go to its thread's run log.

    :param thread_id: the thread it runs on.
    :param input: what ``agent.invoke`` takes: a prompt, messages, or
        ``Command(resume=...)``.
    :param run_id: the id its run-log events carry (the ``run_started`` event's).
    :param start: the number of its ``run_started`` event in the thread's log: its
        other events are appended after it.
    """

    thread_id: str
    input: Any
    run_id: str
    start: int

    def to_json(self) -> dict[str, Any]:
        """The job as JSON data (to queue it for another process); ``from_json`` reads
        it back."""
        return {
            "thread_id": self.thread_id,
            "input": _input_json(self.input),
            "run_id": self.run_id,
            "start": self.start,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunJob:
        return cls(
            str(data["thread_id"]), _input_value(data["input"]), str(data["run_id"]), data["start"]
        )


def _input_json(value: Any) -> dict[str, Any]:
    if isinstance(value, Command):
        if value.update is not None or value.jump_to is not None:
            raise PlaitError("a queued run's Command may only carry resume=...")
        return {"resume": value.resume}
    if isinstance(value, str) or value is None:
        return {"prompt": value}
    items = value if isinstance(value, list) else [value]
    if all(hasattr(item, "type") and hasattr(item, "id") for item in items):
        return {"messages": [unstructure_message(item) for item in items]}
    return {
        "prompt": json.loads(json.dumps(value, default=str))
    }  # role dicts, ("user", "hi") pairs: JSON already


def _input_value(data: Mapping[str, Any]) -> Any:
    if "resume" in data:
        return Command(resume=data["resume"])
    if "messages" in data:
        return [structure_message(item) for item in data["messages"]]
    return data["prompt"]


@runtime_checkable
class RunHandle(Protocol):
    """A run started by ``start_run``: wait for it, or ask it to stop. Its events are in
    the thread's run log whoever runs it."""

    job: RunJob

    async def wait(self) -> None:
        """Return once the run has ended (its end event is in the log, or it can write
        none: its runner gave up on it)."""

    async def cancel(self) -> None:
        """Ask the run to stop; its log ends with a ``cancelled`` ``run_finished``
        (unless it ended first). Returns once the request is made, not when it ended."""
