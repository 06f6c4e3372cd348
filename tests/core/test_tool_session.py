"""``agent.tool_session()``: a call made by someone other than the model passes the same
hooks as a model's call, and the model is never called."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from plait import Middleware, create_agent, interrupt
from plait.messages import ToolMessage, pending_tool_calls
from plait.testing import scripted
from plait.types import Command, StateField, ToolCallRequest

RAN: list[str] = []


def send(to: str) -> str:
    """Send a message.

    Args:
        to: Who to send it to.
    """
    RAN.append(to)
    return f"sent to {to}"


class Guard(Middleware):
    """Counts calls in run-scoped state, asks a human about 'boss', upper-cases results."""

    def state_fields(self) -> dict[str, StateField]:
        return {"seen": StateField(default=0, scope="run")}

    def after_model(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        pending = pending_tool_calls(state["messages"])
        if any(c.args.get("to") == "boss" for c in pending):
            interrupt({"ask": "send to the boss?"})
        if state["seen"] >= 2:
            return {
                "seen": state["seen"] + 1,
                "messages": [
                    ToolMessage("Error: blocked", tool_call_id=c.id, name=c.name, status="error")
                    for c in pending
                ],
            }
        return {"seen": state["seen"] + 1}

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]
    ) -> ToolMessage | Command:
        answer = handler(request)
        return ToolMessage(answer.text.upper(), tool_call_id=answer.tool_call_id, name="send")


@pytest.mark.parametrize("use_async", [False, True])
def test_served_calls_pass_after_model_hooks_and_the_tool_chain(use_async: bool) -> None:
    RAN.clear()
    # a scripted model with no answers raises if called: a session never calls it
    agent = create_agent(scripted(), [send], middleware=[Guard()], checkpointer="memory")
    session = agent.tool_session()

    def call(to: str) -> Any:
        if use_async:
            return asyncio.run(session.acall("send", {"to": to}))
        return session.call("send", {"to": to})

    first = call("ann")
    assert first.message is not None and first.message.text == "SENT TO ANN"
    paused = call("boss")
    assert paused.message is None and paused.paused
    assert paused.interrupts[0].value == {"ask": "send to the boss?"}
    assert call("bob").message.text == "SENT TO BOB"  # type: ignore[union-attr]
    blocked = call("cy")  # the third call the run-scoped count lets through was the last
    assert blocked.message is not None and blocked.message.status == "error"
    assert blocked.message.text == "Error: blocked"
    assert RAN == ["ann", "bob"]


def test_a_served_call_with_bad_arguments_is_answered_like_the_models() -> None:
    agent = create_agent(scripted(), [send])
    served = agent.tool_session().call("send", {"who": "x"})
    assert served.message is not None and served.message.status == "error"
    assert served.message.text.startswith("Error: invalid arguments for tool 'send'")
