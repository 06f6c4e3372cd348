"""A run stopped around a tool call tells the model whether the tool itself was called:
"Not run" only when it was not, so a model is never told a tool that sent the email or
made the payment did nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import plait
from plait.errors import StopRun
from plait.messages import ToolMessage
from plait.testing import ai, call, scripted
from plait.types import ToolCallRequest


class Refused(StopRun):
    pass


class StopAround(plait.Middleware):
    """Stops the run before a call reaches its tool, or after the tool answered."""

    def __init__(self, *, after: bool) -> None:
        self.after = after

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]
    ) -> Any:
        if not self.after:
            raise Refused("Refused before the call.")
        handler(request)
        raise Refused("Refused what the tool answered.")

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        if not self.after:
            raise Refused("Refused before the call.")
        await handler(request)
        raise Refused("Refused what the tool answered.")


def answers(agent: plait.Agent, thread: str) -> dict[str, str]:
    return {
        m.tool_call_id: m.text
        for m in agent.get_state(thread)["messages"]
        if isinstance(m, ToolMessage)
    }


@pytest.mark.parametrize("driven", ["sync", "async"])
@pytest.mark.parametrize("after", [False, True])
def test_the_answer_says_whether_the_tool_was_called(driven: str, after: bool) -> None:
    sent: list[str] = []

    @plait.tool
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return "sent"

    agent = plait.create_agent(
        scripted(ai("", call("send", id="c1", to="ann"), call("send", id="c2", to="bob"))),
        [send],
        middleware=[StopAround(after=after)],
        checkpointer="memory",
    )
    with pytest.raises(Refused):
        if driven == "sync":
            agent.invoke("mail them", thread_id="t")
        else:
            asyncio.run(agent.ainvoke("mail them", thread_id="t"))
    got = answers(agent, "t")
    if after:
        assert sent[0] == "ann"
        assert got["c1"] == (
            "The tool was called, but the run was stopped (Refused what the tool answered)."
        )
    else:
        assert sent == []
        assert got["c1"] == "Not run: the run was stopped (Refused before the call)."
    if driven == "sync":  # calls run in turn: the one after the stop never starts
        assert got["c2"] == "Not run: the run was stopped before this call."
