"""pii ``pseudonymize``: every place a reviewer reads a paused run shows real values —
``get_interrupts`` from storage in another ``Agent`` (another process), the stream's
interrupt event, ``plait chat --thread`` resuming in a new process — while the checkpoint
and every model request hold placeholders only."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import plait
from plait.models import ScriptedChatModel
from plait.testing import ai, call
from plait_human_in_the_loop import HumanInTheLoopMiddleware
from plait_pii import PIIMiddleware

JANE = "jane@corp.example.com"
sent: list[str] = []


@plait.tool
def send_mail(to: str, body: str) -> str:
    """Send a mail.

    Args:
        to: the address.
        body: the text.
    """
    sent.append(to)
    return f"sent to {to}"


def agent_on(path: Path, *responses: Any) -> plait.Agent:
    return plait.create_agent(
        ScriptedChatModel(list(responses)),
        tools=[send_mail],
        middleware=[
            PIIMiddleware("email", strategy="pseudonymize", apply_to_tool_results=True),
            HumanInTheLoopMiddleware(interrupt_on={"send_mail": True}),
        ],
        checkpointer=f"sqlite:///{path}",
    )


def seen_by(model: Any) -> str:
    return json.dumps(
        [
            [m.content, [c.args for c in getattr(m, "tool_calls", ())]]
            for r in model.requests
            for m in r.messages
        ],
        ensure_ascii=False,
    )


ASKS = ai("", call("send_mail", id="c1", to="<EMAIL_1>", body="hi <EMAIL_1>"))


def test_a_reviewer_reading_storage_in_another_agent_sees_the_real_call(tmp_path: Path) -> None:
    sent.clear()
    db = tmp_path / "threads.db"
    first = agent_on(db, ASKS)
    first.invoke(f"write to {JANE}", thread_id="t")
    first.close()
    later = agent_on(db, "done")
    (pending,) = later.get_interrupts("t")
    request = pending.value["action_requests"][0]
    assert request["args"] == {"to": JANE, "body": f"hi {JANE}"}
    assert JANE in request["description"] and "<EMAIL_1>" not in request["description"]
    # as stored: placeholders, the same id
    (stored,) = later.get_interrupts("t", shown=False)
    assert stored.id == pending.id
    assert stored.value["action_requests"][0]["args"] == {"to": "<EMAIL_1>", "body": "hi <EMAIL_1>"}
    done = later.invoke(plait.Command(resume={"decisions": [{"type": "approve"}]}), thread_id="t")
    assert sent == [JANE]
    assert done.text == "done"
    assert JANE not in seen_by(first.model) + seen_by(later.model)
    assert JANE not in json.dumps([m.content for m in later.get_state("t")["messages"]])
    later.close()


def test_the_streams_interrupt_event_shows_the_real_call(tmp_path: Path) -> None:
    agent = agent_on(tmp_path / "s.db", ASKS)
    events = list(agent.stream(f"write to {JANE}", thread_id="t", stream_mode="updates"))
    (interrupt,) = next(e["__interrupt__"] for e in events if "__interrupt__" in e)
    assert interrupt.value["action_requests"][0]["args"]["to"] == JANE
    # other updates keep placeholders, and so does the model's view
    model_update = next(e["model"] for e in events if "model" in e)
    assert JANE not in json.dumps([c.args for c in model_update["messages"][0].tool_calls])
    assert JANE not in seen_by(agent.model)
    agent.close()


def test_a_token_stream_leaves_placeholders_in_the_stored_interrupt(tmp_path: Path) -> None:
    """The token stream shows the caller real values; the answer those tokens make enters
    state with placeholders, so a reviewer listed after pii checkpoints placeholders."""
    agent = agent_on(tmp_path / "m.db", ASKS)
    modes = ["messages", "updates"]
    events = list(agent.stream(f"write to {JANE}", thread_id="t", stream_mode=modes))
    streamed = [data[0] for mode, data in events if mode == "messages"]
    assert JANE in "".join(c.args or "" for chunk in streamed for c in chunk.tool_call_chunks)
    (stored,) = agent.get_interrupts("t", shown=False)
    assert stored.value["action_requests"][0]["args"] == {"to": "<EMAIL_1>", "body": "hi <EMAIL_1>"}
    (shown,) = agent.get_interrupts("t")
    assert shown.value["action_requests"][0]["args"] == {"to": JANE, "body": f"hi {JANE}"}
    agent.close()


def test_the_async_streams_interrupt_event_shows_the_real_call(tmp_path: Path) -> None:
    agent = agent_on(tmp_path / "a.db", ASKS)

    async def main() -> list[Any]:
        return [
            e["__interrupt__"]
            async for e in agent.astream(f"write to {JANE}", thread_id="t", stream_mode="updates")
            if "__interrupt__" in e
        ]

    ((interrupt,),) = asyncio.run(main())
    assert interrupt.value["action_requests"][0]["args"] == {"to": JANE, "body": f"hi {JANE}"}
    agent.close()


AGENT_FILE = """
[agent]
model = "scripted:mail"
tools = ["pii_mail_tools:send_mail"]
checkpointer = "sqlite:///threads.db"
model_settings = {{ responses = [{{ function = "pii_mail_tools:brain", repeat = 4 }}] }}

[[middleware]]
use = "pii"
pii_type = "email"
strategy = "pseudonymize"

[[middleware]]
use = "human_in_the_loop"
interrupt_on.send_mail = true
"""

TOOLS = '''
def send_mail(to: str) -> str:
    """Send a mail.

    Args:
        to: the address.
    """
    with open("sent.txt", "a", encoding="utf-8") as out:
        out.write(to + "\\n")
    return "sent"


def brain(messages, tools):
    """Mail whoever the user names (the model reads a placeholder), then say done."""
    from plait.messages import AIMessage, ToolCall

    last = messages[-1]
    if last.type == "tool":
        return "done"
    with open("model.txt", "a", encoding="utf-8") as out:
        out.write(last.text + "\\n")
    return AIMessage("", tool_calls=[ToolCall("send_mail", {"to": last.text.split()[-1]})])
'''


def cli(tmp_path: Path, *args: str, input: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "plait.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=tmp_path,
        env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        timeout=120,
    )


def test_plait_chat_resuming_in_a_new_process_asks_about_the_real_address(tmp_path: Path) -> None:
    (tmp_path / "mail.toml").write_text(AGENT_FILE.format(), encoding="utf-8")
    (tmp_path / "pii_mail_tools.py").write_text(TOOLS, encoding="utf-8")
    paused = cli(tmp_path, "run", "mail.toml", "--thread", "t", f"write to {JANE}")
    assert paused.returncode == 0, paused.stderr
    assert JANE in paused.stdout and "<EMAIL_1>" not in paused.stdout
    resumed = cli(tmp_path, "chat", "mail.toml", "--thread", "t", input="a\n")
    assert resumed.returncode == 0, resumed.stderr
    question = resumed.stdout.split("paused waiting for you:")[1].split("[a]pprove")[0]
    assert JANE in question and "<EMAIL_1>" not in question
    assert (tmp_path / "sent.txt").read_text(encoding="utf-8") == JANE + "\n"
    assert "agent> done" in resumed.stdout
    assert (tmp_path / "model.txt").read_text(encoding="utf-8") == "write to <EMAIL_1>\n"
