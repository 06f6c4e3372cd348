"""The tools a case's run called, in order, read from the ``execute_tool`` spans
plait-otel emitted during the case (pydantic-evals gives each case its span tree), or,
when no span tree was recorded, from the attribute the task set from the run's
messages. (Tokens and cost come from the run's ``Usage``, which also counts estimates
for models that report none: see ``MaxTokens``.)"""

from __future__ import annotations

from typing import Any

from pydantic_evals.evaluators import EvaluatorContext
from pydantic_evals.otel import SpanTreeRecordingError

from plait.lazy import frozen

__all__ = ["RunFacts", "facts"]

TOOLS_ATTRIBUTE = "tool_calls"
"""The task's attribute: the names of the tools the run called, in order (the fallback)."""


@frozen
class RunFacts:
    tools: tuple[str, ...]
    source: str  # "spans" or "messages": where the facts were read


def _operation(name: str) -> Any:
    return lambda node: node.attributes.get("gen_ai.operation.name") == name


def facts(ctx: EvaluatorContext[Any, Any, Any]) -> RunFacts:
    try:
        tree = ctx.span_tree
    except SpanTreeRecordingError:
        tree = None
    if tree is not None and tree.any(_operation("invoke_agent")):
        tools = sorted(tree.find(_operation("execute_tool")), key=lambda n: n.start_timestamp)
        return RunFacts(tuple(str(n.attributes.get("gen_ai.tool.name")) for n in tools), "spans")
    return RunFacts(tuple(ctx.attributes.get(TOOLS_ATTRIBUTE, ())), "messages")
