"""Strategy ``pseudonymize``: the model sees placeholders, tools and the caller see the
real values, and the table lives in thread state across checkpoints and processes."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.messages import AIMessage, AIMessageChunk, ToolMessage
from plait.models import ScriptedChatModel
from plait.testing import ai, call
from plait_pii import PIIMiddleware

sent: list[dict[str, Any]] = []


@plait.tool
def send_mail(to: str, body: str) -> str:
    """Send an e-mail.

    Args:
        to: the recipient's address.
        body: the text.
    """
    sent.append({"to": to, "body": body})
    return f"queued for {to}"


def seen_by_model(model: ScriptedChatModel) -> str:
    """Everything every request put before the model."""
    return json.dumps(
        [
            [m.content, [c.args for c in getattr(m, "tool_calls", ())]]
            for request in model.requests
            for m in request.messages
        ],
        ensure_ascii=False,
    )


def test_the_model_sees_placeholders_the_tool_and_the_caller_real_values(
    make_agent: Any,
) -> None:
    sent.clear()
    script = [
        ai("Sending.", call("send_mail", id="c1", to="<EMAIL_2>", body="hi <EMAIL_1>")),
        "Done: mailed <EMAIL_2> as <EMAIL_1> asked.",
    ]
    mw = PIIMiddleware("email", strategy="pseudonymize", apply_to_tool_results=True)
    agent = make_agent(script, tools=[send_mail], middleware=[mw], checkpointer="memory")
    result = agent.invoke(
        "I am jane@example.com; mail bob@corp.example.org, cc jane@example.com", thread_id="t"
    )
    first = agent.model.requests[0].messages[0].text
    assert first == "I am <EMAIL_1>; mail <EMAIL_2>, cc <EMAIL_1>"
    # the tool ran with the real values; its answer went back to the model pseudonymized
    assert sent == [{"to": "bob@corp.example.org", "body": "hi jane@example.com"}]
    assert agent.model.requests[1].messages[2].text == "queued for <EMAIL_2>"
    seen = seen_by_model(agent.model)
    assert "jane@example.com" not in seen and "bob@corp.example.org" not in seen
    # the caller reads real values
    assert result.text == "Done: mailed bob@corp.example.org as jane@example.com asked."
    assert isinstance(result.messages[1], AIMessage)
    assert result.messages[1].tool_calls[0].args["to"] == "bob@corp.example.org"
    # the thread keeps placeholders, the table keeps the values
    stored = agent.get_state("t")
    assert stored["messages"][0].text == first
    assert stored["pii_pseudonyms"] == {"email": {"jane@example.com": 1, "bob@corp.example.org": 2}}


def test_the_same_value_keeps_its_placeholder_across_turns(make_agent: Any) -> None:
    mw = PIIMiddleware("email", strategy="pseudonymize")
    agent = make_agent(["one", "two"], middleware=[mw], checkpointer="memory")
    agent.invoke("a@example.com and b@example.com", thread_id="t")
    agent.invoke("b@example.com, c@example.com, a@example.com", thread_id="t")
    assert agent.model.requests[1].messages[-1].text == "<EMAIL_2>, <EMAIL_3>, <EMAIL_1>"


def test_a_value_the_model_repeats_is_pseudonymized_in_state(make_agent: Any) -> None:
    mw = PIIMiddleware("ip", strategy="pseudonymize", apply_to_output=True)
    agent = make_agent(
        ["host 10.0.0.7 is down, and 10.0.0.9 too", "ok"], middleware=[mw], checkpointer="memory"
    )
    result = agent.invoke("check 10.0.0.7", thread_id="t")
    assert result.text == "host 10.0.0.7 is down, and 10.0.0.9 too"
    assert agent.get_state("t")["messages"][1].text == "host <IP_1> is down, and <IP_2> too"
    agent.invoke("and now?", thread_id="t")
    assert "10.0.0" not in seen_by_model(agent.model)


def test_the_stream_shows_real_values(make_agent: Any) -> None:
    sent.clear()

    class Trickle(ScriptedChatModel):
        def stream(self, messages: Any, **kwargs: Any) -> Any:
            for chunk in super().stream(messages, **kwargs):
                for i in range(0, len(chunk.content), 2):
                    yield AIMessageChunk(chunk.content[i : i + 2], id=chunk.id)
                if chunk.tool_call_chunks or chunk.usage:
                    yield AIMessageChunk(
                        tool_call_chunks=chunk.tool_call_chunks, usage=chunk.usage, id=chunk.id
                    )

    model = Trickle(
        [
            ai("To <EMAIL_1>.", call("send_mail", id="c1", to="<EMAIL_1>", body="x")),
            "Sent <EMAIL_1>",
        ]
    )
    mw = PIIMiddleware("email", strategy="pseudonymize")
    agent = make_agent(model, tools=[send_mail], middleware=[mw], checkpointer="memory")
    chunks = [
        e.data
        for e in agent.stream("mail li@example.cn", thread_id="t", mode="messages")
        if isinstance(e.data, AIMessageChunk)
    ]
    streamed = "".join(c.content for c in chunks)
    assert streamed == "To li@example.cn.Sent li@example.cn"
    arguments = "".join(p.args for c in chunks for p in c.tool_call_chunks)
    assert json.loads(arguments) == {"to": "li@example.cn", "body": "x"}
    assert sent == [{"to": "li@example.cn", "body": "x"}]
    assert "li@example.cn" not in seen_by_model(model)
    assert agent.get_state("t")["messages"][-1].text == "Sent <EMAIL_1>"


def test_async_path(make_agent: Any) -> None:
    sent.clear()
    script = [ai("", call("send_mail", id="c1", to="<EMAIL_1>", body="b")), "sent to <EMAIL_1>"]
    mw = PIIMiddleware("email", strategy="pseudonymize")
    agent = make_agent(script, tools=[send_mail], middleware=[mw])
    result = asyncio.run(agent.ainvoke("to ivan@example.ru"))
    assert result.text == "sent to ivan@example.ru"
    assert sent == [{"to": "ivan@example.ru", "body": "b"}]
    assert "ivan@example.ru" not in seen_by_model(agent.model)


def test_the_table_never_reaches_the_trace(
    make_agent: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PLAIT_TRACE", "1")
    mw = PIIMiddleware("email", strategy="pseudonymize")
    agent = make_agent(["hello <EMAIL_1>"], middleware=[mw], checkpointer="memory")
    with caplog.at_level(logging.INFO, logger="plait.trace"):
        agent.invoke("I am secret.person@example.com", thread_id="t")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    # the caller's own input is traced as it came; the table never is: hook results show
    # counts, the state shows <private> in its place
    assert "'pii_pseudonyms': <private>" in logged
    assert "<pii pseudonyms email: 1>" in logged
    assert "secret.person@example.com': 1" not in logged
    assert "'pii_pseudonyms': {" not in logged


def test_several_types_keep_their_own_tables(make_agent: Any) -> None:
    middleware = [
        PIIMiddleware("email", strategy="pseudonymize"),
        PIIMiddleware("ip", strategy="pseudonymize"),
    ]
    agent = make_agent(["<EMAIL_1> at <IP_1>"], middleware=middleware, checkpointer="memory")
    result = agent.invoke("x@example.com from 10.1.2.3", thread_id="t")
    assert agent.model.requests[0].messages[0].text == "<EMAIL_1> from <IP_1>"
    assert result.text == "x@example.com at 10.1.2.3"
    assert agent.get_state("t")["pii_pseudonyms"] == {
        "email": {"x@example.com": 1},
        "ip": {"10.1.2.3": 1},
    }


SCRIPT_FIRST_PROCESS = """
import sys
import plait
from plait.models import ScriptedChatModel
from plait_pii import PIIMiddleware

