"""A LangChain ``BaseTool`` as a plait ``Tool``: ``tool(lc_tool)``, and the
``plait.tool_adapters`` entry point through which ``create_agent(tools=[lc_tool])`` takes
one as it is.

The tool keeps its name, description and argument schema (LangChain's own, as it sends it
to a model). A call runs through LangChain (``invoke``, or ``ainvoke`` for a tool with a
coroutine) with the call's id, so LangChain shapes the answer: its ``ToolMessage`` content,
status and artifact (kept in the message's ``metadata["langchain"]["artifact"]``). A
``ToolException`` the tool does not handle itself, and arguments its schema refuses, become
an error message the model can read, as a plait tool's would.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from langchain_core import messages as lc
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool

from plait.errors import ConfigError
from plait.messages import ToolMessage
from plait.options import expected, pydantic_problems
from plait.tools import Tool, ToolArgumentError, ToolRuntime

__all__ = ["adapt", "tool"]


def tool(lc_tool: BaseTool, *, timeout: float | None = None) -> Tool:
    """A plait ``Tool`` running the LangChain tool ``lc_tool``."""
    if not isinstance(lc_tool, BaseTool):
        raise ConfigError(f"plait_langchain.tool: {expected('a LangChain BaseTool', lc_tool)}")
    spec = convert_to_openai_tool(lc_tool)["function"]
    parameters = spec.get("parameters") or {"type": "object", "properties": {}}
    if _is_async(lc_tool):

        async def arun(runtime: ToolRuntime, **args: Any) -> ToolMessage:
            try:
                answer = await lc_tool.ainvoke(_call(lc_tool, runtime, args))
            except Exception as error:
                return _failed(lc_tool, runtime, error)
            return _answer(lc_tool, runtime, answer)

        func: Callable[..., Any] = arun
    else:

        def run(runtime: ToolRuntime, **args: Any) -> ToolMessage:
            try:
                answer = lc_tool.invoke(_call(lc_tool, runtime, args))
            except Exception as error:
                return _failed(lc_tool, runtime, error)
            return _answer(lc_tool, runtime, answer)

        func = run
    return Tool(
        name=lc_tool.name,
        description=spec.get("description") or lc_tool.description or "",
        parameters=parameters,
        func=func,
        timeout=timeout,
        runtime_parameter="runtime",
    )


def adapt(value: Any) -> Tool | None:
    """The ``plait.tool_adapters`` entry point: a plait ``Tool`` for a LangChain tool,
    ``None`` for anything else."""
    return tool(value) if isinstance(value, BaseTool) else None


def _is_async(lc_tool: BaseTool) -> bool:
    """Whether the tool has its own async implementation (a coroutine, or ``_arun``
    overridden); a sync-only tool runs in plait's worker thread instead."""
    if getattr(lc_tool, "coroutine", None) is not None:
        return True
    return type(lc_tool)._arun is not BaseTool._arun and getattr(lc_tool, "func", None) is None


def _call(lc_tool: BaseTool, runtime: ToolRuntime, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "name": lc_tool.name, "args": args, "id": runtime.tool_call_id}


def _answer(lc_tool: BaseTool, runtime: ToolRuntime, answer: Any) -> ToolMessage:
    metadata: dict[str, Any] = {}
    if isinstance(answer, lc.ToolMessage):
        if answer.artifact is not None:
            metadata = {"langchain": {"artifact": answer.artifact}}
        content: Any = answer.content
        status = answer.status
    else:
        content, status = answer, "success"
    if not isinstance(content, str | list):
        content = str(content)
    return ToolMessage(
        content,
        tool_call_id=runtime.tool_call_id,
        name=lc_tool.name,
        status=status,
        metadata=metadata,
    )


def _failed(lc_tool: BaseTool, runtime: ToolRuntime, error: Exception) -> ToolMessage:
    """A tool's failure as the model reads a plait tool's."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(error, pydantic.ValidationError):
        problems = ToolArgumentError(lc_tool.name, pydantic_problems(None, error.errors()))
        text = f"invalid arguments for tool {lc_tool.name!r}: {problems}. "
        text += "Call it again with corrected arguments."
    elif isinstance(error, ToolException):
        text = str(error) or type(error).__name__
    else:
        raise error
    return ToolMessage(
        f"Error: {text}", tool_call_id=runtime.tool_call_id, name=lc_tool.name, status="error"
    )
