"""Every agent in ``examples/`` runs offline through the real ``plait`` command."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
INSTALLED = {ep.name for ep in entry_points(group="plait.middleware")}


def _needs_plugins(name: str) -> None:
    data = tomllib.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    missing = sorted({t["use"] for t in data.get("middleware", [])} - INSTALLED)
    if missing:
        pytest.skip(f"{name} needs the plugins {', '.join(missing)}")


def test_hello(plait_cli, tmp_path: Path) -> None:
    done = plait_cli("run", str(EXAMPLES / "hello.toml"), "What's the weather in Paris?")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "In Paris today it is sunny, 21 °C. Enjoy your day!"


def test_hello_chat_answers_every_turn(plait_cli) -> None:
    """The scripted model reads the conversation, so a chat goes on past the first turn."""
    stdin = "What's the weather in Paris?\nAnd in Rome?\nLondon?\n" * 4 + "/exit\n"
    done = plait_cli("chat", str(EXAMPLES / "hello.toml"), input=stdin)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    answers = [line for line in done.stdout.splitlines() if line.startswith("agent> ")]
    assert (
        answers
        == [
            "agent> In Paris today it is sunny, 21 °C. Enjoy your day!",
            "agent> In Rome today it is clear, 20 °C. Enjoy your day!",
            "agent> In London today it is light rain, 14 °C. Enjoy your day!",
        ]
        * 4
    )
    assert done.stdout.count('  -> get_weather(city="Rome")') == 4


def test_support_redacts_and_asks_before_refunding(plait_cli) -> None:
    _needs_plugins("support.toml")
    stdin = (
        "Hi, I'm jane@example.com. Please refund order 1042.\n"
        "a\n"
        "And order 2077?\n"
        "r\n"
        "not delivered yet\n"
        "Refund 1042 again\n"
        "e\n"
        '{"order_id": "1042", "amount": 5}\n'
    )
    done = plait_cli("chat", str(EXAMPLES / "support.toml"), input=stdin)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("Approval needed: issue_refund(") == 3
    assert "A refund moves money: check the order and the amount." in out
    assert "[a]pprove  [e]dit  [r]eject >" in out
    # approved: it runs, and the model only ever saw the redacted address
    assert (
        "agent> Refunded 25.00 EUR for order 1042. I will send the confirmation to "
        "[REDACTED_EMAIL]." in out
    )
    # rejected: it never runs, and the model is told why
    assert '-> issue_refund(order_id="2077"' not in out
    assert "agent> I have not refunded order 2077. A human reviewer rejected" in out
    assert "not delivered yet" in out
    # edited: the edited call is what runs
    assert '-> issue_refund(order_id="1042", amount=5)' in out
    assert "agent> A reviewer changed the refund. Refunded 5.00 EUR for order 1042." in out


def test_support_run_answers_the_approval_on_stdin_and_blocks_a_second_refund(
    plait_cli,
) -> None:
    """The README's first command: a memory checkpointer dies with the process, so
    ``plait run`` asks on stdin; pii, the approval and the run limit all show."""
    _needs_plugins("support.toml")
    prompt = "Hi, I'm jane@example.com. Please refund orders 1042 and 2077."
    done = plait_cli("run", str(EXAMPLES / "support.toml"), prompt, input="a\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("Approval needed: issue_refund(") == 1
    assert '-> issue_refund(order_id="1042", amount=25.0)' in out
    assert '-> issue_refund(order_id="2077"' not in out
    last = out.splitlines()[-1]
    assert last.startswith("Refunded 25.00 EUR for order 1042. I have not refunded order 2077.")
    assert "run limit (2/1 calls)" in last
    assert last.endswith("I will send the confirmation to [REDACTED_EMAIL].")
    assert "--resume" not in out


def test_support_run_without_an_answer_says_why_it_cannot_resume(plait_cli) -> None:
    _needs_plugins("support.toml")
    done = plait_cli("run", str(EXAMPLES / "support.toml"), "Refund order 1042.", input="")
    assert done.returncode == 0, done.stderr
    assert 'Waiting for approval: issue_refund({"order_id": "1042", "amount": 25.0})' in (
        done.stdout
    )
    assert "its checkpointer ('memory') ends with this process" in done.stdout
    assert "--resume" not in done.stdout


def test_reader_clears_old_chapters_and_stops_at_the_limit(plait_cli) -> None:
    _needs_plugins("reader.toml")
    done = plait_cli("chat", str(EXAMPLES / "reader.toml"), input="read chapter 1\n" + "next\n" * 5)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "In this prompt I see 1 chapter(s) in full and 0 cleared." in out
    assert (
        "agent> I read chapter 5 (222 words). "
        "In this prompt I see 1 chapter(s) in full and 4 cleared." in out
    )
    assert "thread limit (10/10)" in out


def test_mcp_time_answers_from_the_time_server(plait_cli) -> None:
    _needs_plugins("mcp_time.toml")
    env = dict(os.environ)  # mcp-server-time is installed beside this Python
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = plait_cli("run", str(EXAMPLES / "mcp_time.toml"), "What time is it in Tokyo?", env=env)
    assert done.returncode == 0, done.stderr
    assert 'time_get_current_time(timezone="Asia/Tokyo")' in done.stdout
    assert re.search(r"In Asia/Tokyo it is \d\d:\d\d on \w+day\.$", done.stdout.strip())
    assert "Warning" not in done.stderr and "Traceback" not in done.stderr


def test_mcp_time_chat_answers_a_second_turn(plait_cli) -> None:
    _needs_plugins("mcp_time.toml")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    stdin = "What time is it in Tokyo?\nAnd in Paris?\n/exit\n"
    done = plait_cli("chat", str(EXAMPLES / "mcp_time.toml"), input=stdin, env=env)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr
    answers = [line for line in done.stdout.splitlines() if line.startswith("agent> ")]
    assert [re.sub(r"\d\d:\d\d on \w+day", "HH:MM on DAY", a) for a in answers] == [
        "agent> In Asia/Tokyo it is HH:MM on DAY.",
        "agent> In Europe/Paris it is HH:MM on DAY.",
    ]


def test_deep_delegates_in_the_background_and_hands_billing_over(plait_cli, tmp_path: Path) -> None:
    """Run from a copy: the example's paths are relative to the working directory, and
    it appends its note to examples/deep/project/AGENTS.md."""
    _needs_plugins("deep.toml")
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    stdin = "Research solar batteries and write me a report.\n"
    done = plait_cli("chat", "examples/deep.toml", input=stdin, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "The researcher is on it in the background." in done.stdout
    notes = (tmp_path / "examples/deep/project/AGENTS.md").read_text(encoding="utf-8")
    assert notes.endswith("The user follows home energy storage.\n")
    done = plait_cli("run", "examples/deep.toml", "Why was I billed twice?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Support here. A double charge is a pending authorisation" in done.stdout
    done = plait_cli("run", "examples/deep_support.toml", "Hello?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Support here.")


def test_every_example_has_a_test() -> None:
    tested = {"hello.toml", "support.toml", "reader.toml", "mcp_time.toml", "deep.toml"}
    tested |= {"deep_support.toml"}
    assert {p.name for p in EXAMPLES.glob("*.toml")} == tested
