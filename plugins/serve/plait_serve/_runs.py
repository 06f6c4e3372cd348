"""The runs of a thread, read from its run log: where each starts and how it ended —
what the Agent Protocol's and A2A's run and task statuses are projections of."""

from __future__ import annotations

from typing import Any

from plait.runlog import END_TYPES
from plait_serve._app import Server

__all__ = ["runs_of"]

_PAGE = 500


async def runs_of(server: Server, thread: str) -> dict[str, dict[str, Any]]:
    """``{run_id: {"first", "status", "end", "metadata"}}`` in the order the runs
    started: ``first`` is the number of its ``run_started`` event; ``status`` is
    ``running``, ``success``, ``interrupted`` (paused), ``cancelled``, ``error``, or
    ``lost`` (its process stopped before it ended; never for an agent whose runs a
    middleware runs, such as a queued durable run); ``end`` is its end event (``None``
    while it runs); ``metadata`` the client's for the run (``{}`` if none was given).
    A run started again under its id (``RunLog.cancel_paused``) is the same run: its
    ``first`` is where it first started, its status and end the last ones."""
    found: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None

    def read(seq: int, event: dict[str, Any]) -> None:
        nonlocal current
        kind = event.get("type")
        if kind == "run_started":
            earlier = found.get(event["run_id"])
            if earlier is not None:
                # The run goes on after it ended (a paused run cancelled: A2A's
                # ``tasks/cancel``): one run, from its first start to its last end.
                earlier.update(status="running", end=None)
                current = earlier
                return
            current = {
                "first": seq,
                "status": "running",
                "end": None,
                "metadata": event.get("metadata") or {},
            }
            found[event["run_id"]] = current
        elif kind in END_TYPES and current is not None:
            current["end"] = event
            current["status"] = "error" if kind == "run_error" else event.get("status", "success")
            current = None

    # Taken before the log is read: what the log lacks then (a run's first or last
    # events, still being written) is here, so a run reads started and ended at once.
    soon = server.runs.written_soon(thread)
    cursor = 0
    while True:
        rows = await server.runs.read(thread, after=cursor, limit=_PAGE)
        if not rows:
            break
        cursor = rows[-1][0]
        for seq, event in rows:
            read(seq, event)
    for seq, event in soon:
        if seq > cursor:
            read(seq, event)
    live = server.runs.running(thread)
    for run_id, run in found.items():
        # A run a middleware took over (a durable run on a queue) goes on without this
        # server, and so does one whose lease another server renews; any other
        # unfinished run not going on here lost its process.
        if (
            run["status"] == "running"
            and run_id != live
            and not server.runs.elsewhere
            and not await server.runs.held(thread, run_id)
        ):
            run["status"] = "lost"
    return found
