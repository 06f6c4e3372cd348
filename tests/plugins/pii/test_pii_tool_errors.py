"""A tool's exception is its answer: the model reads its text in the error message the
kernel makes of it. With ``apply_to_tool_results`` that text was sent as the tool raised
it (``redact``, ``mask``, ``hash``: the address reached the model and stayed in every
later step of the thread); it is handled as a result's text is."""

from __future__ import annotations

import asyncio

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
