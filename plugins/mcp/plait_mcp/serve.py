"""``plait mcp-serve AGENT.toml``: an agent file's tools, and the agent itself as one tool,
served as an MCP server over stdio, so any MCP client can use a plait agent.

Each tool keeps its name, description and JSON schema. A client's call goes through the
agent's guards exactly as a model's call would (``agent.tool_session()``): the
``after_model`` hooks (``human_in_the_loop``, ``tool_call_limit``, pii), then the
``wrap_tool_call`` chain (retries, pii, guardrails). A server (one client over stdio) is
one thread and one run, so limits count every call of the client. A call a middleware
would pause for a human's answer (an approval) is refused with an error and not run:
mcp-serve has no human to ask. The agent's tool (named after the agent, ``--agent-tool``
to rename it) takes a ``prompt``, runs the agent on a new thread and answers with its
final text. stdout is the protocol's channel: nothing else is written there.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from mcp.types import Tool as MCPTool

from plait.agent import Agent, ServedCall, ToolSession
from plait.agentfile import load_agent
from plait.errors import PlaitError
from plait.messages import ToolMessage
from plait_mcp._deep import MAX_DEPTH, TOO_DEEP, guarded

__all__ = ["MAX_DEPTH", "build_server", "serve_file"]


_PROMPT_SCHEMA = {
    "type": "object",
    "properties": {"prompt": {"type": "string", "description": "What to ask the agent."}},
    "required": ["prompt"],
}


def _text(value: Any) -> str:
    if isinstance(value, ToolMessage):
        return value.text
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _answer(text: str, *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


async def _call(session: ToolSession, name: str, arguments: dict[str, Any]) -> CallToolResult:
    try:
        served = await session.acall(name, arguments)
    except PlaitError as exc:
        return _answer(f"tool {name!r} was stopped: {type(exc).__name__}: {exc}", error=True)
    return _served_answer(name, served)


def _served_answer(name: str, served: ServedCall) -> CallToolResult:
    if served.paused:
        return _answer(
            f"tool {name!r} was not run: the agent pauses this call for a human's answer "
            f"(an approval), which mcp-serve cannot ask for: {_text(served.interrupts[0].value)}",
            error=True,
        )
    message = served.message
    if message is None:  # pragma: no cover - a served call is always answered
        return _answer(f"tool {name!r} was not run", error=True)
    return _answer(message.text, error=message.status == "error")


async def _ask(agent: Agent, prompt: str) -> CallToolResult:
    try:
        result = await agent.ainvoke(prompt)
    except PlaitError as exc:
        return _answer(f"the agent failed: {type(exc).__name__}: {exc}", error=True)
    if result.interrupts:
        values = [i.value for i in result.interrupts]
        return _answer(
            f"the agent paused for input mcp-serve cannot give: {_text(values)}", error=True
        )
    return _answer(result.text)


def build_server(agent: Agent, *, agent_tool: str | None = None) -> Server[Any]:
    """An MCP server offering ``agent``'s tools (those it runs itself) and the agent."""
    tools = {t.name: t for t in agent.tools if t.func is not None}
    # One tool session per server: over stdio, a server serves one client for its whole
    # life, and every call it makes shares one thread and one run.
    session = agent.tool_session()
    own = agent_tool or agent.name
    if own in tools:
        raise PlaitError(
            f"the agent's tool would be named {own!r}, like one of its tools; "
            "choose another name with --agent-tool"
        )
    listed = [
        MCPTool(name=t.name, description=t.description, input_schema=t.parameters)
        for t in tools.values()
    ]
    listed.append(
        MCPTool(
            name=own,
            description=f"Ask the {agent.name!r} agent; it answers with its final text.",
            input_schema=_PROMPT_SCHEMA,
        )
    )

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        if params.name == TOO_DEEP:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"the request nests deeper than {MAX_DEPTH} levels, more than "
                "plait mcp-serve accepts; nothing was run",
            )
        arguments = dict(params.arguments or {})
        if params.name == own:
            prompt = arguments.get("prompt")
            if not isinstance(prompt, str):
                return _answer("the agent's tool needs a 'prompt' string", error=True)
            return await _ask(agent, prompt)
        if params.name not in tools:
            return _answer(f"there is no tool named {params.name!r}", error=True)
        return await _call(session, params.name, arguments)

    return Server(agent.name, on_list_tools=list_tools, on_call_tool=call_tool)


def serve_file(path: str, *, model: str | None, agent_tool: str | None, err: IO[str]) -> int:
    """Serve the agent file at ``path`` over stdio until the client hangs up."""
    try:
        agent = load_agent(path, model=model)
        server = build_server(agent, agent_tool=agent_tool)
    except PlaitError as exc:
        err.write(f"plait mcp-serve: error: {exc}\n")
        return 1

    async def serve() -> None:
        sys.stdin.reconfigure(encoding="utf-8", errors="replace")  # type: ignore[union-attr]
        lines = guarded(anyio.wrap_file(sys.stdin))
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        agent.close()
    return 0
