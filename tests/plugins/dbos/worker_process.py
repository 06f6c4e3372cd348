"""A DBOS worker in a process of its own, as the kill and takeover tests need one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def start_worker(
    app: Path, *args: str, errors: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Start ``python app *args``, a script that launches a worker and prints its DBOS
    executor id once it serves the queue; the process and that id. ``env`` is added to this
    process's environment. The worker's stderr goes to ``errors``, shown if it dies before
    printing."""
    with errors.open("a") as err:
        process = subprocess.Popen(
            [sys.executable, str(app), *args],
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    assert process.stdout is not None
    executor_id = process.stdout.readline().strip()
    assert executor_id, errors.read_text()
    return process, executor_id
