"""Google ADK's agent for ``construct_cost.py``: ``LlmAgent`` on a ``BaseLlm`` answering
what the ``Brain`` decides, the tool, and its five callbacks standing for the five
middleware: before-model (model-call limit and email redaction), after-model,
before-tool (tool-call limit), after-tool, on-tool-error (a tool retry's give-up)."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any

from _vs_common import Brain, lookup
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types

WHAT = "LlmAgent, 5 callbacks (before/after model, before/after tool, tool error)"

LIMIT = 10**9
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


class FakeLlm(BaseLlm):
    """Answers what the ``Brain`` decides, reading nothing."""

    brain: Any = None

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        text, calls = self.brain.reply()
        parts = [
            types.Part(function_call=types.FunctionCall(id=i, name=n, args=a)) for n, a, i in calls
        ]
        if not calls:
            parts = [types.Part(text=text)]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def before_model(callback_context: Any, llm_request: Any) -> None:
    calls = callback_context.state.get("model_calls", 0) + 1
    callback_context.state["model_calls"] = calls
    if calls > LIMIT:
        raise RuntimeError("model call limit reached")
    for content in llm_request.contents:
        for part in content.parts or ():
            if part.text:
                part.text = EMAIL.sub("[REDACTED_EMAIL]", part.text)


def after_model(callback_context: Any, llm_response: Any) -> None:
    return None


def before_tool(tool: Any, args: Any, tool_context: Any) -> None:
    calls = tool_context.state.get("tool_calls", 0) + 1
    tool_context.state["tool_calls"] = calls
    if calls > LIMIT:
        return {"error": "tool call limit reached"}  # type: ignore[return-value]
    return None


def after_tool(tool: Any, args: Any, tool_context: Any, tool_response: Any) -> None:
    return None


def tool_error(tool: Any, args: Any, tool_context: Any, error: Exception) -> dict[str, str]:
    return {"error": f"{type(error).__name__}: {error}"}


def build() -> Any:
    return LlmAgent(
        name="agent",
        model=FakeLlm(model="fake", brain=Brain(1)),
        tools=[lookup],
        before_model_callback=before_model,
        after_model_callback=after_model,
        before_tool_callback=before_tool,
        after_tool_callback=after_tool,
        on_tool_error_callback=tool_error,
    )
