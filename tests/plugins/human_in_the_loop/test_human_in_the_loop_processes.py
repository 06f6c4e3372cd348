"""``human_in_the_loop`` across processes: one process pauses at the review, another (with
its own agent object) resumes it from the same SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = '''
import json, os, pathlib, sys

import plait
from plait.testing import ai, call, scripted

db, log, mode = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]


@plait.tool
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: the recipient.
        body: the text.
    """
    with log.open("a") as handle:
        handle.write(json.dumps({"to": to, "body": body, "pid": os.getpid()}) + "\\n")
    return f"sent to {to}"


def build(*responses):
    return plait.create_agent(
        scripted(*responses),
        [send_email],
        middleware=[("human_in_the_loop", {"interrupt_on": {"send_email": True}})],
        checkpointer="sqlite:///" + db,
    )


if mode == "pause":
    agent = build(ai("", call("send_email", "c1", to="ann@example.com", body="hi")))
    result = agent.invoke("mail Ann", thread_id="t1")
    pending = [{"id": i.id, "value": i.value} for i in result.interrupts]
    out = {"pid": os.getpid(), "interrupts": pending}
else:
    agent = build("Sent it.")
    result = agent.invoke(plait.Command(resume=json.loads(sys.stdin.read())), thread_id="t1")
    out = {
        "pid": os.getpid(),
        "text": result.text,
        "pending": len(result.interrupts),
        "calls": [c.args for m in result.messages if m.type == "ai" for c in m.tool_calls],
        "tools": [m.text for m in result.messages if m.type == "tool"],
    }
print(json.dumps(out))
'''


def run(tmp_path: Path, mode: str, stdin: str = "") -> dict[str, Any]:
    script = tmp_path / "hitl_agent.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "agent.db"), str(tmp_path / "sent.log"), mode],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_pause_in_one_process_and_resume_with_an_edit_in_another(tmp_path: Path) -> None:
    paused = run(tmp_path, "pause")
    assert not (tmp_path / "sent.log").exists()
    [pending] = paused["interrupts"]
    request = pending["value"]["action_requests"][0]
    assert (request["name"], request["args"]) == (
        "send_email",
        {"to": "ann@example.com", "body": "hi"},
    )
    decisions = {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": request["name"],
                    "args": {**request["args"], "body": "Hello"},
                },
            }
        ]
    }
    resumed = run(tmp_path, "resume", json.dumps(decisions))
    assert resumed["pid"] != paused["pid"]
    assert resumed["pending"] == 0
    assert resumed["text"] == "Sent it."
    # the model's call is kept as it was; the edited one is what ran
    assert resumed["calls"] == [{"to": "ann@example.com", "body": "hi"}]
    assert resumed["tools"][0].endswith("sent to ann@example.com")
    [sent] = [json.loads(line) for line in (tmp_path / "sent.log").read_text().splitlines()]
    assert sent == {"to": "ann@example.com", "body": "Hello", "pid": resumed["pid"]}
