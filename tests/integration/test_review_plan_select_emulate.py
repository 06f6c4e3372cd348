"""One agent with llm_tool_selector, todo_list, human_in_the_loop and llm_tool_emulator:
it plans, researches through an emulated tool, pauses to have an email reviewed, runs the
edited email for real, and finishes — on the sync and the async path."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import plait
from plait.messages import ToolMessage
from plait.testing import ai, call, scripted
from plait_human_in_the_loop import HumanInTheLoopMiddleware
from plait_llm_tool_emulator import LLMToolEmulatorMiddleware
from plait_llm_tool_selector import LLMToolSelectorMiddleware
from plait_todo_list import TodoListMiddleware

really_ran: list[tuple[str, dict[str, Any]]] = []


@plait.tool
def search(q: str) -> str:
    """Search the web.

    Args:
        q: the query.
    """
    really_ran.append(("search", {"q": q}))
    return "real search results"


@plait.tool
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: the recipient.
        body: the text.
    """
    really_ran.append(("send_email", {"to": to, "body": body}))
    return f"sent to {to}"


@plait.tool
def get_weather(city: str) -> str:
    """Get the weather.

    Args:
        city: the city.
    """
    really_ran.append(("get_weather", {"city": city}))
    return "sunny"


PLAN = [
    {"content": "Research plait", "status": "in_progress"},
    {"content": "Email Ann a summary", "status": "pending"},
]
DONE = [
    {"content": "Research plait", "status": "completed"},
    {"content": "Email Ann a summary", "status": "completed"},
]


def picks(*names: str) -> str:
    return json.dumps({"tools": list(names)})


@pytest.fixture(autouse=True)
def _reset() -> None:
    really_ran.clear()


@pytest.mark.parametrize("path", ["sync", "async"])
def test_plan_research_review_and_finish(path: str) -> None:
    main = scripted(
        ai("", call("write_todos", "w1", todos=PLAN), call("search", "s1", q="plait")),
        ai(
            "",
            call("send_email", "m1", to="ann@example.com", body="plait is a thing"),
            call("write_todos", "w2", todos=DONE),
        ),
        "Summary sent to Ann.",
    )
    selector = scripted(picks("search"), picks("send_email", "teleport"), picks())
    emulator = scripted("plait: an agent framework built on pluggy middleware")
    agent = plait.create_agent(
        main,
        [search, send_email, get_weather],
        system_prompt="You are a research assistant.",
        checkpointer="memory",
        middleware=[
            LLMToolSelectorMiddleware(model=selector, always_include=["write_todos"]),
            TodoListMiddleware(),
            HumanInTheLoopMiddleware(interrupt_on={"send_email": True}),
            LLMToolEmulatorMiddleware(tools=["search"], model=emulator),
        ],
    )
    edit = {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": "send_email",
                    "args": {"to": "ann@example.com", "body": "plait: pluggy-based agents."},
                },
            }
        ]
    }

    ask = "Research plait and email Ann a summary"
    at_pause: list[Any] = []

    async def run_async() -> tuple[Any, Any]:
        paused = await agent.ainvoke(ask, thread_id="t")
        at_pause.extend(really_ran)
        return paused, await agent.ainvoke(plait.Command(resume=edit), thread_id="t")

    if path == "sync":
        paused = agent.invoke(ask, thread_id="t")
        at_pause.extend(really_ran)
        finished = agent.invoke(plait.Command(resume=edit), thread_id="t")
    else:
        paused, finished = asyncio.run(run_async())

    # first turn: planned, and searched through the emulator only
    assert paused.state["todos"] == PLAN
    [pending] = paused.interrupts
    assert [r["name"] for r in pending.value["action_requests"]] == ["send_email"]
    assert at_pause == []  # search was emulated, the email waits for review
    assert really_ran == [
        ("send_email", {"to": "ann@example.com", "body": "plait: pluggy-based agents."})
    ]
    answers = {m.tool_call_id: m for m in finished.messages if isinstance(m, ToolMessage)}
    assert answers["s1"].text == "plait: an agent framework built on pluggy middleware"
    assert answers["m1"].text.startswith("Note: a human reviewer replaced your call")
    assert answers["m1"].text.endswith("sent to ann@example.com")
    assert answers["w2"].status == "success"
    assert finished.state["todos"] == DONE
    assert finished.text == "Summary sent to Ann."

    # what the main model was offered and told, call by call
    assert [r.tool_names for r in main.requests] == [
        ["search", "write_todos"],
        ["send_email", "write_todos"],
        ["write_todos"],
    ]
    assert all(
        (r.system_prompt or "").startswith("You are a research assistant.\n\n## Planning")
        for r in main.requests
    )
    assert selector.calls == 3
    assert emulator.calls == 1
