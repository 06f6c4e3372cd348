"""A real deepagents agent (LangChain's ``create_deep_agent``) whose async sub-agent is a
plait agent served by ``plait serve``: deepagents' ``start_async_task`` creates a thread
and a run on the plait server through LangGraph's SDK, ``check_async_task`` reads the
run's status and the thread's values, and the deep agent gets the plait agent's answer.
The deep agent's model is a LangChain chat model that emits the tool calls a real model
would, reading the task id from the tool answers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from serve_helpers import Served

import plait

deepagents = pytest.importorskip("deepagents")
from langchain_core.callbacks import CallbackManagerForLLMRun  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

KEY = "deepagents-parent-key-0123456789"
BRIEF = "Find out what our refund policy says about kettles."
ANSWER = "Policy on kettles: 30 days."


class Delegator(BaseChatModel):
    """Plays the deep agent's model, from what the user asked last: starts the plait agent
    on the brief, sends it a follow-up, or cancels it; then checks the task until it has
    finished and reports its status and result (a task id is read from the tool answers)."""

    @property
    def _llm_type(self) -> str:
        return "delegator"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self  # it knows which tools it calls

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        asked = next(str(m.content) for m in reversed(messages) if m.type == "human")
        task_id = next(
            (
                str(m.content).rpartition("task_id: ")[2].strip()
                for m in messages
                if isinstance(m, ToolMessage) and m.name == "start_async_task"
            ),
            "",
        )
        if not isinstance(last, ToolMessage):
            if asked.startswith("Follow up: "):
                message = asked.removeprefix("Follow up: ")
                return _calls(("update_async_task", {"task_id": task_id, "message": message}))
            if asked == "Cancel it.":
                return _calls(("cancel_async_task", {"task_id": task_id}))
            return _calls(("start_async_task", {"description": asked, "subagent_type": "plait"}))
        if last.name == "cancel_async_task":
            return AIMessage(str(last.content))
        if last.name == "start_async_task" and asked.endswith("in the background."):
            return AIMessage("Started.")
        if last.name != "check_async_task":
            return _calls(("check_async_task", {"task_id": task_id}))
        checked = json.loads(str(last.content))
        if checked["status"] in ("pending", "running"):
            time.sleep(0.05)
            return _calls(("check_async_task", {"task_id": task_id}))
        return AIMessage(f"{checked['status']}: {checked.get('result')}")


def _calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{name}_{time.monotonic_ns()}"}
            for name, args in calls
        ],
    )


@plait.tool
def read_policy(topic: str) -> str:
    """Read the policy on a topic.

    Args:
        topic: what the policy is about.
    """
    if topic == "lamps":
        assert gate.wait(20), "the test never opened the gate"
    return f"{topic}: 30 days"


gate = threading.Event()


def researcher_brain(messages: list[plait.AnyMessage], tools: list[object]) -> Any:
    """The plait agent: reads the policy on the topic asked about, then answers."""
    last = messages[-1]
    if last.type == "human":
        topic = "lamps" if "lamp" in last.text else "kettles"
        return plait.AIMessage("", tool_calls=[plait.ToolCall("read_policy", {"topic": topic})])
    return f"Policy on {last.text}."


@pytest.fixture
def deep(
    serve: Callable[..., Served], monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Any, plait.Agent, Served]]:
    """A deep agent whose async sub-agent ``plait`` is the plait researcher, served with
    a key the sub-agent spec sends."""
    for name in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # the SDK would send one as X-Api-Key
    gate.clear()
    researcher = plait.create_agent(
        plait.ScriptedChatModel([researcher_brain] * 20),
        [read_policy],
        name="researcher",
        checkpointer="memory",
    )
    served = serve(researcher, keys=[KEY])
    agent = deepagents.create_deep_agent(
        model=Delegator(),
        subagents=[
            {
                "name": "plait",
                "description": "A plait agent that researches policies.",
                "graph_id": researcher.name,
                "url": served.url,
                "headers": {"Authorization": f"Bearer {KEY}"},
            }
        ],
        checkpointer=InMemorySaver(),
    )
    yield agent, researcher, served
    gate.set()


def ask(agent: Any, text: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": "parent-1"}}
    result: dict[str, Any] = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
    return result


def test_a_deepagents_async_subagent_drives_a_plait_agent_by_url(
    deep: tuple[Any, plait.Agent, Served],
) -> None:
    agent, researcher, served = deep
    result = ask(agent, BRIEF)
    tools = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert tools[0].name == "start_async_task"
    task_id = str(tools[0].content).rpartition("task_id: ")[2].strip()
    checked = json.loads(str(tools[-1].content))
    assert checked == {"status": "success", "thread_id": task_id, "result": ANSWER}
    assert result["messages"][-1].content == f"success: {ANSWER}"
    # deepagents tracks the task by the plait thread, which ran the brief
    assert result["async_tasks"][task_id]["status"] == "success"
    messages = researcher.get_state(task_id)["messages"]
    assert (messages[0].type, messages[0].text) == ("human", BRIEF)
    assert messages[-1].text == ANSWER
    with served.client(KEY) as http:
        thread = http.get(f"/threads/{task_id}").json()
    assert thread["metadata"]["subagent_name"] == "plait"
    assert thread["metadata"]["parent_thread_id"] == "parent-1"

    # a follow-up is a new run on the same plait thread, which keeps the conversation
    gate.set()
    again = ask(agent, "Follow up: And lamps?")
    assert again["messages"][-1].content == "success: Policy on lamps: 30 days."
    messages = researcher.get_state(task_id)["messages"]
    assert [m.text for m in messages if m.type == "human"] == [BRIEF, "And lamps?"]
    assert researcher.list_threads() == [task_id]


def test_a_deepagents_cancel_cancels_the_plait_run(deep: tuple[Any, plait.Agent, Served]) -> None:
    agent, _, served = deep
    # the plait agent waits in read_policy("lamps") until the gate opens: its run goes on
    started = ask(agent, "Check the lamp policy in the background.")
    assert started["messages"][-1].content == "Started."
    [task_id] = started["async_tasks"]
    cancelled = ask(agent, "Cancel it.")
    assert cancelled["messages"][-1].content == (f"Cancelled async subagent task: {task_id}")
    assert cancelled["async_tasks"][task_id]["status"] == "cancelled"
    with served.client(KEY) as http:
        deadline = time.monotonic() + 20
        while http.get(f"/threads/{task_id}/runs").json()[0]["status"] != "interrupted":
            assert time.monotonic() < deadline, "the plait run was never cancelled"
            time.sleep(0.02)
        assert http.get(f"/threads/{task_id}").json()["status"] == "idle"


def test_a_deepagents_update_of_a_running_task_interrupts_the_plait_run(
    deep: tuple[Any, plait.Agent, Served],
) -> None:
    agent, researcher, served = deep
    started = ask(agent, "Check the lamp policy in the background.")
    [task_id] = started["async_tasks"]
    first_run = started["async_tasks"][task_id]["run_id"]
    # deepagents' default update_strategy, "interrupt": the run going on is cancelled
    # (multitask_strategy="interrupt") and the follow-up runs on the same thread
    updated = ask(agent, "Follow up: Never mind, what about kettles?")
    assert updated["messages"][-1].content == "success: Policy on kettles: 30 days."
    with served.client(KEY) as http:
        runs = http.get(f"/threads/{task_id}/runs").json()
    assert [(r["run_id"], r["status"]) for r in runs][1:] == [(first_run, "interrupted")]
    assert runs[0]["status"] == "success"
    humans = [m.text for m in researcher.get_state(task_id)["messages"] if m.type == "human"]
    assert humans == ["Check the lamp policy in the background.", "Never mind, what about kettles?"]


def test_a_plait_run_paused_for_approval_is_a_waiting_deepagents_task(
    serve: Callable[..., Served], support: plait.Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    served = serve(support, keys=[KEY])
    agent = deepagents.create_deep_agent(
        model=Delegator(),
        subagents=[
            {
                "name": "plait",
                "description": "Acme's support agent.",
                "graph_id": support.name,
                "url": served.url,
                "headers": {"Authorization": f"Bearer {KEY}"},
            }
        ],
        checkpointer=InMemorySaver(),
    )
    result = ask(agent, "Refund order 1042, please.")
    [task_id] = result["async_tasks"]
    checked = json.loads(str(result["messages"][-2].content))
    # LangGraph's convention, which deepagents reads: the run succeeded, the thread waits
    assert checked["status"] == "waiting", checked
    [pending] = checked["interrupts"]
    assert pending["id"] == support.get_interrupts(task_id)[0].id
    assert pending["value"]["action_requests"][0]["name"] == "issue_refund"
    assert result["messages"][-1].content.startswith("waiting: ")
