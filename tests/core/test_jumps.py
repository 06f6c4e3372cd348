"""``Command(jump_to=...)`` moves the loop, and only where the hook declared it may."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ai, call, transcript


def test_declared_jump_to_end_skips_the_model(make_agent: Any) -> None:
    @attrs.frozen
    class Gate(plait.Middleware):
        @plait.can_jump_to("end")
        def before_model(self, state: Any) -> plait.Command:
            return plait.Command(
                update={"messages": [plait.AIMessage("closed today")]}, jump_to="end"
            )

    agent = make_agent([], middleware=[Gate()])
    result = agent.invoke("open?")

    assert result.text == "closed today"
    assert agent.model.calls == 0


def test_undeclared_jump_names_middleware_and_hook(make_agent: Any) -> None:
    @plait.after_model
    def sneaky(state: Any) -> plait.Command:
        return plait.Command(jump_to="model")

    agent = make_agent(["ok"], middleware=[sneaky])
    with pytest.raises(
        ConfigError,
        match=r"middleware 'sneaky': after_model returned jump_to='model' but declares only: none",
    ):
        agent.invoke("hi")


def test_jump_to_end_from_after_model_skips_pending_tools(make_agent: Any) -> None:
    ran: list[str] = []

    @plait.tool
    def launch() -> str:
        """Launch."""
        ran.append("launch")
        return "launched"

    @plait.after_model(can_jump_to=("end",))
    def stop(state: Any) -> plait.Command:
        return plait.Command(jump_to="end")

    agent = make_agent([ai("", call("launch"))], tools=[launch], middleware=[stop])
    agent.invoke("go")

    assert ran == []


def test_jump_to_model_from_after_model_calls_the_model_again(make_agent: Any) -> None:
    turns = {"n": 0}

    @plait.after_model(can_jump_to=("model",))
    def insist(state: Any) -> Any:
        turns["n"] += 1
        if turns["n"] == 1:
            return plait.Command(
                update={"messages": [plait.HumanMessage("be more specific")]}, jump_to="model"
            )
        return None

    agent = make_agent(["vague", "specific"], middleware=[insist])
    result = agent.invoke("question")

    assert transcript(result.messages) == [
        ("human", "question"),
        ("ai", "vague"),
        ("human", "be more specific"),
        ("ai", "specific"),
    ]


def test_can_jump_to_rejects_unknown_targets() -> None:
    with pytest.raises(ValueError) as info:
        plait.can_jump_to("start")
    assert str(info.value) == "can_jump_to: expected one of 'model', 'tools', 'end', got 'start'"


def test_when_after_model_answers_every_call_the_model_sees_the_answers(make_agent: Any) -> None:
    @plait.after_model
    def block_all(state: Any) -> Any:
        last = state["messages"][-1]
        if not last.tool_calls:
            return None
        return {
            "messages": [
                plait.ToolMessage("blocked", tool_call_id=c.id, name=c.name, status="error")
                for c in last.tool_calls
            ]
        }

    agent = make_agent([ai("", call("anything")), "understood"], middleware=[block_all])
    result = agent.invoke("go")

    assert transcript(result.messages) == [
        ("human", "go"),
        ("ai", ""),
        ("tool", "blocked"),
        ("ai", "understood"),
    ]
