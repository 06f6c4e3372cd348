"""``agent.get_state(step=)``, ``get_state_history``, ``fork`` and ``update_state`` on
every built-in checkpointer: a fork made before an approval resumes with another
decision, running the same tool call from the same step."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.checkpoint import HistoryError
from plait.errors import ConfigError
from plait.testing import ai, call, transcript


def _refund_agent(make_agent: Any, checkpointer: Any, answers: list[str]) -> Any:
    ran: list[str] = []

    @plait.tool
    def refund(amount: int) -> str:
        """Refund the customer."""
        decision = plait.interrupt({"approve refund of": amount})
        ran.append(decision)
        return "refunded" if decision == "yes" else "refused"

    agent = make_agent(
        [ai("", call("refund", id="c1", amount=50)), *answers],
        tools=[refund],
        checkpointer=checkpointer,
    )
    agent.ran = ran
    return agent


def test_a_fork_before_an_approval_resumes_with_another_decision(
    make_agent: Any, checkpointer_backend: Any
) -> None:
    agent = _refund_agent(make_agent, checkpointer_backend.make(), ["Done.", "Not refunded."])
    paused = agent.invoke("refund me", thread_id="t")
    assert paused.interrupts
    paused_at = agent.get_state_history("t")[0]
    assert paused_at.node == "tools" and paused_at.run_id == paused.run_id

    done = agent.invoke(plait.Command(resume="yes"), thread_id="t")
    assert transcript(done.messages)[-2:] == [("tool", "refunded"), ("ai", "Done.")]

    fork = agent.fork("t", step=paused_at.step, new_thread_id="t-no")
    assert fork == "t-no"
    assert agent.get_interrupts("t-no")[0].value == {"approve refund of": 50}
    redone = agent.invoke(plait.Command(resume="no"), thread_id="t-no")

    assert agent.ran == ["yes", "no"]  # the same call ran again, with the other answer
    assert transcript(redone.messages) == [
        ("human", "refund me"),
        ("ai", ""),
        ("tool", "refused"),
        ("ai", "Not refunded."),
    ]
    assert redone.messages[2].tool_call_id == "c1"
    # the original thread is as it was
    assert transcript(agent.get_state("t")["messages"])[-1] == ("ai", "Done.")
    # and its paused step still reads back
    then = agent.get_state("t", step=paused_at.step)
    assert transcript(then["messages"]) == [("human", "refund me"), ("ai", "")]


def test_history_steps_name_the_nodes_of_a_run(make_agent: Any, checkpointer_backend: Any) -> None:
    agent = make_agent(["hello"], checkpointer=checkpointer_backend.make())
    result = agent.invoke("hi", thread_id="t")
    history = agent.get_state_history("t")
    # the input is saved before the model call (a run stopped in it keeps the input)
    assert [i.node for i in history] == ["after_agent", "model", "input"]
    assert {i.run_id for i in history} == {result.run_id}
    assert [i.step for i in history] == sorted((i.step for i in history), reverse=True)
    first = agent.get_state("t", step=history[-1].step)
    assert transcript(first["messages"]) == [("human", "hi")]
    answered = agent.get_state("t", step=history[1].step)
    assert transcript(answered["messages"]) == [("human", "hi"), ("ai", "hello")]
    assert agent.get_state("t", step=0)["messages"] == []


def test_update_state_writes_a_step_a_fork_can_start_from(
    make_agent: Any, checkpointer_backend: Any
) -> None:
    agent = make_agent(["one", "two"], checkpointer=checkpointer_backend.make())
    agent.invoke("hi", thread_id="t")
    step = agent.update_state(
        "t", {"messages": [plait.HumanMessage("note from ops")]}, as_node="ops"
    )
    assert agent.get_state_history("t")[0].node == "ops"
    assert agent.get_state_history("t")[0].step == step
    forked = agent.fork("t")  # the latest step, a fresh id
    result = agent.invoke("and now?", thread_id=forked)
    assert transcript(result.messages)[-3:] == [
        ("human", "note from ops"),
        ("human", "and now?"),
        ("ai", "two"),
    ]


def test_async_twins(make_agent: Any) -> None:
    agent = make_agent(["hello"])
    agent.invoke("hi", thread_id="t")

    async def go() -> None:
        history = await agent.aget_state_history("t")
        state = await agent.aget_state("t", step=0)
        assert state["messages"] == []
        new = await agent.afork("t", step=history[1].step, new_thread_id="f")
        await agent.aupdate_state(new, {"messages": [("user", "x")]})
        assert transcript((await agent.aget_state("f"))["messages"]) == [
            ("human", "hi"),
            ("ai", "hello"),
            ("human", "x"),
        ]

    asyncio.run(go())


def test_bad_input_gets_one_clear_line(make_agent: Any) -> None:
    agent = make_agent(["hello"])
    agent.invoke("hi", thread_id="t")
    with pytest.raises(ValueError, match=r"^step: expected a step number \(0 or more\), got -1"):
        agent.get_state("t", step=-1)
    with pytest.raises(HistoryError, match=r"^thread 't' has no step 99: the steps kept are"):
        agent.fork("t", step=99)
    with pytest.raises(HistoryError, match=r"^cannot fork onto thread 't': it exists$"):
        agent.fork("t", step=1, new_thread_id="t")
    with pytest.raises(TypeError, match=r"^update_state: values: expected a mapping, got"):
        agent.update_state("t", ["x"])  # type: ignore[arg-type]

    class Bare:
        def load(self, thread_id: str) -> None: ...
        def step(self, thread_id: str) -> int: ...
        def save(self, thread_id: str, delta: Any) -> None: ...
        def list_threads(self) -> list[str]: ...
        def delete_thread(self, thread_id: str) -> None: ...

    bare = make_agent(["x"], checkpointer=Bare())
    with pytest.raises(ConfigError, match="keeps no history"):
        bare.get_state_history("t")
