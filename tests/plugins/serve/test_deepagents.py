"""A real deepagents agent (LangChain's ``create_deep_agent``) whose async sub-agent is a
plait agent served by ``plait serve``: deepagents' ``start_async_task`` creates a thread
and a run on the plait server through LangGraph's SDK, ``check_async_task`` reads the
run's status and the thread's values, and the deep agent gets the plait agent's answer.
The deep agent's model is a LangChain chat model that emits the tool calls a real model
would, reading the task id from the tool answers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
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
ANSWER = "Kettles can be refunded within 30 days."


class Delegator(BaseChatModel):
    """Plays the deep agent's model: starts the plait agent on the brief, checks the task
    until it has finished, then reports its result."""

    checks: int = 0

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
        if not isinstance(last, ToolMessage):
            return _calls(("start_async_task", {"description": BRIEF, "subagent_type": "plait"}))
        if last.name == "start_async_task":
            task_id = str(last.content).rpartition("task_id: ")[2].strip()
            return _calls(("check_async_task", {"task_id": task_id}))
        checked = json.loads(str(last.content))
        if checked["status"] in ("pending", "running") and self.checks < 200:
            self.checks += 1
            time.sleep(0.05)
            return _calls(("check_async_task", {"task_id": checked["thread_id"]}))
        return AIMessage(f"{checked['status']}: {checked.get('result')}")


def _calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{name}_{time.monotonic_ns()}"}
            for name, args in calls
        ],
    )


def test_a_deepagents_async_subagent_drives_a_plait_agent_by_url(
    serve: Callable[..., Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # the SDK would send one as X-Api-Key
    researcher = plait.create_agent(
        plait.ScriptedChatModel([ANSWER]),
        name="researcher",
        checkpointer="memory",
    )
    served = serve(researcher, keys=[KEY])
    deep = deepagents.create_deep_agent(
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
    result = deep.invoke(
        {"messages": [{"role": "user", "content": "Research the refund policy."}]},
        {"configurable": {"thread_id": "parent-1"}},
    )
    tools = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert tools[0].name == "start_async_task"
    task_id = str(tools[0].content).rpartition("task_id: ")[2].strip()
    checked = json.loads(str(tools[-1].content))
    assert checked == {"status": "success", "thread_id": task_id, "result": ANSWER}
    assert result["messages"][-1].content == f"success: {ANSWER}"
    # deepagents tracks the task by the plait thread, which ran the brief
    assert result["async_tasks"][task_id]["status"] == "success"
    messages = researcher.get_state(task_id)["messages"]
    assert [(m.type, m.text) for m in messages] == [("human", BRIEF), ("ai", ANSWER)]
    with served.client(KEY) as http:
        thread = http.get(f"/threads/{task_id}").json()
    assert thread["metadata"]["subagent_name"] == "plait"
    assert thread["metadata"]["parent_thread_id"] == "parent-1"
