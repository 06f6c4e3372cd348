"""Background sub-agents: start_task returns at once while the sub-agent runs concurrently;
its result lands in the main thread at the thread's next model call; check_task,
update_task, cancel_task and list_tasks; a run ending with tasks outstanding says so."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ai, call, tool_answers, transcript
from plait_subagents import BACKGROUND_KEY, BACKGROUND_TOOLS, SubAgentMiddleware

gate = threading.Event()
both = threading.Barrier(2, timeout=10)


@pytest.fixture(autouse=True)
def _open_gate() -> Iterator[None]:
    gate.clear()
    both.reset()
    yield
    gate.set()  # a cancelled task's worker thread stops waiting


@plait.tool
def slow(topic: str) -> str:
    """Research a topic slowly.

    Args:
        topic: what to research.
    """
    assert gate.wait(10), "the test never opened the gate"
    return f"notes on {topic}"


@plait.tool
def together(topic: str) -> str:
    """Research a topic, alongside another task.

    Args:
        topic: what to research.
    """
    both.wait()  # passes only if two tasks run at the same time
    return f"notes on {topic}"


def researcher(*answers: Any, tool: Any = slow) -> dict[str, Any]:
    return {
        "name": "researcher",
        "description": "researches a topic",
        "system_prompt": "Research.",
        "model": plait.ScriptedChatModel(list(answers)),
        "tools": [tool],
    }


def start(call_id: str, description: str = "Research X") -> Any:
    return call("start_task", call_id, description=description, subagent_type="researcher")


def test_a_task_runs_on_after_the_run_and_its_result_lands_next_run(make_agent: Any) -> None:
    middleware = SubAgentMiddleware(
        subagents=[researcher(ai("", call("slow", "x1", topic="X")), "X is great.")],
        background=True,
    )
    agent = make_agent(
        [ai("", start("s1")), "I started the research.", "The researcher says X is great."],
        middleware=[middleware],
    )
    first = agent.invoke("research X", thread_id="t")
    assert first.text == "I started the research."
    [task_id] = first.state[BACKGROUND_KEY]
    assert first.state[BACKGROUND_KEY][task_id]["status"] == "running"
    assert tool_answers(first.messages)["s1"].text == (
        f"Started background task {task_id} (researcher). Its result will be added to this "
        "conversation when it finishes."
    )
    assert first.messages[-1].metadata["background_tasks_running"] == [task_id]

    gate.set()
    assert middleware.wait_for_tasks("t", timeout=10)
    second = agent.invoke("any news?", thread_id="t")
    assert second.text == "The researcher says X is great."
    assert transcript(agent.model.requests[2].messages)[-2:] == [
        ("human", "any news?"),
        (
            "human",
            f"[Background task {task_id} (researcher) completed]\nTask: Research X\n"
            "Result:\nX is great.",
        ),
    ]
    delivered = second.messages[-2]
    assert delivered.metadata["subagents"]["status"] == "completed"
    assert delivered.metadata["subagents"]["usage"]["input_tokens"] > 0
    assert second.state[BACKGROUND_KEY][task_id]["status"] == "completed"
    assert "background_tasks_running" not in second.messages[-1].metadata


def test_tasks_run_concurrently(make_agent: Any) -> None:
    middleware = SubAgentMiddleware(
        subagents=[
            researcher(
                ai("", call("together", "a1", topic="A")),
                ai("", call("together", "b1", topic="B")),
                "done",
                "done",
                tool=together,
            )
        ],
        background=True,
    )
    agent = make_agent(
        [ai("", start("s1", "Research A"), start("s2", "Research B")), "Started both.", "ok"],
        middleware=[middleware],
    )
    agent.invoke("research A and B", thread_id="t")
    assert middleware.wait_for_tasks("t", timeout=10)
    result = agent.invoke("news?", thread_id="t")
    statuses = sorted(record["status"] for record in result.state[BACKGROUND_KEY].values())
    assert statuses == ["completed", "completed"]


def test_check_task_gives_the_status_then_the_result_once(make_agent: Any) -> None:
    middleware = SubAgentMiddleware(
        subagents=[researcher(ai("", call("slow", "x1", topic="X")), "X is great.")],
        background=True,
    )
    agent = make_agent([ai("", start("s1")), "Started."], middleware=[middleware])
    first = agent.invoke("research X", thread_id="t")
    [task_id] = first.state[BACKGROUND_KEY]
    agent.model.responses += [  # type: ignore[attr-defined]
        ai("", call("check_task", "c1", task_id=task_id)),
        "Still going.",
    ]
    running = agent.invoke("done yet?", thread_id="t")
    assert tool_answers(running.messages)["c1"].text == (
        f"Task {task_id} (researcher) is still running."
    )
    gate.set()
    assert middleware.wait_for_tasks("t", timeout=10)
    agent.model.responses += [  # type: ignore[attr-defined]
        ai("", call("check_task", "c2", task_id=task_id)),
        "It is done.",
    ]
    done = agent.invoke("and now?", thread_id="t")
    # the result landed once, at the model call before check_task, which gives it again
    answers = [m for m in done.messages if m.metadata.get("subagents")]
    assert len([m for m in answers if m.type == "human"]) == 1
    assert tool_answers(done.messages)["c2"].text == (
        f"Task {task_id} (researcher) completed. Result:\nX is great."
    )


def test_cancel_task_stops_it_and_nothing_lands(make_agent: Any) -> None:
    middleware = SubAgentMiddleware(
        subagents=[researcher(ai("", call("slow", "x1", topic="X")), "X is great.")],
        background=True,
    )
    agent = make_agent([ai("", start("s1")), "Started."], middleware=[middleware])
    task_id = next(iter(agent.invoke("research X", thread_id="t").state[BACKGROUND_KEY]))
    agent.model.responses += [  # type: ignore[attr-defined]
        ai(
            "",
            call("cancel_task", "k1", task_id=task_id),
            call("cancel_task", "k2", task_id="nope"),
        ),
        "Cancelled.",
        "Nothing else.",
    ]
    result = agent.invoke("stop it", thread_id="t")
    answers = tool_answers(result.messages)
    assert answers["k1"].text == f"Cancelled task {task_id}."
    assert answers["k2"].text == (
        f"Error: there is no background task 'nope'; the tasks are: {task_id}"
    )
    assert result.state[BACKGROUND_KEY][task_id]["status"] == "cancelled"
    assert middleware.wait_for_tasks("t", timeout=10)
    later = agent.invoke("anything?", thread_id="t")
    assert not [m for m in later.messages if m.type == "human" and m.metadata.get("subagents")]


def test_update_task_sends_more_instructions_to_a_running_task(make_agent: Any) -> None:
    research_model = plait.ScriptedChatModel(
        [ai("", call("slow", "x1", topic="X")), "X is great.", "X and Y are great."]
    )
    spec = {**researcher(), "model": research_model}
    middleware = SubAgentMiddleware(subagents=[spec], background=True)
    agent = make_agent([ai("", start("s1")), "Started."], middleware=[middleware])
    task_id = next(iter(agent.invoke("research X", thread_id="t").state[BACKGROUND_KEY]))
    agent.model.responses += [  # type: ignore[attr-defined]
        ai("", call("update_task", "u1", task_id=task_id, message="Also cover Y.")),
        "Told it.",
        "Here it is.",
    ]
    told = agent.invoke("also Y", thread_id="t")
    assert tool_answers(told.messages)["u1"].text == (
        f"Task {task_id} will read your instructions once its current work is done."
    )
    gate.set()
    assert middleware.wait_for_tasks("t", timeout=10)
    result = agent.invoke("news?", thread_id="t")
    assert transcript(research_model.requests[2].messages)[-1] == ("human", "Also cover Y.")
    [delivered] = [m for m in result.messages if m.type == "human" and m.metadata.get("subagents")]
    assert delivered.text.endswith("Result:\nX and Y are great.")


def test_list_tasks(make_agent: Any) -> None:
    middleware = SubAgentMiddleware(
        subagents=[researcher(ai("", call("slow", "x1", topic="X")), "X is great.")],
        background=True,
    )
    agent = make_agent(
        [
            ai("", start("s1")),
            ai("", call("list_tasks", "l1")),
            "Listed.",
            ai("", start("s2")),
            "No.",
        ],
        middleware=[middleware],
    )
    result = agent.invoke("research X", thread_id="t")
    [task_id] = result.state[BACKGROUND_KEY]
    assert tool_answers(result.messages)["l1"].text == (
        f"- {task_id} (researcher): running: Research X"
    )


def test_the_tools_and_section_come_only_with_background(make_agent: Any) -> None:
    plain = make_agent(["hi"], middleware=[SubAgentMiddleware()])
    plain.invoke("hello")
    assert {t.name for t in plain.model.requests[0].tools} == {"task"}
    agent = make_agent(["hi"], middleware=[("subagents", {"background": True})])
    agent.invoke("hello", thread_id="t")
    request = agent.model.requests[0]
    assert {t.name for t in request.tools} == {"task", *BACKGROUND_TOOLS}
    assert "## Background tasks" in request.system_prompt


def test_background_without_a_checkpointer_fails_at_create_agent(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], checkpointer=None, middleware=[("subagents", {"background": True})])
    assert str(info.value).startswith(
        "plugin 'subagents': option 'background': background tasks deliver their results to "
        "the thread at its next run, so the agent needs a checkpointer"
    )
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("subagents", {"background": "yes"})])
    assert "plugin 'subagents': option 'background': expected a bool, got 'yes'" in str(info.value)
