"""pydantic-ai's agent for ``construct_cost.py``: ``Agent`` on a ``FunctionModel`` answering
what the ``Brain`` decides, the tool, and five capabilities (pydantic-ai's middleware)
doing what plait's five do: a model-call limit, a tool-call limit, a model retry, a tool
retry, email redaction before each model request."""

from __future__ import annotations

import re
from typing import Any

from _vs_common import Brain, lookup
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

WHAT = "Agent, 5 capabilities (Hooks: 2 limits, 2 retry wrappers, email redaction)"

LIMIT = 10**9
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


def fake(brain: Brain) -> FunctionModel:
    def answer(messages: Any, info: Any) -> ModelResponse:
        text, calls = brain.reply()
        if not calls:
            return ModelResponse(parts=[TextPart(text)])
        return ModelResponse(parts=[ToolCallPart(n, a, i) for n, a, i in calls])

    return FunctionModel(answer)


async def count_model_calls(ctx: Any, request_context: Any) -> Any:
    if ctx.usage.requests > LIMIT:
        raise RuntimeError("model call limit reached")
    return request_context


async def count_tool_calls(ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
    if ctx.usage.tool_calls > LIMIT:
        raise ModelRetry("tool call limit reached")
    return args


async def retry_model(ctx: Any, *, request_context: Any, handler: Any) -> Any:
    for attempt in range(3):
        try:
            return await handler(request_context)
        except Exception:
            if attempt == 2:
                raise
    raise AssertionError


async def retry_tool(ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
    for attempt in range(3):
        try:
            return await handler(args)
        except Exception:
            if attempt == 2:
                raise
    raise AssertionError


async def redact(ctx: Any, request_context: Any) -> Any:
    for message in request_context.messages:
        for part in getattr(message, "parts", ()):
            if isinstance(getattr(part, "content", None), str):
                part.content = EMAIL.sub("[REDACTED_EMAIL]", part.content)
    return request_context


def build() -> Any:
    return Agent(
        fake(Brain(1)),
        tools=[lookup],
        capabilities=[
            Hooks(before_model_request=count_model_calls),
            Hooks(before_tool_execute=count_tool_calls),
            Hooks(model_request=retry_model),
            Hooks(tool_execute=retry_tool),
            Hooks(before_model_request=redact),
        ],
    )
