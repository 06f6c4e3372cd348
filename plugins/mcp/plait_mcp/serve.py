"""``plait mcp-serve AGENT.toml``: an agent file's tools, and the agent itself as one tool,
served as an MCP server over stdio, so any MCP client can use a plait agent.

Each tool keeps its name, description and JSON schema; its arguments are checked as the
agent checks a model's. The agent's tool (named after the agent, ``--agent-tool`` to
rename it) takes a ``prompt``, runs the agent on a new thread and answers with its final
text. stdout is the protocol's channel: nothing else is written there.
"""

from __future__ import annotations

import json
from typing import IO, Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from mcp.types import Tool as MCPTool

from plait.agent import Agent
from plait.agentfile import load_agent
from plait.errors import PlaitError
from plait.messages import ToolMessage
from plait.tools import Tool, ToolArgumentError

__all__ = ["build_server", "serve_file"]

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


async def _call(tool: Tool, arguments: dict[str, Any]) -> CallToolResult:
    try:
        kwargs = tool.prepare(arguments, None)
    except ToolArgumentError as exc:
        return _answer(f"invalid arguments for tool {tool.name!r}: {exc}", error=True)
    assert tool.func is not None
    try:
        if tool.is_async:
            result = await tool.func(**kwargs)
        else:
            result = await anyio.to_thread.run_sync(lambda: tool.func(**kwargs))  # type: ignore[misc]
    except Exception as exc:
        return _answer(f"tool {tool.name!r} raised {type(exc).__name__}: {exc}", error=True)
    return _answer(_text(result))


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
        arguments = dict(params.arguments or {})
        if params.name == own:
            prompt = arguments.get("prompt")
            if not isinstance(prompt, str):
                return _answer("the agent's tool needs a 'prompt' string", error=True)
            return await _ask(agent, prompt)
        tool = tools.get(params.name)
        if tool is None:
            return _answer(f"there is no tool named {params.name!r}", error=True)
        return await _call(tool, arguments)

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
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        agent.close()
    return 0
