"""``plait chat``: an interactive loop on stdin that asks the human on approvals."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plait.cli import Asker


def test_chat_keeps_the_conversation_across_turns(
    plait_cli, write: Callable[[str, str], Path]
) -> None:
    write(
        "echo_brain.py",
        "def count(messages, tools):\n"
        "    humans = [m.text for m in messages if m.type == 'human']\n"
        "    return f'{len(humans)} messages so far; last: {humans[-1]}'\n",
    )
    write(
        "echo.toml",
        '[agent]\nmodel = "scripted:echo"\n'
        'model_settings = { responses = [{ function = "echo_brain:count" },'
        ' { function = "echo_brain:count" }] }\n',
    )
    done = plait_cli("chat", "echo.toml", input="hello\nagain\n")
    assert done.returncode == 0, done.stderr
    assert "agent> 1 messages so far; last: hello" in done.stdout
    assert "agent> 2 messages so far; last: again" in done.stdout


def test_approve_runs_the_call(plait_cli, mail_agent: Callable[[str], Path]) -> None:
    mail_agent("")
    done = plait_cli("chat", "mail.toml", input="Mail Bob\na\n/exit\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert 'Approval needed: send_email({"to": "bob@example.com", "subject": "Hello"})' in out
    assert "Sending mail needs approval" in out
    assert "[a]pprove  [e]dit  [r]eject >" in out
    assert "agent> Done: sent to bob@example.com: Hello" in out
    assert out.count('-> send_email(to="bob@example.com", subject="Hello")') == 1


def test_edit_reads_new_arguments_as_json_without_an_editor(
    plait_cli, mail_agent: Callable[[str], Path]
) -> None:
    mail_agent("")
    stdin = 'Mail Bob\ne\nnot json\n{"to": "carol@example.com", "subject": "Hi"}\n'
    done = plait_cli("chat", "mail.toml", input=stdin)
    assert done.returncode == 0, done.stderr
    assert "not valid JSON" in done.stdout
    assert "agent> Done: sent to carol@example.com: Hi" in done.stdout


def test_edit_falls_back_to_typing_when_stdin_is_not_a_terminal(
    plait_cli, mail_agent: Callable[[str], Path], write: Callable[[str, str], Path]
) -> None:
    mail_agent("")
    write("editor.py", "import sys\nopen(sys.argv[1], 'w').write('{\"to\": \"x\"}')\n")
    stdin = 'Mail Bob\ne\n{"to": "dan@example.com", "subject": "Yo"}\n'
    done = plait_cli("chat", "mail.toml", input=stdin, env={"EDITOR": "python editor.py"})
    assert "agent> Done: sent to dan@example.com: Yo" in done.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_edit_opens_the_arguments_as_json_in_the_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.json"
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import json, sys\n"
        f"open({str(seen)!r}, 'w').write(open(sys.argv[1]).read())\n"
        "json.dump({'to': 'eve@example.com', 'subject': 'Edited'}, open(sys.argv[1], 'w'))\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    asker = Asker(_Terminal(""), io.StringIO())
    assert asker.edit_json({"to": "bob@example.com"}) == {
        "to": "eve@example.com",
        "subject": "Edited",
    }
    assert json.loads(seen.read_text()) == {"to": "bob@example.com"}


def test_reject_with_a_reason(plait_cli, mail_agent: Callable[[str], Path]) -> None:
    mail_agent("")
    done = plait_cli("chat", "mail.toml", input="Mail Bob\nr\nnot today\n")
    assert done.returncode == 0, done.stderr
    assert "agent> Done: not sent: not today" in done.stdout


def test_only_allowed_decisions_are_accepted(plait_cli, mail_agent: Callable[[str], Path]) -> None:
    mail_agent("")
    # "respond" is not in this tool's allowed decisions: asked again.
    done = plait_cli("chat", "mail.toml", input="Mail Bob\ns\nrespond\napprove\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("please answer one of: approve, edit, reject") == 2
    assert "agent> Done: sent to bob@example.com: Hello" in done.stdout


def test_end_of_input_during_a_decision_leaves_the_thread_paused(
    plait_cli, mail_agent: Callable[[str], Path]
) -> None:
    mail_agent("")
    done = plait_cli("chat", "mail.toml", input="Mail Bob\n")
    assert done.returncode == 0
    assert "stays paused" in done.stdout


def test_chat_on_a_paused_thread_asks_the_pending_approval_first(
    plait_cli, mail_agent: Callable[[str], Path]
) -> None:
    mail_agent('checkpointer = "sqlite:///mail.db"')
    first = plait_cli("chat", "mail.toml", "--thread", "t1", input="Mail Bob\n")
    assert "No answer given; thread t1 stays paused." in first.stdout

    again = plait_cli("chat", "mail.toml", "--thread", "t1", input="a\n/exit\n")
    assert again.returncode == 0, again.stderr
    out = again.stdout
    assert "Thread t1 is paused waiting for you:" in out
    assert out.index("Thread t1 is paused") < out.index("[a]pprove") < out.index("you>")
    assert "agent> Done: sent to bob@example.com: Hello" in out


def test_generic_interrupt_is_answered_with_text(
    plait_cli, write: Callable[[str, str], Path]
) -> None:
    write(
        "ask_tools.py",
        "import plait\n\n"
        "def pick_color() -> str:\n"
        '    """Ask the user for a color."""\n'
        "    return 'user chose ' + str(plait.interrupt({'question': 'Which color?'}))\n\n"
        "def brain(messages, tools):\n"
        "    from plait.messages import AIMessage, ToolCall\n"
        "    if messages[-1].type == 'tool':\n"
        "        return messages[-1].text\n"
        "    return AIMessage('', tool_calls=[ToolCall('pick_color', {})])\n",
    )
    write(
        "ask.toml",
        '[agent]\nmodel = "scripted:ask"\ntools = ["ask_tools:pick_color"]\n'
        'model_settings = { responses = [{ function = "ask_tools:brain" },'
        ' { function = "ask_tools:brain" }] }\n',
    )
    done = plait_cli("chat", "ask.toml", input="Pick one\nteal\n")
    assert done.returncode == 0, done.stderr
    assert 'The agent asks: {"question": "Which color?"}' in done.stdout
    assert "agent> user chose teal" in done.stdout


def test_a_failing_turn_is_reported_and_the_chat_goes_on(
    plait_cli, write: Callable[[str, str], Path]
) -> None:
    write("one.toml", '[agent]\nmodel = "scripted:one"\nmodel_settings = { responses = ["hi"] }\n')
    done = plait_cli("chat", "one.toml", input="first\nsecond\n")
    assert done.returncode == 0
    assert "agent> hi" in done.stdout
    assert "plait: error: ScriptedChatModel 'one' has 1 response(s)" in done.stderr
    assert "Traceback" not in done.stderr
