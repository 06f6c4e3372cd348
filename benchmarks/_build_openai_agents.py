"""OpenAI Agents' agent for ``construct_cost.py``: ``Agent`` on a ``Model`` answering what
the ``Brain`` decides, the tool, and the nearest it has to five middleware: lifecycle
hooks counting model and tool calls (the two limits), an input guardrail finding an
email, an output guardrail, and model settings asking for retries on the model side."""

from __future__ import annotations

import json
import re
from typing import Any

from _vs_common import Brain, lookup
from agents import (
    Agent,
    AgentHooks,
    GuardrailFunctionOutput,
    InputGuardrail,
    ModelSettings,
    OutputGuardrail,
    Usage,
    function_tool,
)
from agents.items import ModelResponse
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

WHAT = "Agent, hooks (2 limits) + input guardrail (email) + output guardrail + settings"

LIMIT = 10**9
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


class FakeModel(Model):
    """Answers what the ``Brain`` decides, reading nothing."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        text, calls = self.brain.reply()
        output: list[Any] = [
            ResponseFunctionToolCall(
                type="function_call", name=n, arguments=json.dumps(a), call_id=i
            )
            for n, a, i in calls
        ]
        if not calls:
            content = ResponseOutputText(type="output_text", text=text, annotations=[])
            output.append(
                ResponseOutputMessage(
                    id="msg",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[content],
                )
            )
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the benchmark does not stream")


class Limits(AgentHooks[Any]):
    """A model-call and a tool-call limit, as lifecycle hooks."""

    def __init__(self) -> None:
        self.model_calls = self.tool_calls = 0

    async def on_llm_start(self, *args: Any) -> None:
        self.model_calls += 1
        if self.model_calls > LIMIT:
            raise RuntimeError("model call limit reached")

    async def on_tool_start(self, *args: Any) -> None:
        self.tool_calls += 1
        if self.tool_calls > LIMIT:
            raise RuntimeError("tool call limit reached")


def no_email(context: Any, agent: Any, given: Any) -> GuardrailFunctionOutput:
    """Reports the emails in the input (a guardrail can stop a run, not rewrite its input)."""
    return GuardrailFunctionOutput(output_info=EMAIL.findall(str(given)), tripwire_triggered=False)


def answered(context: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=not output)


TOOL = function_tool(lookup)


def build() -> Any:
    return Agent(
        name="agent",
        model=FakeModel(Brain(1)),
        tools=[TOOL],
        hooks=Limits(),
        input_guardrails=[InputGuardrail(guardrail_function=no_email)],
        output_guardrails=[OutputGuardrail(guardrail_function=answered)],
        model_settings=ModelSettings(max_tokens=1000),
    )
