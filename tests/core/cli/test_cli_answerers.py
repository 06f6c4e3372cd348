"""The CLI asks whichever installed answerer (``plait.answerers`` entry point) claims an
interrupt: a plugin that pauses with its own payload ships its own terminal dialog, and the
CLI knows nothing of it. Here a third-party distribution (a ``.dist-info`` beside the agent
file) pauses a tool with a poll and answers it with a numbered menu."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

CLI = Callable[..., "subprocess.CompletedProcess[str]"]

PLUGIN = '''
from plait.interrupts import interrupt


def pick(question: str) -> str:
    """Ask the user to pick.

    Args:
        question: what to ask.
    """
    return "picked " + interrupt({"poll": question, "options": ["tea", "coffee"]})


def brain(messages, tools):
    from plait.messages import AIMessage, ToolCall

    last = messages[-1]
    if last.type == "human":
        return AIMessage("", tool_calls=[ToolCall("pick", {"question": "drink?"})])
    return "you " + last.text


class PollAnswerer:
    def claims(self, value):
        return isinstance(value, dict) and "poll" in value

    def ask(self, value, asker):
        for number, option in enumerate(value["options"], 1):
            asker.out.write(f"  {number}. {option}\\n")
        return value["options"][int(asker.ask(f"{value['poll']} number > ")) - 1]

    def waiting(self, value, id):
        return [f"Poll open: {value['poll']} ({', '.join(value['options'])})"]

    def example(self, value):
        return value["options"][0]

    def resume_help(self):
        return "  (the option's text)"
'''


@pytest.fixture
def agent_file(write: Callable[[str, str], Path], tmp_path: Path) -> Callable[[str], Path]:
    write("poll_plugin.py", PLUGIN)
    info = tmp_path / "poll_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: poll-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[plait.answerers]\npoll = poll_plugin:PollAnswerer\n")

    def make(checkpointer: str) -> Path:
        responses = ", ".join(['{ function = "poll_plugin:brain" }'] * 3)
        return write(
            "agent.toml",
            f"""
[agent]
model = "scripted:poll"
tools = ["poll_plugin:pick"]
checkpointer = "{checkpointer}"
model_settings = {{ responses = [{responses}] }}
""",
        )

    return make


def test_run_asks_the_answerer_that_claims_the_interrupt(
    plait_cli: CLI, agent_file: Callable[[str], Path]
) -> None:
    path = agent_file("memory")
    done = plait_cli("run", str(path), "what now?", input="2\n")
    assert done.returncode == 0, done.stderr
    assert "  1. tea\n  2. coffee\ndrink? number > 2\n" in done.stdout
    assert done.stdout.rstrip().endswith("you picked coffee")


def test_a_paused_run_prints_the_answerers_lines_and_resume_hint(
    plait_cli: CLI, agent_file: Callable[[str], Path], tmp_path: Path
) -> None:
    path = agent_file(f"sqlite:///{(tmp_path / 'agent.db').as_posix()}")
    done = plait_cli("run", str(path), "what now?", "--thread", "t1")
    assert done.returncode == 0, done.stderr
    assert "Poll open: drink? (tea, coffee)\n" in done.stdout
    assert "--resume '\"tea\"'\n  (the option's text)\n" in done.stdout
    resumed = plait_cli("run", str(path), "--thread", "t1", "--resume", '"coffee"')
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.rstrip().endswith("you picked coffee")
