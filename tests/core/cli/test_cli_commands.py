"""``python -m plait``, ``PLAIT_TRACE`` under the CLI, chat's ``/`` commands and the
approval menu's words, through the real command in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from plait import __version__
from plait_env import outside_env


def _env(_: None) -> dict[str, str]:
    """The environment without PLAIT_* settings from outside."""
    env = outside_env()
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def test_python_dash_m_plait_is_the_command(tmp_path: Path, examples: Path) -> None:
    version = subprocess.run(
        [sys.executable, "-m", "plait", "--version"],
        capture_output=True,
        text=True,
        env=_env(None),
        cwd=tmp_path,
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"plait {__version__}"
    run = subprocess.run(
        [sys.executable, "-m", "plait", "run", str(examples / "hello.toml"), "Paris?"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=_env(None),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "In Paris today it is sunny, 21 °C. Enjoy your day!"


def test_plait_trace_writes_hook_calls_to_stderr(plait_cli, examples: Path) -> None:
    done = plait_cli("run", str(examples / "hello.toml"), "Paris?", env={"PLAIT_TRACE": "1"})
    assert done.returncode == 0, done.stderr
    trace = [line for line in done.stderr.splitlines() if line.startswith("trace: ")]
    assert any(".wrap_model_call(" in line for line in trace), done.stderr
    assert any(".wrap_tool_call(" in line for line in trace), done.stderr
    assert "trace:" not in done.stdout
    assert done.stdout.splitlines()[-1] == "In Paris today it is sunny, 21 °C. Enjoy your day!"
    quiet = plait_cli("run", str(examples / "hello.toml"), "Paris?")
    assert "trace:" not in quiet.stderr


def test_chat_commands_are_handled_not_sent(plait_cli, write: Callable[[str, str], Path]) -> None:
    # One scripted answer: a command sent to the model would exhaust the script.
    write(
        "one.toml",
        '[agent]\nmodel = "scripted:one"\n'
        '[[agent.model_settings.responses]]\ntext = "Hello there."\n',
    )
    stdin = "/help\n/nonsense\n/thread\nhi\n/history\n/exit\nnot read\n"
    done = plait_cli("chat", "one.toml", "--thread", "t7", input=stdin)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "/help for commands" in out.splitlines()[0]
    assert "Commands (handled here, never sent to the model):" in out
    assert "unknown command /nonsense; /help lists them" in out
    assert "thread t7\n" in out
    assert out.count("agent> Hello there.") == 1
    assert "  human: hi\n  ai: Hello there.\n" in out
    assert "not read" not in out
    assert done.stderr == ""


def test_respond_is_spelled_right_in_the_menu(plait_cli, write: Callable[[str, str], Path]) -> None:
    write("ping_tools.py", 'def ping() -> str:\n    """Ping."""\n    return "pong"\n')
    write(
        "ping.toml",
        '[agent]\nmodel = "scripted:ping"\ntools = ["ping_tools:ping"]\n'
        '[[agent.model_settings.responses]]\ntool_calls = [{ name = "ping", args = {} }]\n'
        '[[agent.model_settings.responses]]\ntext = "done"\n'
        '[[middleware]]\nuse = "human_in_the_loop"\ninterrupt_on.ping = true\n',
    )
    done = plait_cli("chat", "ping.toml", input="go\ns\nno need\n")
    assert done.returncode == 0, done.stderr
    assert "[a]pprove  [e]dit  [r]eject  re[s]pond >" in done.stdout
    assert "[s]espond" not in done.stdout
