"""An MCP server's tools as plait ``Tool`` objects, and one call of one of them."""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitRequest, ElicitResult, InputRequiredResult
from mcp.types import Tool as MCPTool

from plait.errors import ConfigError
from plait.interrupts import interrupt
from plait.messages import ToolMessage
from plait.options import expected
from plait.tools import Tool
from plait.types import ToolRuntime
from plait_mcp import _loop
from plait_mcp._connection import (
    CallTimeout,
    Connection,
    ConnectionLost,
    ServerUnavailable,
    describe,
)
from plait_mcp._results import error_message, to_message

__all__ = ["MAX_NAME_LENGTH", "make_tool"]

MAX_INPUT_ROUNDS = 8
"""Input-required rounds one call may take before it is answered with an error."""


MAX_NAME_LENGTH = 64
"""The longest tool name every provider accepts (OpenAI's and Anthropic's limit)."""
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")
"""A character outside the one set every provider accepts in a tool name."""


def local_name(server: str, prefix: str, remote: str) -> str:
    """The agent's name for the server's tool ``remote``: the prefix, then the name with
    each character providers refuse (a space, ``.``, ``/``...) made ``_``. A name that is
    empty or too long for providers is a ``ConfigError`` naming the server and the tool."""
    where = f"server {server!r}"
    if not remote:
        raise ConfigError(
            f"{where} lists a tool with an empty name, which no model can call; "
            "fix the server (a tool needs a name)"
        )
    name = prefix + _NOT_NAME.sub("_", remote)
    if len(name) > MAX_NAME_LENGTH:
        wanted = f"a name of at most {MAX_NAME_LENGTH} characters (what providers accept)"
        raise ConfigError(
            f"{where}: tool {remote[:80]!r}: {expected(wanted, name, f'it has {len(name)}')}; "
            "'exclude' the tool or shorten the 'tool_prefix'"
        )
    return name


def _parameters(server: str, listed: MCPTool) -> dict[str, Any]:
    """The tool's input schema, checked against the JSON Schema meta-schema: a schema a
    provider would refuse fails here, naming the server and the tool, not on every call."""
    schema = listed.input_schema
    where = f"server {server!r}: tool {listed.name!r}: input schema"
    wanted = "a JSON Schema of an object"
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ConfigError(f"{where}: {expected(wanted, schema)}; 'exclude' the tool")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "".join(f"[{p!r}]" for p in exc.absolute_path)
        detail = f"{path}: {exc.message}" if path else exc.message
        raise ConfigError(
            f"{where}: {expected(wanted, schema, detail)}; 'exclude' the tool"
        ) from None
    parameters = dict(schema)
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return parameters


def make_tool(connection: Connection, listed: MCPTool) -> Tool:
    """The plait tool calling ``listed`` over ``connection`` (named with the server's prefix)."""
    server = connection.config.name
    remote = listed.name
    name = local_name(server, connection.config.tool_prefix or "", remote)
    parameters = _parameters(server, listed)

    async def call(runtime: ToolRuntime, **arguments: Any) -> ToolMessage:
        return await call_tool(connection, remote, arguments, runtime)

    call.__name__ = call.__qualname__ = f"mcp_{server}_{name}"
    return Tool(
        name=name,
        description=listed.description or listed.title or "",
        parameters=parameters,
        func=call,
        runtime_parameter="runtime",
    )


async def call_tool(
    connection: Connection, tool: str, arguments: dict[str, Any], runtime: ToolRuntime
) -> ToolMessage:
    """Call ``tool`` until it answers: progress goes to the run's stream, each input the
    server asks for (elicitation) pauses the run with ``plait.interrupt``."""
    config = connection.config
    server = config.name
    writer = runtime.stream_writer
    call_id = runtime.tool_call_id

    async def progress(done: float, total: float | None, message: str | None) -> None:
        writer(
            {
                "type": "mcp_progress",
                "server": server,
                "tool": tool,
                "tool_call_id": call_id,
                "progress": done,
                "total": total,
                "message": message,
            }
        )

    responses: dict[str, Any] | None = None
    state: str | None = None
    for _ in range(MAX_INPUT_ROUNDS):
        try:
            result = await _loop.arun(
                functools.partial(
                    connection.call_tool,
                    tool,
                    arguments,
                    progress=progress,
                    input_responses=responses,
                    request_state=state,
                )
            )
        except CallTimeout:
            return error_message(
                runtime,
                f"MCP tool {tool!r} of server {server!r} did not answer within its timeout of "
                f"{config.timeout:g} s; the call was cancelled.",
                server=server,
                tool=tool,
            )
        except ConnectionLost as exc:
            return error_message(
                runtime,
                f"the session with MCP server {server!r} was lost during the call of {tool!r} "
                f"({exc}); the call may or may not have taken effect. The server is "
                "restarted for the next call.",
                server=server,
                tool=tool,
            )
        except ServerUnavailable as exc:
            return error_message(
                runtime,
                f"MCP server {server!r} cannot be reached: {exc}",
                server=server,
                tool=tool,
            )
        except MCPError as exc:
            return error_message(
                runtime,
                f"MCP server {server!r} refused the call of {tool!r}: {describe(exc)}",
                server=server,
                tool=tool,
            )
        if not isinstance(result, InputRequiredResult):
            return to_message(result, runtime, server=server, tool=tool)
        responses = {
            key: _ask(request, server=server, tool=tool)
            for key, request in (result.input_requests or {}).items()
        }
        state = result.request_state
    return error_message(
        runtime,
        f"MCP tool {tool!r} of server {server!r} asked for input more than "
        f"{MAX_INPUT_ROUNDS} times; the call was abandoned.",
        server=server,
        tool=tool,
    )


def _ask(request: Any, *, server: str, tool: str) -> Any:
    """One input the server needs, asked of the caller with ``plait.interrupt``."""
    if not isinstance(request, ElicitRequest):
        raise ServerUnavailable(
            f"it asked for {request.method!r}, which plait-mcp does not provide"
        )
    params = request.params
    value: dict[str, Any] = {
        "type": "mcp_elicitation",
        "server": server,
        "tool": tool,
        "message": params.message,
        "mode": getattr(params, "mode", "form"),
    }
    schema = getattr(params, "requested_schema", None)
    if schema is not None:
        value["schema"] = (
            schema.model_dump(by_alias=True, exclude_none=True)
            if hasattr(schema, "model_dump")
            else dict(schema)
        )
    url = getattr(params, "url", None)
    if url is not None:
        value["url"] = url
    return elicit_result(interrupt(value))


def elicit_result(answer: Any) -> ElicitResult:
    """The caller's answer as the server's ``ElicitResult``: a mapping with ``action``
    ("accept", "decline", "cancel") and ``content``; any other mapping is accepted content;
    ``None`` or the string "decline"/"cancel" declines/cancels."""
    if answer is None:
        return ElicitResult(action="decline")
    if answer == "decline" or answer == "cancel":
        return ElicitResult(action=answer)
    if isinstance(answer, dict):
        action = answer.get("action")
        if action == "accept" or action == "decline" or action == "cancel":
            return ElicitResult(action=action, content=answer.get("content"))
        return ElicitResult(action="accept", content=answer)
    wanted = (
        "a mapping of the requested fields, {'action': ..., 'content': ...}, 'decline', "
        "'cancel' or None"
    )
    raise ValueError(f"an answer to an MCP elicitation: {expected(wanted, answer)}")
