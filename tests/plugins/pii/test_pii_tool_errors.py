"""A tool's exception is its answer: the model reads its text in the error message the
kernel makes of it. With ``apply_to_tool_results`` that text was sent as the tool raised
it (``redact``, ``mask``, ``hash``: the address reached the model and stayed in every
later step of the thread); it is handled as a result's text is."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
from pathlib import Path

import pytest

import plait
from plait.errors import PIIDetectionError

ADDRESS = "bob@example.com"


@plait.tool
def contact(name: str) -> str:
    """The e-mail address of a person."""
    raise ValueError(f"no contact for {ADDRESS}")


def agent_with(strategy: str, model: plait.ScriptedChatModel) -> plait.Agent:
    return plait.create_agent(
        model,
        tools=[contact],
        checkpointer="memory",
        middleware=[
            ("pii", {"pii_type": "email", "strategy": strategy, "apply_to_tool_results": True})
        ],
    )


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("strategy", "shown"),
    [("redact", "[REDACTED_EMAIL]"), ("mask", "b***@****.com"), ("hash", "<email_hash:")],
)
def test_a_tools_error_text_is_redacted_before_the_model_reads_it(
    strategy: str, shown: str, use_async: bool
) -> None:
    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("contact", {"name": "Bob"})]), "done"]
    )
    agent = agent_with(strategy, model)
    if use_async:
        asyncio.run(agent.ainvoke("Find Bob.", thread_id="t"))
    else:
        agent.invoke("Find Bob.", thread_id="t")
    told = model.requests[-1].messages[-1]
    assert told.text.startswith(f"Error: tool 'contact' raised ValueError: no contact for {shown}")
    assert all(ADDRESS not in m.text for request in model.requests for m in request.messages)
    for step in agent.get_state_history("t"):  # nor in any step the thread keeps
        assert all(ADDRESS not in m.text for m in agent.get_state("t", step.step)["messages"])


def test_block_stops_on_a_tools_error_as_on_its_result() -> None:
    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("contact", {"name": "Bob"})]), "done"]
    )
    with pytest.raises(PIIDetectionError):
        agent_with("block", model).invoke("Find Bob.", thread_id="t")
    assert len(model.requests) == 1


def test_a_retry_listed_outside_pii_says_the_error_in_pii_words() -> None:
    """``tool_retry`` listed before ``pii`` answers a call whose retries ran out with the
    last error's text: that text held the address pii had redacted from the error."""

    @plait.tool
    def reach(name: str) -> str:
        """Reach a person."""
        raise ConnectionError(f"no route for {ADDRESS}")

    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("reach", {"name": "Bob"})]), "done"]
    )
    agent = plait.create_agent(
        model,
        tools=[reach],
        middleware=[
            ("tool_retry", {"max_retries": 1, "initial_delay": 0, "on_failure": "continue"}),
            ("pii", {"pii_type": "email", "strategy": "redact", "apply_to_tool_results": True}),
        ],
    )
    agent.invoke("Reach Bob.")
    told = model.requests[-1].messages[-1].text
    assert told.startswith(
        "Error: tool 'reach' failed after 2 attempts with ConnectionError: no route for "
        "[REDACTED_EMAIL]."
    )
    assert all(ADDRESS not in m.text for r in model.requests for m in r.messages)


def stored_outside_the_table(path: Path) -> list[str]:
    """Every place in the SQLite checkpoint holding ``ADDRESS`` other than as a key of
    the pseudonym table (``{"email": {"bob@example.com": 1}}``, checkpointed by design):
    table and column, with the text around it."""
    found: list[str] = []
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cursor = db.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                for column, cell in zip(columns, row, strict=True):
                    text = cell.decode(errors="replace") if isinstance(cell, bytes) else str(cell)
                    for at in (m.end() for m in re.finditer(re.escape(ADDRESS), text)):
                        if not text[at:].startswith(('":', '\\":')):
                            found.append(f"{table}.{column}: {text[max(0, at - 60) : at + 10]}")
    return found


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_pseudonymize_numbers_a_tools_error_text_in_the_step_that_holds_it(
    use_async: bool, tmp_path: Path
) -> None:
    """The error message entered the tools step as the tool raised it, and the next
    ``before_model`` numbered it: the model never read the address, but that saved step
    held it. Now the message has its placeholder and the table its number in that step."""
    db = tmp_path / "agent.db"
    model = plait.ScriptedChatModel(
        [
            plait.AIMessage("", tool_calls=[plait.ToolCall("contact", {"name": "Bob"})]),
            "No contact for <EMAIL_1>.",
        ]
    )
    agent = plait.create_agent(
        model,
        tools=[contact],
        checkpointer=f"sqlite:///{db}",
        middleware=[
            (
                "pii",
                {"pii_type": "email", "strategy": "pseudonymize", "apply_to_tool_results": True},
            )
        ],
    )
    if use_async:
        result = asyncio.run(agent.ainvoke("Find Bob.", thread_id="t"))
    else:
        result = agent.invoke("Find Bob.", thread_id="t")
    told = model.requests[-1].messages[-1]
    assert told.text.startswith(
        "Error: tool 'contact' raised ValueError: no contact for <EMAIL_1>."
    )
    assert result.text == f"No contact for {ADDRESS}."  # the caller reads it restored
    shown = next(m for m in result.messages if isinstance(m, plait.ToolMessage))
    assert f"no contact for {ADDRESS}." in shown.text
    steps = [agent.get_state("t", step.step) for step in agent.get_state_history("t")]
    for state in steps:  # a step holding the message holds its number
        if any("<EMAIL_1>" in m.text for m in state["messages"]):
            assert state["pii_pseudonyms"] == {"email": {ADDRESS: 1}}
        assert all(ADDRESS not in m.text for m in state["messages"])
    agent.close()
    assert stored_outside_the_table(db) == []


