"""The embedded default (SQLite system database), through the CLI: `plait worker FILE`
in a process of its own, `plait submit FILE PROMPT --thread T --wait`, and the options'
errors at create_agent time; a run outside the queue is refused, not silently non-durable."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import plait
from plait.errors import ConfigError, PlaitError
from plait.testing import ScriptedChatModel

PLAIT = [sys.executable, "-m", "plait.cli"]


def _agent_file(tmp_path: Path) -> Path:
    (tmp_path / "agent.toml").write_text(
        textwrap.dedent(
            f"""
            [agent]
            name = "greeter"
            model = "scripted:demo"
            model_settings = {{ responses = [{{ text = "Hello from a worker!", repeat = 50 }}] }}
            checkpointer = "sqlite:///{tmp_path / "threads.db"}"

            [[middleware]]
            use = "dbos"
            database_url = "sqlite:///{tmp_path / "dbos.sqlite"}"
            poll_interval = 0.1
            """
        )
    )
    return tmp_path / "agent.toml"


def test_worker_and_submit_commands(tmp_path: Path) -> None:
    path = _agent_file(tmp_path)
    worker = subprocess.Popen(
        [*PLAIT, "worker", str(path), "--id", "cli-test"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        done = subprocess.run(
            [*PLAIT, "submit", str(path), "hi", "--thread", "t1", "--wait", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["text"] == "Hello from a worker!"
        assert result["thread_id"] == "t1"
        assert [m["type"] for m in result["messages"]] == ["human", "ai"]
        queued = subprocess.run(
            [*PLAIT, "submit", str(path), "again", "--thread", "t1"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert queued.returncode == 0, queued.stderr
        assert queued.stdout.startswith("queued plait:greeter:t1:")
        listed = subprocess.run(
            [*PLAIT, "workers", str(path)], capture_output=True, text=True, timeout=60
        )
        assert listed.returncode == 0, listed.stderr
        [row] = listed.stdout.splitlines()
        assert row.startswith("cli-test#")
        assert "\talive\tlast heartbeat" in row
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    assert "plait worker 'cli-test#" in err
    assert "': serving agent 'greeter' from queue 'plait'" in err


def test_submit_needs_a_dbos_table(tmp_path: Path) -> None:
    (tmp_path / "plain.toml").write_text('[agent]\nmodel = "scripted:demo"\n')
    done = subprocess.run(
        [*PLAIT, "submit", str(tmp_path / "plain.toml"), "hi", "--thread", "t"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert 'no [[middleware]] table with use = "dbos"' in done.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"database_url": "mysql://x"}, "option 'database_url': expected a postgresql://"),
        ({"queue": "no spaces"}, "option 'queue': expected 1-100 letters"),
        ({"worker_concurrency": 0}, "worker_concurrency"),
        ({"poll_interval": 0}, "option 'poll_interval': expected a number > 0, got 0.0"),
        ({"outside_workflow": "maybe"}, "outside_workflow"),
        (
            {"heartbeat_interval": -1},
            "option 'heartbeat_interval': expected a number > 0, got -1.0",
        ),
        (
            {"heartbeat_interval": 10, "takeover_after": 20},
            "option 'takeover_after': expected at least three heartbeat_interval (30 s), got 20",
        ),
    ],
)
def test_bad_options_name_the_option(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match="dbos") as caught:
        plait.create_agent(model=ScriptedChatModel(["x"]), middleware=[("dbos", options)])
    assert message in str(caught.value)


def test_a_run_outside_the_queue_is_refused_unless_allowed() -> None:
    refused = plait.create_agent(model=ScriptedChatModel(["x"]), middleware=["dbos"])
    with pytest.raises(PlaitError, match="durable only when queued"):
        refused.invoke("hi")
    allowed = plait.create_agent(
        model=ScriptedChatModel(["fine"]), middleware=[("dbos", {"outside_workflow": "allow"})]
    )
    assert allowed.invoke("hi").text == "fine"
    # the async path too
    with pytest.raises(PlaitError, match="durable only when queued"):
        asyncio.run(refused.ainvoke("hi"))
    again = plait.create_agent(
        model=ScriptedChatModel(["async fine"]),
        middleware=[("dbos", {"outside_workflow": "allow"})],
    )
    assert asyncio.run(again.ainvoke("hi")).text == "async fine"