agent = plait.create_agent(
    ScriptedChatModel(["noted <EMAIL_1>"]),
    middleware=[PIIMiddleware("email", strategy="pseudonymize")],
    checkpointer="sqlite:///" + sys.argv[1],
)
print(agent.invoke("I am ana@example.pt and eve@example.de", thread_id="t").text)
"""


def test_the_table_survives_a_sqlite_checkpoint_and_a_new_process(tmp_path: Path) -> None:
    sent.clear()
    db = tmp_path / "agent.db"
    script = tmp_path / "first.py"
    script.write_text(textwrap.dedent(SCRIPT_FIRST_PROCESS))
    out = subprocess.run(
        [sys.executable, str(script), str(db)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "noted ana@example.pt"
    # a new agent in another process, on the same database
    model = ScriptedChatModel(
        [ai("", call("send_mail", id="c1", to="<EMAIL_2>", body="from <EMAIL_1>")), "sent"]
    )
    agent = plait.create_agent(
        model,
        tools=[send_mail],
        middleware=[PIIMiddleware("email", strategy="pseudonymize")],
        checkpointer=f"sqlite:///{db}",
    )
    agent.invoke("mail eve@example.de, and new@example.com", thread_id="t")
    assert model.requests[0].messages[0].text == "I am <EMAIL_1> and <EMAIL_2>"
    assert model.requests[0].messages[-1].text == "mail <EMAIL_2>, and <EMAIL_3>"
    assert sent == [{"to": "eve@example.de", "body": "from ana@example.pt"}]
    assert isinstance(agent.get_state("t")["messages"][-2], ToolMessage)
    assert "example.pt" not in seen_by_model(model) and "eve@" not in seen_by_model(model)


def test_direct_use_numbers_values() -> None:
    mw = PIIMiddleware("email", strategy="pseudonymize")
    assert mw.redact("a@example.com b@example.com a@example.com") == (
        "<EMAIL_1> <EMAIL_2> <EMAIL_1>"
    )
