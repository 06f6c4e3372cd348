"""What an MCP server lists is checked at ``create_agent``: tool names providers refuse
and input schemas that are not JSON Schema are errors naming the server and the tool (or,
for characters, made ``_``), and a build that fails for any reason stops the servers."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import scripted

ODD = str(Path(__file__).with_name("odd_server.py"))
OK_SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def odd(tmp_path: Path, *tools: tuple[str, Any]) -> dict[str, Any]:
    env = {
        "ODD_TOOLS": json.dumps([{"name": n, "inputSchema": s} for n, s in tools]),
        "ODD_PID": str(tmp_path / "pid"),
    }
    return {"name": "odd", "command": sys.executable, "args": [ODD], "env": env}


def gone(tmp_path: Path) -> bool:
    """Whether the server process the test started has exited."""
    pid = int((tmp_path / "pid").read_text())
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def build(server: dict[str, Any], *middleware: Any, **kw: Any) -> plait.Agent:
    return plait.create_agent(
        scripted("ok"), middleware=[("mcp", {"servers": [server]}), *middleware], **kw
    )


def test_an_empty_tool_name_is_a_config_error_and_the_server_stops(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        build(odd(tmp_path, ("", OK_SCHEMA)))
    assert str(err.value) == (
        "plugin 'mcp': server 'odd' lists a tool with an empty name, which no model can call; "
        "fix the server (a tool needs a name)"
    )
    assert gone(tmp_path)


def test_a_schema_that_is_not_json_schema_names_the_server_and_tool(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "text"}}}
    with pytest.raises(ConfigError) as err:
        build(odd(tmp_path, ("search", schema)))
    text = str(err.value)
    assert text.startswith(
        "plugin 'mcp': server 'odd': tool 'search': input schema: expected a JSON Schema of "
        "an object, got {"
    )
    assert text.endswith(
        "} (['properties']['q']['type']: 'text' is not valid under any of the given "
        "schemas); 'exclude' the tool"
    )
    assert gone(tmp_path)


def test_a_tools_list_that_is_not_mcp_is_one_line_naming_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        build(odd(tmp_path, ("search", {"type": "object", "properties": "x"})))
    assert str(err.value) == (
        "plugin 'mcp': MCP server 'odd' (stdio) cannot be used: listing its tools failed: "
        "ValidationError: ListToolsResult is not valid MCP: tools.0.inputSchema.properties: "
        "Input should be a valid dictionary, got 'x'"
    )
    assert gone(tmp_path)


def test_characters_providers_refuse_become_underscores(tmp_path: Path) -> None:
    server = odd(tmp_path, ("find files", OK_SCHEMA), ("repo/search.code", OK_SCHEMA))
    with build(server) as agent:
        assert [t.name for t in agent.tools] == ["find_files", "repo_search_code"]
        served = asyncio.run(agent.tool_session().acall("repo_search_code", {"q": "x"}))
    assert served.message is not None
    assert served.message.text == "called repo/search.code"  # called by its own name


def test_a_name_too_long_for_providers_is_refused(tmp_path: Path) -> None:
    long = "t" * 300
    with pytest.raises(ConfigError) as err:
        build(odd(tmp_path, (long, OK_SCHEMA)))
    text = str(err.value)
    assert text.startswith(f"plugin 'mcp': server 'odd': tool {'t' * 80!r}: expected a name of")
    assert "at most 64 characters (what providers accept)" in text
    assert text.endswith("(it has 300); 'exclude' the tool or shorten the 'tool_prefix'")
    assert gone(tmp_path)


def test_two_tools_one_name_after_underscores_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"server 'odd' has tools 'a\.b' and 'a/b', both named"):
        build(odd(tmp_path, ("a.b", OK_SCHEMA), ("a/b", OK_SCHEMA)))
    assert gone(tmp_path)


def test_a_clash_with_todo_lists_tool_stops_the_server(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="two tools are named 'write_todos'"):
        build(odd(tmp_path, ("write_todos", OK_SCHEMA)), "todo_list")
    assert gone(tmp_path)


def test_an_unknown_tool_in_human_in_the_loop_stops_the_server(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nope"):
        build(
            odd(tmp_path, ("search", OK_SCHEMA)),
            ("human_in_the_loop", {"interrupt_on": {"nope": True}}),
            checkpointer="memory",
        )
    assert gone(tmp_path)


def test_a_sub_agents_servers_stop_with_the_main_agent(tmp_path: Path) -> None:
    """A sub-agent's own ``mcp`` starts its servers when ``subagents`` builds it: they
    outlived the main agent's failed build and its ``close()``/``aclose()`` (nothing
    closed the sub-agents), and a later sub-agent failing to build left the earlier
    ones' running."""
    from plait_subagents import SubAgent

    def finder(tag: str, **extra: Any) -> SubAgent:
        server = odd(tmp_path / tag, ("search", OK_SCHEMA))
        return SubAgent(
            name=f"finder_{tag}",
            description="Finds.",
            system_prompt="Find.",
            tools=[],
            middleware=[("mcp", {"servers": [server]})],
            **extra,
        )

    for tag in ("failed", "closed", "aclosed", "later"):
        (tmp_path / tag).mkdir()
    with pytest.raises(ConfigError, match="nope"):
        plait.create_agent(
            scripted("ok"),
            middleware=[
                ("subagents", {"subagents": [finder("failed")]}),
                ("human_in_the_loop", {"interrupt_on": {"nope": True}}),
            ],
            checkpointer="memory",
        )
    assert gone(tmp_path / "failed")
    agent = plait.create_agent(
        scripted("ok"), middleware=[("subagents", {"subagents": [finder("closed")]})]
    )
    agent.close()
    assert gone(tmp_path / "closed")
    agent = plait.create_agent(
        scripted("ok"), middleware=[("subagents", {"subagents": [finder("aclosed")]})]
    )
    asyncio.run(agent.aclose())
    assert gone(tmp_path / "aclosed")
    broken = SubAgent(name="broken", description="B.", system_prompt="B.", tools=["no_such_tool"])
    with pytest.raises(ConfigError, match="no_such_tool"):
        plait.create_agent(
            scripted("ok"), middleware=[("subagents", {"subagents": [finder("later"), broken]})]
        )
    assert gone(tmp_path / "later")
