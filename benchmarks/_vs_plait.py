"""plait's side of ``vs_langchain.py``: the fake model, the tool, and each scenario."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from _vs_common import PROMPT, TOOL_NAME, Brain, lookup

import plait
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from plait.models import ChatModel

IMPORT = "import plait; plait.create_agent"
MIDDLEWARE: list[Any] = [
    ("model_call_limit", {"run_limit": 10**9}),
    ("tool_call_limit", {"run_limit": 10**9}),
    "model_retry",
    "tool_retry",
    ("pii", {"pii_type": "email", "strategy": "redact"}),
]


class FakeModel(ChatModel):
    """Answers what the ``Brain`` decides, reading nothing (as LangChain's fake does)."""

    provider = "fake"

    def __init__(self, brain: Brain) -> None:
        self.brain = brain

    def invoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        text, calls = self.brain.reply()
        return AIMessage(text, tool_calls=[ToolCall(n, a, i) for n, a, i in calls])


TOOL = plait.tool(lookup)
assert TOOL.name == TOOL_NAME


def agent(brain: Brain, *, middleware: bool, checkpointer: Any = None) -> plait.Agent:
    return plait.create_agent(
        FakeModel(brain),
        tools=[TOOL],
        middleware=MIDDLEWARE if middleware else [],
        checkpointer=checkpointer,
    )


def bare_objects_run(steps: int) -> float:
    """A floor that keeps what any agent must: the fake model's ``AIMessage``s, checked
    tool arguments and ``ToolMessage``s, in a plain list (no hooks, no state, no loop)."""
    model = FakeModel(Brain(steps))
    start = time.perf_counter()
    messages: list[Any] = [HumanMessage(PROMPT)]
    while True:
        answer = model.invoke(messages)
        messages.append(answer)
        if not answer.tool_calls:
            return time.perf_counter() - start
        for call in answer.tool_calls:
            result = lookup(**TOOL.prepare(call.args, None))
            messages.append(ToolMessage(result, tool_call_id=call.id, name=call.name))


def run_steps(steps: int, *, middleware: bool) -> tuple[float, int]:
    """Seconds for one run of ``steps`` tool-calling steps, and its message count."""
    built = agent(Brain(steps), middleware=middleware)
    start = time.perf_counter()
    result = built.invoke(PROMPT, recursion_limit=steps + 1)
    return time.perf_counter() - start, len(result.messages)


class Thread:
    """One SQLite thread, one turn (user message, one tool call, answer) at a time."""

    def __init__(self, path: str) -> None:
        self.agent = agent(Brain(1), middleware=False, checkpointer=f"sqlite:///{path}")

    def turn(self, thread_id: str = "bench") -> tuple[float, float]:
        """One turn: its wall-clock and its CPU seconds (the difference is mostly fsync)."""
        wall, cpu = time.perf_counter(), time.process_time()
        self.agent.invoke(PROMPT, thread_id=thread_id)
        return time.perf_counter() - wall, time.process_time() - cpu

    def close(self) -> None:
        close = getattr(self.agent.checkpointer, "close", None)
        if close is not None:
            close()
