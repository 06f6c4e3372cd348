"""What the DBOS tests' worker apps (``durable_app``, ``served_app``, ``background_app``)
share: the dbos middleware as they enable it, a log line several processes append to,
and the script entry that serves the queue. Each app runs as a script from this folder,
so this module is importable beside it, as it is for the tests that import the apps."""

from __future__ import annotations

import os
import threading
from typing import Any

import plait

HEARTBEAT = 1.0  # seconds between a worker's heartbeats
TAKEOVER_AFTER = 6 * HEARTBEAT  # a worker silent for six heartbeats is taken over


def dbos(database_url: str, **options: Any) -> tuple[str, dict[str, Any]]:
    """The dbos middleware polling every 0.1 s with the heartbeat and takeover above;
    ``options`` add to them."""
    return (
        "dbos",
        {
            "database_url": database_url,
            "poll_interval": 0.1,
            "heartbeat_interval": HEARTBEAT,
            "takeover_after": TAKEOVER_AFTER,
            **options,
        },
    )


def append_line(path: str, line: str) -> None:
    """Append ``line`` to ``path`` in one write (O_APPEND), so that lines from several
    worker processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def serve_queue(agents: plait.Agent | list[plait.Agent], executor_id: str | None = None) -> None:
    """Start a worker for ``agents``, print its DBOS executor id (the test reads it, see
    ``worker_process.start_worker``) and serve the queue until the process is killed."""
    from plait_dbos import Worker

    worker = Worker(agents, executor_id=executor_id)
    worker.start()
    print(worker.executor_id, flush=True)
    threading.Event().wait()
