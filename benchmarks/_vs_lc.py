"""LangChain's side of ``vs_langchain.py``: the same fake model, tool and scenarios
through ``langchain.agents.create_agent`` (LangGraph underneath)."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from _vs_common import PROMPT, TOOL_NAME, Brain, lookup
from langchain.agents import create_agent
from langchain.agents.middleware import (
    ModelCallLimitMiddleware,
    ModelRetryMiddleware,
    PIIMiddleware,
    ToolCallLimitMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

IMPORT = "from langchain.agents import create_agent"


class FakeModel(BaseChatModel):
    """Answers what the ``Brain`` decides, reading nothing."""

    brain: Any

    @property
    def _llm_type(self) -> str:
        return "fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        text, calls = self.brain.reply()
        message = AIMessage(text, tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])
        return ChatResult(generations=[ChatGeneration(message=message)])


TOOL = tool(lookup)
assert TOOL.name == TOOL_NAME


def middleware() -> list[Any]:
    return [
        ModelCallLimitMiddleware(run_limit=10**9),
        ToolCallLimitMiddleware(run_limit=10**9),
        ModelRetryMiddleware(),
        ToolRetryMiddleware(),
        PIIMiddleware("email", strategy="redact"),
    ]


def agent(brain: Brain, *, with_middleware: bool, checkpointer: Any = None) -> Any:
    return create_agent(
        FakeModel(brain=brain),
        tools=[TOOL],
        middleware=middleware() if with_middleware else [],
        checkpointer=checkpointer,
    )


def run_steps(steps: int, *, middleware: bool) -> tuple[float, int]:
    built = agent(Brain(steps), with_middleware=middleware)
    start = time.perf_counter()
    result = built.invoke(
        {"messages": [{"role": "user", "content": PROMPT}]},
        {"recursion_limit": 10 * steps + 50},
    )
    return time.perf_counter() - start, len(result["messages"])


class Thread:
    def __init__(self, path: str) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver  # only the thread scenario needs it

        self.connection = sqlite3.connect(path, check_same_thread=False)
        self.agent = agent(
            Brain(1), with_middleware=False, checkpointer=SqliteSaver(self.connection)
        )

    def turn(self, thread_id: str = "bench") -> tuple[float, float]:
        """One turn: its wall-clock and its CPU seconds (the difference is mostly fsync)."""
        config = {"configurable": {"thread_id": thread_id}}
        wall, cpu = time.perf_counter(), time.process_time()
        self.agent.invoke({"messages": [{"role": "user", "content": PROMPT}]}, config)
        return time.perf_counter() - wall, time.process_time() - cpu

    def close(self) -> None:
        self.connection.close()
