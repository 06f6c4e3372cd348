"""``plait.tools.set_error_update``: a ``wrap_tool_call`` hook that rewrites a tool's error
text from state of its own writes that state in the tools step holding the error message,
while every hook outside still sees the exception."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import plait
from plait.tools import error_update, raised_by_tool, set_error_text, set_error_update
from plait.types import ToolCallRequest


@plait.tool
def lookup(key: str) -> str:
    """Look a key up."""
    raise KeyError("secret-42")


class Renames(plait.Middleware):
    """Tells the model ``[key 1]`` for the key an error names, keeping the name in state."""

    def state_fields(self) -> dict[str, plait.StateField]:
        return {"renamed": plait.StateField(default={}, reducer=lambda old, new: {**old, **new})}

    def _rename(self, error: Exception) -> None:
        if raised_by_tool(error):
            set_error_text(error, "[key 1] is unknown")
            set_error_update(error, {**error_update(error), "renamed": {"[key 1]": "secret-42"}})

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]
    ) -> Any:
        try:
            return handler(request)
        except Exception as error:
            self._rename(error)
            raise

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        try:
            return await handler(request)
        except Exception as error:
            self._rename(error)
            raise


class Watches(plait.Middleware):
    """Outside: sees what the call raised."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]
    ) -> Any:
        try:
            return handler(request)
        except Exception as error:
            self.seen.append(type(error).__name__)
            raise


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_the_update_is_written_with_the_error_message(use_async: bool) -> None:
    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("lookup", {"key": "k"})]), "done"]
    )
    watches = Watches()
    agent = plait.create_agent(
        model, tools=[lookup], checkpointer="memory", middleware=[watches, Renames()]
    )
    if use_async:
        asyncio.run(agent.ainvoke("Look k up.", thread_id="t"))
    else:
        agent.invoke("Look k up.", thread_id="t")
    told = model.requests[-1].messages[-1]
    assert told.text.startswith("Error: tool 'lookup' raised KeyError: [key 1] is unknown.")
    assert told.status == "error"
    assert watches.seen == ["KeyError"]
    steps = sorted(s.step for s in agent.get_state_history("t"))
    first = next(
        agent.get_state("t", s)
        for s in steps
        if any(isinstance(m, plait.ToolMessage) for m in agent.get_state("t", s)["messages"])
    )
    assert first["renamed"] == {"[key 1]": "secret-42"}


def test_the_message_is_the_kernels() -> None:
    with pytest.raises(ValueError, match="leave out 'messages'"):
        set_error_update(ValueError("x"), {"messages": []})
    assert error_update(ValueError("x")) == {}