def test_a_known_value_in_a_tools_error_is_its_placeholder_without_apply_to_tool_results() -> None:
    """As in a result: a value the table holds is replaced in every new message whatever
    ``apply_to_*`` says; a new one is numbered only with ``apply_to_tool_results``."""
    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("contact", {"name": "Bob"})]), "done"]
    )
    agent = plait.create_agent(
        model,
        tools=[contact],
        checkpointer="memory",
        middleware=[("pii", {"pii_type": "email", "strategy": "pseudonymize"})],
    )
    agent.invoke(f"Find Bob, {ADDRESS}.", thread_id="t")
    assert "no contact for <EMAIL_1>." in model.requests[-1].messages[-1].text
    for step in agent.get_state_history("t"):
        assert all(ADDRESS not in m.text for m in agent.get_state("t", step.step)["messages"])


@pytest.mark.parametrize("strategy", ["redact", "pseudonymize"])
def test_two_pii_instances_both_handle_a_tools_error(strategy: str) -> None:
    """The outer instance read ``str(error)``, the tool's own words, and set its text from
    them: the address the inner one had replaced was back in what the model read."""

    @plait.tool
    def ping(host: str) -> str:
        """Ping a host."""
        raise OSError(f"{ADDRESS} asked, but 10.0.0.7 is down")

    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("ping", {"host": "h"})]), "done"]
    )
    options = {"strategy": strategy, "apply_to_tool_results": True}
    agent = plait.create_agent(
        model,
        tools=[ping],
        checkpointer="memory",
        middleware=[
            ("pii", {"pii_type": "ip", **options}),
            ("pii", {"pii_type": "email", **options}),
        ],
    )
    agent.invoke("Ping h.", thread_id="t")
    told = model.requests[-1].messages[-1].text
    assert ADDRESS not in told and "10.0.0.7" not in told
    if strategy == "pseudonymize":
        assert "raised OSError: <EMAIL_1> asked, but <IP_1> is down." in told
        tables = agent.get_state("t")["pii_pseudonyms"]
        assert tables == {"email": {ADDRESS: 1}, "ip": {"10.0.0.7": 1}}


def test_a_retry_listed_outside_pseudonymize_keeps_the_number_of_its_answer() -> None:
    """``tool_retry`` listed before pii makes its own answer of the error text pii
    numbered, without the step update pii gave the error: the number reaches the thread at
    the next ``before_model``, so a later value gets the next one, never ``<EMAIL_1>``."""

    @plait.tool
    def reach(name: str) -> str:
        """Reach a person."""
        raise ConnectionError(f"no route for {ADDRESS}")

    model = plait.ScriptedChatModel(
        [
            plait.AIMessage("", tool_calls=[plait.ToolCall("reach", {"name": "Bob"})]),
            "done",
            "ok",
        ]
    )
    agent = plait.create_agent(
        model,
        tools=[reach],
        checkpointer="memory",
        middleware=[
            ("tool_retry", {"max_retries": 1, "initial_delay": 0, "on_failure": "continue"}),
            (
                "pii",
                {"pii_type": "email", "strategy": "pseudonymize", "apply_to_tool_results": True},
            ),
        ],
    )
    agent.invoke("Reach Bob.", thread_id="t")
    assert "with ConnectionError: no route for <EMAIL_1>." in model.requests[-1].messages[-1].text
    assert agent.get_state("t")["pii_pseudonyms"] == {"email": {ADDRESS: 1}}
    agent.invoke("Now write to amy@example.org.", thread_id="t")
    assert model.requests[-1].messages[-1].text == "Now write to <EMAIL_2>."
    for step in agent.get_state_history("t"):
        assert all(ADDRESS not in m.text for m in agent.get_state("t", step.step)["messages"])
