"""Helpers for the command-line tests: the real ``plait`` CLI, run in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plait_env import outside_env

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"

CLI = Callable[..., "subprocess.CompletedProcess[str]"]


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = outside_env()
    for name in ("EDITOR", "VISUAL"):
        env.pop(name, None)
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra or {})
    return env


@pytest.fixture
def examples() -> Path:
    """The repository's ``examples/`` folder."""
    return EXAMPLES


@pytest.fixture
def plait_cli(tmp_path: Path) -> CLI:
    """``plait_cli("run", "agent.toml", "hi", input=..., cwd=...)`` runs
    ``python -m plait.cli`` and returns the finished process (text output)."""

    def run(
        *args: str,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        python: str = sys.executable,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-m", "plait.cli", *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=cwd or tmp_path,
            env=_env(env),
            timeout=120,
        )

    return run


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write("agent.toml", text)``: a file in the test's directory."""

    def put(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return put


MAIL_TOOLS = '''
import plait


def send_email(to: str, subject: str) -> str:
    """Send an email.

    Args:
        to: the recipient.
        subject: the subject line.
    """
    answer = plait.interrupt(
        {
            "action_requests": [
                {
                    "name": "send_email",
                    "args": {"to": to, "subject": subject},
                    "description": "Sending mail needs approval",
                }
            ],
            "review_configs": [
                {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]}
            ],
        }
    )
    decision = answer["decisions"][0]
    if decision["type"] == "edit":
        args = decision["edited_action"]["args"]
        to, subject = args["to"], args["subject"]
    elif decision["type"] == "reject":
        return "not sent: " + decision.get("message", "(no reason)")
    return f"sent to {to}: {subject}"


def brain(messages, tools):
    """Stateless script: ask to send a mail, then report the tool's result."""
    from plait.messages import AIMessage, ToolCall

    last = messages[-1]
    if last.type == "tool":
        return "Done: " + last.text
    return AIMessage(
        "", tool_calls=[ToolCall("send_email", {"to": "bob@example.com", "subject": "Hello"})]
    )
'''


@pytest.fixture
def mail_agent(write: Callable[[str, str], Path]) -> Callable[[str], Path]:
    """An agent whose send_email tool asks for approval with a human-in-the-loop shaped
    interrupt; ``mail_agent(extra_agent_lines)`` writes it and returns the TOML path."""

    def make(extra: str = "") -> Path:
        write("mail_tools.py", MAIL_TOOLS)
        responses = ", ".join(['{ function = "mail_tools:brain" }'] * 6)
        return write(
            "mail.toml",
            f"""
[agent]
model = "scripted:mail"
tools = ["mail_tools:send_email"]
{extra}
model_settings = {{ responses = [{responses}] }}
""",
        )

    return make
