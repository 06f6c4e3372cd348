"""A tool's exception is its answer: the model reads the error message the kernel makes
of it. A tool's ``after`` guardrails did not see it, so a result they would have stopped
reached the model when the tool raised it instead of returning it."""

from __future__ import annotations

import asyncio

import pytest

import plait
from plait_guardrails import GuardrailData, GuardrailResult, GuardrailsMiddleware, GuardrailTripped


@plait.tool
def lookup(name: str) -> str:
    """Look a record up."""
    raise ValueError("the secret is hunter2")


def no_secrets(data: GuardrailData) -> str | None:
    return "a secret" if "secret" in data.text else None


def hide_secrets(data: GuardrailData) -> GuardrailResult | None:
    if "secret" in data.text:
        return GuardrailResult.replace("Error: the lookup failed.", "a secret")
    return None


def run(guard: object, use_async: bool) -> tuple[plait.ScriptedChatModel, plait.AgentResult]:
    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("lookup", {"name": "x"})]), "done"]
    )
    agent = plait.create_agent(
        model,
        tools=[lookup],
        middleware=[GuardrailsMiddleware(tools={"lookup": {"after": [guard]}})],
    )
    result = asyncio.run(agent.ainvoke("go")) if use_async else agent.invoke("go")
    return model, result


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_an_after_guardrail_checks_a_tools_error_text(use_async: bool) -> None:
    with pytest.raises(GuardrailTripped, match="tripped on the tool result: a secret"):
        run(no_secrets, use_async)
    model, _ = run(hide_secrets, use_async)
    told = model.requests[-1].messages[-1]
    assert told.text == "Error: the lookup failed."
    assert all("hunter2" not in m.text for r in model.requests for m in r.messages)
    # A guardrail that allows it leaves the kernel's error message as it was.
    model, _ = run(lambda data: None, use_async)
    assert (
        model.requests[-1]
        .messages[-1]
        .text.startswith("Error: tool 'lookup' raised ValueError: the secret is hunter2.")
    )
