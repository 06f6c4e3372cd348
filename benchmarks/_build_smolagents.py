"""smolagents' agent for ``construct_cost.py``: ``ToolCallingAgent`` on a ``Model``
answering what the ``Brain`` decides, the tool, and the nearest it has to middleware:
step callbacks (the two limits, email redaction in the step's memory) and a final
answer check, with ``max_steps``."""

from __future__ import annotations

import re
from typing import Any

from _vs_common import Brain, lookup
from smolagents import ToolCallingAgent, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, Model

WHAT = "ToolCallingAgent, 3 step callbacks (2 limits, email redaction) + final-answer check"

LIMIT = 10**9
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


class FakeModel(Model):
    """Answers what the ``Brain`` decides, reading nothing; its final answer is a call of
    smolagents' ``final_answer`` tool, as a tool-calling model's is."""

    def __init__(self, brain: Brain) -> None:
        super().__init__(model_id="fake")
        self.brain = brain

    def generate(self, messages: Any, **kwargs: Any) -> ChatMessage:
        text, calls = self.brain.reply()
        if not calls:
            calls = [("final_answer", {"answer": text}, "final")]
        return ChatMessage(
            role="assistant",  # type: ignore[arg-type]
            content="",
            tool_calls=[
                ChatMessageToolCall(
                    id=i, type="function", function=ChatMessageToolCallFunction(name=n, arguments=a)
                )
                for n, a, i in calls
            ],
        )


def model_call_limit(step: Any, agent: Any) -> None:
    if getattr(step, "step_number", 0) > LIMIT:
        agent.interrupt()


def tool_call_limit(step: Any, agent: Any) -> None:
    if len(getattr(step, "tool_calls", None) or ()) > LIMIT:
        agent.interrupt()


def redact(step: Any, agent: Any) -> None:
    observations = getattr(step, "observations", None)
    if isinstance(observations, str):
        step.observations = EMAIL.sub("[REDACTED_EMAIL]", observations)


def answered(answer: Any, memory: Any, agent: Any = None) -> bool:
    return bool(answer)


TOOL = tool(lookup)


def build() -> Any:
    return ToolCallingAgent(
        tools=[TOOL],
        model=FakeModel(Brain(1)),
        step_callbacks=[model_call_limit, tool_call_limit, redact],
        final_answer_checks=[answered],
        max_steps=20,
        verbosity_level=-1,  # LogLevel.OFF: the benchmark prints its own table
    )
