"""``plait.interrupt`` pauses a run; ``Command(resume=...)`` re-enters the same hook."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.errors import CheckpointerRequiredError, PlaitError
from plait.testing import ai, call, transcript


def test_interrupt_in_a_hook_pauses_and_resume_reenters_it(make_agent: Any) -> None:
    entered: list[str] = []

    @plait.before_model
    def ask(state: Any) -> Any:
        entered.append("ask")
        answer = plait.interrupt({"question": "proceed?"})
        return {"messages": [plait.HumanMessage(f"human said {answer}")]}

    agent = make_agent(["done"], middleware=[ask])
    paused = agent.invoke("start", thread_id="t")

    assert [i.value for i in paused.interrupts] == [{"question": "proceed?"}]
    assert agent.model.calls == 0

    resumed = agent.invoke(plait.Command(resume="yes"), thread_id="t")

    assert resumed.interrupts == []
    assert resumed.run_id == paused.run_id
    assert entered == ["ask", "ask"]
    assert transcript(resumed.messages) == [
        ("human", "start"),
        ("human", "human said yes"),
        ("ai", "done"),
    ]


def test_before_agent_is_not_run_again_on_resume(make_agent: Any) -> None:
    starts: list[int] = []

    @plait.before_agent
    def start(state: Any) -> None:
        starts.append(1)

    @plait.after_model
    def review(state: Any) -> None:
        plait.interrupt("review")

    agent = make_agent(["answer"], middleware=[start, review])
    agent.invoke("hi", thread_id="t")
    agent.invoke(plait.Command(resume="ok"), thread_id="t")

    assert starts == [1]


def test_finished_tool_calls_are_not_rerun_on_resume(make_agent: Any) -> None:
    runs: list[str] = []

    @plait.tool
    def fast() -> str:
        """Fast."""
        runs.append("fast")
        return "fast done"

    @plait.tool
    def careful() -> str:
        """Needs approval."""
        runs.append("careful")
        return f"careful: {plait.interrupt('approve careful?')}"

    agent = make_agent(
        [ai("", call("fast", id="c1"), call("careful", id="c2")), "all done"],
        tools=[fast, careful],
    )
    paused = agent.invoke("go", thread_id="t")
    assert [i.value for i in paused.interrupts] == ["approve careful?"]

    result = agent.invoke(plait.Command(resume="approved"), thread_id="t")

    assert runs == ["fast", "careful", "careful"]
    assert transcript(result.messages) == [
        ("human", "go"),
        ("ai", ""),
        ("tool", "fast done"),
        ("tool", "careful: approved"),
        ("ai", "all done"),
    ]


def test_two_interrupts_resumed_by_id(make_agent: Any) -> None:
    @plait.tool
    def one() -> str:
        """One."""
        return str(plait.interrupt("first?"))

    @plait.tool
    def two() -> str:
        """Two."""
        return str(plait.interrupt("second?"))

    agent = make_agent([ai("", call("one"), call("two")), "ok"], tools=[one, two])
    paused = agent.invoke("go", thread_id="t")
    ids = {i.value: i.id for i in paused.interrupts}

    with pytest.raises(PlaitError, match="2 interrupts are pending"):
        agent.invoke(plait.Command(resume="ambiguous"), thread_id="t")
    result = agent.invoke(
        plait.Command(resume={ids["first?"]: "A", ids["second?"]: "B"}), thread_id="t"
    )

    assert [m.text for m in result.messages if m.type == "tool"] == ["A", "B"]


def test_interrupt_without_checkpointer_says_one_is_needed(make_agent: Any) -> None:
    @plait.before_model
    def ask(state: Any) -> None:
        plait.interrupt("?")

    agent = make_agent(["x"], middleware=[ask], checkpointer=None)
    with pytest.raises(CheckpointerRequiredError, match="needs a checkpointer"):
        agent.invoke("hi")


def test_resume_with_nothing_paused_is_an_error(make_agent: Any) -> None:
    agent = make_agent(["x"])
    agent.invoke("hi", thread_id="t")
    with pytest.raises(PlaitError, match="no run paused at an interrupt"):
        agent.invoke(plait.Command(resume="?"), thread_id="t")


def test_interrupt_outside_a_run_is_an_error() -> None:
    with pytest.raises(PlaitError, match="only be called inside a hook or a tool"):
        plait.interrupt("?")


async def _async_resume(make_agent: Any) -> list[tuple[str, str]]:
    @plait.before_model
    async def ask(state: Any) -> Any:
        answer = plait.interrupt("go on?")
        return {"messages": [plait.HumanMessage(str(answer))]}

    agent = make_agent(["fine"], middleware=[ask])
    paused = await agent.ainvoke("hi", thread_id="t")
    assert len(paused.interrupts) == 1
    result = await agent.ainvoke(plait.Command(resume="yes"), thread_id="t")
    return transcript(result.messages)


def test_interrupt_and_resume_on_the_async_path(make_agent: Any) -> None:
    import asyncio

    assert asyncio.run(_async_resume(make_agent)) == [
        ("human", "hi"),
        ("human", "yes"),
        ("ai", "fine"),
    ]


def test_new_input_on_a_paused_thread_cancels_the_calls_left_unanswered(make_agent: Any) -> None:
    ran: list[str] = []

    @plait.tool
    def careful(what: str) -> str:
        """Asks first.

        Args:
            what: what to do.
        """
        if plait.interrupt(f"do {what}?") == "yes":
            ran.append(what)
        return "done"

    agent = make_agent(
        [ai("", call("careful", "c1", what="deploy"), call("careful", "c2", what="tag")), "ok"],
        tools=[careful],
    )
    paused = agent.invoke("ship it", thread_id="t")
    assert len(paused.interrupts) == 2

    result = agent.invoke(
        ["never mind", plait.ToolMessage("tagged by hand", tool_call_id="c2", name="careful")],
        thread_id="t",
    )

    assert ran == []
    assert result.interrupts == [] and agent.get_interrupts("t") == []
    assert result.run_id != paused.run_id
    cancelled = result.messages[2]
    assert isinstance(cancelled, plait.ToolMessage)
    assert (cancelled.tool_call_id, cancelled.status) == ("c1", "error")
    assert cancelled.text == (
        "Not run: this call was waiting for a human's answer when new input arrived, "
        "so it was cancelled."
    )
    assert cancelled.metadata == {"plait": {"cancelled": True}}
    # what the model was sent next is a valid history: every call has exactly one answer
    sent = agent.model.requests[-1].messages
    assert transcript(sent) == [
        ("human", "ship it"),
        ("ai", ""),
        ("tool", cancelled.text),
        ("human", "never mind"),
        ("tool", "tagged by hand"),
    ]
    with pytest.raises(PlaitError, match="no run paused at an interrupt"):
        agent.invoke(plait.Command(resume="yes"), thread_id="t")


def test_a_tool_awaiting_another_agent_keeps_its_own_interrupt_scope(make_agent: Any) -> None:
    import asyncio

    helper = make_agent(["helper's answer"])

    @plait.tool
    async def consult() -> str:
        """Ask the helper agent, then the human."""
        said = (await helper.ainvoke("help")).text
        return f"{said}; human: {plait.interrupt(f'accept {said!r}?')}"

    agent = make_agent([ai("", call("consult", "c1")), "ok"], tools=[consult])

    async def scenario() -> Any:
        paused = await agent.ainvoke("go", thread_id="t")
        assert [i.value for i in paused.interrupts] == ['accept "helper\'s answer"?']
        return await agent.ainvoke(plait.Command(resume="yes"), thread_id="t")

    helper.model.responses.append("helper's answer")  # the tool runs again on resume
    result = asyncio.run(scenario())
    assert result.interrupts == []
    assert result.messages[-2].text == "helper's answer; human: yes"
