"""Ctrl-C during ``plait run`` / ``plait chat`` ends the run like any other error: the
thread is free for the next command at once, not after the 300 s lease. A run whose
process died (SIGKILL) keeps the thread for the lease, and the refusal names the
command that continues it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from plait_env import outside_env

CLI = Callable[..., "subprocess.CompletedProcess[str]"]

TOOLS = '''
import time
from pathlib import Path


def hang(marker: str) -> str:
    """Wait until told to stop.

    Args:
        marker: a file this call creates once it runs.
    """
    Path(marker).touch()
    while True:
        time.sleep(0.05)


def brain(messages, tools):
    from plait.messages import AIMessage, ToolCall

    last = messages[-1]
    if last.type == "human" and last.text.startswith("hang "):
        return AIMessage("", tool_calls=[ToolCall("hang", {"marker": last.text[5:]})])
    return "answer to " + last.text
'''


@pytest.fixture
def agent_file(write: Callable[[str, str], Path], tmp_path: Path) -> Path:
    write("hang_tools.py", TOOLS)
    responses = ", ".join(['{ function = "hang_tools:brain" }'] * 4)
    return write(
        "agent.toml",
        f"""
[agent]
model = "scripted:hang"
tools = ["hang_tools:hang"]
checkpointer = "sqlite:///{(tmp_path / "agent.db").as_posix()}"
model_settings = {{ responses = [{responses}] }}
""",
    )


def _start(args: list[str], tmp_path: Path, stdin: str = "") -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "plait.cli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=outside_env(),
    )
    assert process.stdin is not None
    process.stdin.write(stdin)
    process.stdin.flush()
    return process


def _wait_for(marker: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.05)


@pytest.mark.parametrize("json_output", [False, True], ids=["streamed", "json"])
def test_ctrl_c_during_plait_run_frees_the_thread_for_the_next_command(
    plait_cli: CLI, agent_file: Path, tmp_path: Path, json_output: bool
) -> None:
    marker = tmp_path / "in-tool"
    args = ["run", agent_file.name, f"hang {marker}", "--thread", "t"]
    process = _start([*args, "--json"] if json_output else args, tmp_path)
    _wait_for(marker, process)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip() == "plait: interrupted"

    started = time.monotonic()
    done = plait_cli("run", agent_file.name, "again", "--thread", "t")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "answer to again"
    assert time.monotonic() - started < 30  # not the 300 s lease


def test_ctrl_c_during_plait_chat_frees_the_thread_for_the_next_command(
    plait_cli: CLI, agent_file: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "in-tool"
    process = _start(["chat", agent_file.name, "--thread", "t"], tmp_path, f"hang {marker}\n")
    _wait_for(marker, process)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip().endswith("plait: interrupted")

    done = plait_cli("run", agent_file.name, "again", "--thread", "t")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "answer to again"


def test_a_run_whose_process_died_is_refused_with_the_command_that_continues_it(
    plait_cli: CLI, agent_file: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "in-tool"
    process = _start(["run", agent_file.name, f"hang {marker}", "--thread", "t"], tmp_path)
    _wait_for(marker, process)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)

    done = plait_cli("run", agent_file.name, "again", "--thread", "t")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        "plait: error: thread 't' has a run in progress in another process (run "
    )
    assert done.stderr.endswith(
        "send new input when it ends. If that process died, continue its run with "
        "`plait run agent.toml --thread t`, or wait 300 s (plait.checkpoint.RUN_LEASE)\n"
    )
    assert "invoke(" not in done.stderr
