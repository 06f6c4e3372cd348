"""``plait.limits.limit_reached``: the one way a limit ends a run or raises."""

from __future__ import annotations

import pytest

import plait
from plait.errors import StopRun
from plait.limits import limit_reached
from plait.messages import AIMessage, ToolMessage
from plait.testing import ai, call, scripted


class BudgetError(StopRun):
    pass


def test_end_jumps_to_the_end_with_a_closing_ai_message() -> None:
    answer = ToolMessage("blocked", tool_call_id="c1")
    command = limit_reached(
        "Budget reached (5/3).",
        exit_behavior="end",
        error=BudgetError,
        stopped="before running more tools",
        metadata={"budget": {"spent": 5}},
        update={"spent": 5},
        messages=[answer],
    )
    assert command.jump_to == "end"
    assert command.update["spent"] == 5
    first, last = command.update["messages"]
    assert first is answer
    assert isinstance(last, AIMessage)
    assert last.text == (
        "Budget reached (5/3). The agent stopped before running more tools; start a new "
        "conversation or raise the limit to continue."
    )
    assert last.metadata == {"budget": {"spent": 5}}


def test_error_raises_the_limiters_error_with_the_reason() -> None:
    with pytest.raises(BudgetError, match=r"^Budget reached \(5/3\)\.$"):
        limit_reached("Budget reached (5/3).", exit_behavior="error", error=BudgetError)


def test_the_default_end_message_says_the_model_was_not_called_again() -> None:
    command = limit_reached("Limit reached.", exit_behavior="end", error=BudgetError)
    assert command.update == {"messages": [command.update["messages"][0]]}
    assert command.update["messages"][0].text.startswith(
        "Limit reached. The agent stopped without calling the model again;"
    )


def test_a_stop_raised_in_wrap_model_call_saves_its_update() -> None:
    """A ``StopRun`` a ``wrap_model_call`` hook raises with an ``update`` (a guardrail's
    trip) is checkpointed before it propagates; without one nothing of the step is (the
    run's input, saved before the model call, stays)."""
    import plait
    from plait.testing import scripted

    class Stopped(StopRun):
        pass

    @plait.wrap_model_call
    def stop(request, handler):  # type: ignore[no-untyped-def]
        handler(request)
        error = Stopped("stopped")
        if request.messages[-1].text == "record":
            error.update = {"messages": [AIMessage("stopped here", metadata={"why": "test"})]}
        raise error

    agent = plait.create_agent(scripted("a", "b"), middleware=[stop], checkpointer="memory")
    with pytest.raises(Stopped):
        agent.invoke("record", thread_id="t")
    saved = agent.get_state("t")["messages"]
    assert [(m.type, m.text) for m in saved] == [("human", "record"), ("ai", "stopped here")]
    assert saved[-1].metadata == {"why": "test"}
    with pytest.raises(Stopped):
        agent.invoke("plain", thread_id="u")
    assert [(m.type, m.text) for m in agent.get_state("u")["messages"]] == [("human", "plain")]


def test_a_stop_raised_by_a_tool_answers_its_call_with_one_full_stop() -> None:
    @plait.tool
    def spend() -> str:
        """Spend the budget."""
        raise BudgetError("Budget reached (5/3).")

    agent = plait.create_agent(
        scripted(ai("", call("spend", id="c1"))), [spend], checkpointer="memory"
    )
    with pytest.raises(BudgetError):
        agent.invoke("go", thread_id="t")
    answer = agent.get_state("t")["messages"][-1]
    # it read "(Budget reached (5/3).)."; and "Not run:", of a tool that ran and raised
    assert answer.text == "The tool was called, but the run was stopped (Budget reached (5/3))."
    assert answer.status == "error"
