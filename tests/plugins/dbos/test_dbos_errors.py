"""dbos's errors are one line that names the problem once: a bad option (its prefix not
doubled), a system database that cannot be reached (no SQLAlchemy URL, no password), a
PostgreSQL database that does not exist (refused, not created with a run queued where no
worker serves it), and a queued run that fails for a reason plait knows (the worker logs
the error, not DBOS's traceback)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import psycopg
import pytest
from postgres_server import postgres_url_or_skip

import plait
from plait.errors import ConfigError
from plait.testing import ScriptedChatModel

PLAIT = [sys.executable, "-m", "plait.cli"]


def _agent_file(tmp_path: Path, database_url: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [agent]
            name = "greeter"
            model = "scripted:demo"
            model_settings = {{ responses = [{{ text = "Hello!", repeat = 50 }}] }}
            checkpointer = "sqlite:///{tmp_path / "threads.db"}"

            [[middleware]]
            use = "dbos"
            database_url = "{database_url}"
            poll_interval = 0.1
            """
        )
    )
    return path


def _plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PLAIT, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_a_bad_option_names_the_plugin_and_the_option_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        plait.create_agent(
            model=ScriptedChatModel(["x"]), middleware=[("dbos", {"database_url": "mysql://x"})]
        )
    assert str(caught.value) == (
        "plugin 'dbos': option 'database_url': expected a postgresql://... or sqlite:///FILE "
        "URL, got 'mysql://x'"
    )
    path = _agent_file(tmp_path, "mysql://x")
    done = _plait("submit", str(path), "hi", "--thread", "t", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == f"plait: error: {caught.value}\n"


@pytest.mark.parametrize("command", ["submit", "worker", "workers"])
def test_an_unreachable_database_is_one_line_without_its_password(
    tmp_path: Path, closed_port: int, command: str
) -> None:
    url = f"postgresql://bob:s3cret-pw@127.0.0.1:{closed_port}/agents"
    path = _agent_file(tmp_path, url)
    args = {"submit": ["hi", "--thread", "t"], "worker": [], "workers": []}[command]
    done = _plait(command, str(path), *args, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "plait: error: plugin 'dbos': cannot connect to the system database "
        f"postgresql://bob:***@127.0.0.1:{closed_port}/agents: connection failed: "
    )
    assert "Connection refused" in done.stderr
    assert "s3cret-pw" not in done.stderr and "sqlalche.me" not in done.stderr


def test_a_submit_to_a_database_that_does_not_exist_is_refused_and_creates_nothing(
    tmp_path: Path,
) -> None:
    base = postgres_url_or_skip()
    name = f"plait_dbos_missing_{uuid.uuid4().hex[:8]}"
    head, _, tail = base.rpartition("/")
    query = tail.partition("?")[2]
    url = f"{head}/{name}" + (f"?{query}" if query else "")
    path = _agent_file(tmp_path, url)
    done = _plait("submit", str(path), "hi", "--thread", "t", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"plait: error: plugin 'dbos': option 'database_url': the system database {name!r} "
        f"does not exist on that server ({url}), so no worker serves it; start `plait "
        "worker` for this agent first (it creates the database), or correct the name\n"
    )
    with psycopg.connect(base) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        assert found.fetchone() is None  # not created


def test_a_worker_logs_a_run_that_failed_for_a_known_reason_in_one_line(
    tmp_path: Path,
) -> None:
    path = _agent_file(tmp_path, f"sqlite:///{tmp_path / 'dbos.sqlite'}")
    worker = subprocess.Popen(
        [*PLAIT, "worker", str(path), "--id", "one-line"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        done = _plait(
            "submit", str(path), "--thread", "t", "--resume", '"yes"', "--wait", cwd=tmp_path
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    why = "thread 't' has no run paused at an interrupt, so there is nothing to resume"
    assert done.returncode == 1
    assert done.stderr == f"plait: error: {why}\n"
    assert "Traceback" not in err
    [logged] = [line for line in err.splitlines() if "queued run failed" in line]
    assert logged.endswith(f"a queued run failed: PlaitError: {why}")
