"""``MCPMiddleware`` (entry point ``mcp``): the tools of Model Context Protocol servers as
the agent's tools.

``create_agent`` starts (or connects to) every server, lists its tools and adds them to the
agent; from then on each server has one session per agent, owned by one task on a
dedicated event-loop thread, shared by every call from every thread and event loop,
restarted when it drops and closed by ``close()`` (``agent.close()``) or at interpreter
exit.
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

from plait.errors import ConfigError
from plait.lazy import frozen
from plait.middleware import Middleware
from plait.options import FieldError, expected
from plait.tools import Tool
from plait.types import AgentConfig
from plait_mcp import _loop
from plait_mcp._connection import Connection, ServerUnavailable
from plait_mcp._server_config import ServerConfig
from plait_mcp._tools import make_tool

__all__ = ["MCPMiddleware"]


def _servers(_: Any, attribute: attrs.Attribute[Any], value: list[ServerConfig]) -> None:
    if not value:
        raise FieldError(attribute.name, expected("a non-empty list of servers", value))
    names = [server.name for server in value]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"server names must be unique; repeated: {', '.join(repeated)}")


@frozen(kw_only=True)
class MCPMiddleware(Middleware):
    """Adds the tools of the ``servers`` to the agent (see the module docstring)."""

    servers: list[ServerConfig] = attrs.field(validator=_servers)
    """The servers: each a table with ``name`` and either ``command``/``args``/``env``/``cwd``
    (stdio) or ``url``/``headers`` (streamable HTTP), plus ``tool_prefix``, ``include``,
    ``exclude``, ``timeout`` and ``connect_timeout``."""

    _connections: list[Connection] = attrs.field(init=False, factory=list, eq=False, repr=False)

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        if _loop.on_loop():
            raise ConfigError("an agent cannot be created on the MCP loop's thread")
        connections = [Connection(server) for server in self.servers]
        listed = _loop.run(_list_all(connections))
        failures = [
            (conn, result)
            for conn, result in zip(connections, listed, strict=True)
            if isinstance(result, BaseException)
        ]
        if failures:
            for conn in connections:
                conn.close()
            raise ConfigError(
                "; ".join(
                    f"MCP server {conn.config.name!r} ({conn.config.transport}) cannot be used: "
                    f"{error}"
                    for conn, error in failures
                )
            )
        try:
            tools = self._tools(connections, listed, agent_config)
        except BaseException:
            for conn in connections:
                conn.close()
            raise
        self._connections.extend(connections)
        return tools

    def _tools(
        self, connections: list[Connection], listed: list[Any], agent_config: AgentConfig
    ) -> list[Tool]:
        own = {tool.name for tool in agent_config.tools}
        owner: dict[str, str] = {}
        remote: dict[str, str] = {}
        tools: list[Tool] = []
        for conn, server_tools in zip(connections, listed, strict=True):
            config = conn.config
            names = [t.name for t in server_tools]
            missing = [n for n in (config.include or []) + config.exclude if n not in names]
            if missing:
                raise ConfigError(
                    f"server {config.name!r} has no tool "
                    f"{', '.join(map(repr, missing))} (named in include/exclude); "
                    f"its tools are: {', '.join(names) or 'none'}"
                )
            for listed_tool in server_tools:
                if not config.wants(listed_tool.name):
                    continue
                tool = make_tool(conn, listed_tool)
                if owner.get(tool.name) == config.name:
                    raise ConfigError(
                        f"server {config.name!r} has tools "
                        f"{remote[tool.name]!r} and {listed_tool.name!r}, both named "
                        f"{tool.name!r} once the characters providers refuse are made '_'; "
                        "'exclude' one of them"
                    )
                if tool.name in owner:
                    raise ConfigError(
                        f"servers {owner[tool.name]!r} and {config.name!r} both "
                        f"have a tool named {tool.name!r}; give one of them a 'tool_prefix' "
                        "or 'exclude' the tool"
                    )
                if tool.name in own:
                    raise ConfigError(
                        f"server {config.name!r} has a tool named {tool.name!r}, "
                        "like one of the agent's own tools; give the server a 'tool_prefix' "
                        "or 'exclude' the tool"
                    )
                owner[tool.name] = config.name
                remote[tool.name] = listed_tool.name
                tools.append(tool)
        return tools

    def close(self) -> None:
        """Close every session this middleware opened (each server's process exits)."""
        connections, self._connections[:] = list(self._connections), []
        for conn in connections:
            conn.close()

    async def aclose(self) -> None:
        connections, self._connections[:] = list(self._connections), []
        await _loop.arun(lambda: _close_all(connections))


async def _list_all(connections: list[Connection]) -> list[Any]:
    async def one(conn: Connection) -> Any:
        try:
            return await conn.list_tools()
        except ServerUnavailable as exc:
            return exc

    return list(await asyncio.gather(*(one(conn) for conn in connections)))


async def _close_all(connections: list[Connection]) -> None:
    await asyncio.gather(*(conn.aclose() for conn in connections), return_exceptions=True)
