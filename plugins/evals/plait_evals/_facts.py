"""What a case's run did — its tool calls in order, its model calls, its tokens — read
from the OpenTelemetry spans plait-otel emitted during the case (pydantic-evals gives
each case its span tree), or, when no span tree was recorded, from the metrics and
attributes the task set from the run's messages."""

from __future__ import annotations

from typing import Any

import attrs
from pydantic_evals.evaluators import EvaluatorContext
from pydantic_evals.otel import SpanNode, SpanTreeRecordingError

__all__ = ["RunFacts", "facts"]

TOOLS_ATTRIBUTE = "tool_calls"
"""The task's attribute: the names of the tools the run called, in order (the fallback)."""


@attrs.frozen
class RunFacts:
    tools: tuple[str, ...]
    model_calls: int
    input_tokens: int
    output_tokens: int
    source: str  # "spans" or "messages": where the facts were read


def _operation(name: str) -> Any:
    return lambda node: node.attributes.get("gen_ai.operation.name") == name


def _int(node: SpanNode, key: str) -> int:
    value = node.attributes.get(key, 0)
    return value if isinstance(value, int) else 0


def facts(ctx: EvaluatorContext[Any, Any, Any]) -> RunFacts:
    try:
        tree = ctx.span_tree
    except SpanTreeRecordingError:
        tree = None
    if tree is not None and tree.any(_operation("invoke_agent")):
        tools = sorted(tree.find(_operation("execute_tool")), key=lambda n: n.start_timestamp)
        chats = tree.find(_operation("chat"))
        return RunFacts(
            tools=tuple(str(n.attributes.get("gen_ai.tool.name")) for n in tools),
            model_calls=len(chats),
            input_tokens=sum(_int(n, "gen_ai.usage.input_tokens") for n in chats),
            output_tokens=sum(_int(n, "gen_ai.usage.output_tokens") for n in chats),
            source="spans",
        )
    metrics = ctx.metrics
    return RunFacts(
        tools=tuple(ctx.attributes.get(TOOLS_ATTRIBUTE, ())),
        model_calls=int(metrics.get("model_calls", 0)),
        input_tokens=int(metrics.get("input_tokens", 0)),
        output_tokens=int(metrics.get("output_tokens", 0)),
        source="messages",
    )
