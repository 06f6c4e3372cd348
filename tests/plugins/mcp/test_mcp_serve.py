"""``plait mcp-serve``: an agent file served over MCP (stdio), used by the SDK's client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

HELLO = Path(__file__).resolve().parents[3] / "examples" / "hello.toml"


def serve(*args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "plait.cli", "mcp-serve", *args]
    )


async def session(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    async with Client(params, cache=None) as client:
        listed = (await client.list_tools()).tools
        results = [await client.call_tool(name, args) for name, args in calls]
        return listed, results


def test_an_agent_files_tools_and_the_agent_itself_are_mcp_tools() -> None:
    listed, results = asyncio.run(
        session(
            serve(str(HELLO)),
            [
                ("get_weather", {"city": "London"}),
                ("get_weather", {"town": "London"}),
                ("agent", {"prompt": "What's the weather in Paris?"}),
            ],
        )
    )
    tools = {t.name: t for t in listed}
    assert set(tools) == {"get_weather", "agent"}
    assert tools["get_weather"].description.startswith("Get today's weather for a city.")
    assert tools["get_weather"].input_schema["required"] == ["city"]
    assert tools["agent"].input_schema["required"] == ["prompt"]
    weather, bad, asked = results
    assert (weather.is_error, weather.content[0].text) == (False, "London: light rain, 14 °C")
    assert bad.is_error
    assert "invalid arguments for tool 'get_weather'" in bad.content[0].text
    assert (asked.is_error, asked.content[0].text) == (
        False,
        "In Paris today it is sunny, 21 °C. Enjoy your day!",
    )


def test_the_agent_tool_can_be_renamed() -> None:
    listed, _ = asyncio.run(session(serve(str(HELLO), "--agent-tool", "weather_agent"), []))
    assert {t.name for t in listed} == {"get_weather", "weather_agent"}


def test_a_bad_agent_file_fails_with_a_message_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[agent]\nmodel = "scripted:x"\n[[middleware]]\nuse = "nope"\n')
    done = subprocess.run(
        [sys.executable, "-m", "plait.cli", "mcp-serve", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("plait mcp-serve: error: ")
    assert "nope" in done.stderr


def nested(depth: int) -> Any:
    value: Any = "London"
    for _ in range(depth):
        value = {"a": value}
    return value


async def deep_then_plain(depth: int) -> tuple[str, Any]:
    async with Client(serve(str(HELLO)), cache=None) as client:
        try:
            await client.call_tool("get_weather", {"city": nested(depth)})
        except MCPError as exc:
            refused = exc.error.message
        else:  # pragma: no cover - the assertion below says what happened
            refused = "answered"
        return refused, await client.call_tool("get_weather", {"city": "London"})


def test_a_request_nested_too_deep_is_answered_with_an_error() -> None:
    refused, plain = asyncio.run(asyncio.wait_for(deep_then_plain(250), 60))
    assert refused == (
        "the request nests deeper than 128 levels, more than plait mcp-serve accepts; "
        "nothing was run"
    )
    assert plain.content[0].text == "London: light rain, 14 °C"  # and the server goes on


def test_a_request_too_deep_for_json_itself_is_answered_too() -> None:
    start = {"protocolVersion": "2025-06-18", "capabilities": {}}
    start["clientInfo"] = {"name": "t", "version": "1"}
    deep = '{"a": ' * 5000 + '"x"' + "}" * 5000
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": start}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "method": "notifications/x", "params": {"v": ' + deep + "}}",
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
        f'"get_weather", "arguments": {{"city": {deep}}}}}}}',
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "plait.cli", "mcp-serve", str(HELLO)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    killer = threading.Timer(60, server.kill)  # a server that never answers fails, not hangs
    killer.start()
    try:
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        # Like a real client, stdin stays open until the answers are in: the SDK cancels
        # the requests still in flight when its client hangs up.
        answers = [json.loads(server.stdout.readline() or "null") for _ in range(2)]
        server.stdin.close()
        rest = server.stdout.read()
        assert server.wait() == 0
    finally:
        killer.cancel()
        server.kill()
    # The notification as deep came first and is dropped: nothing answers it.
    assert [a["id"] for a in answers] == [1, 7]
    assert rest == ""
    assert answers[1]["error"]["code"] == -32602
    assert answers[1]["error"]["message"].startswith("the request nests deeper than 128")


def test_a_line_too_deep_for_json_and_not_json_leaves_the_server_serving() -> None:
    """``"[" * 5000`` is too deep for ``json`` and, once cut to 128 levels, still not
    JSON: the server died on it (exit 1) and the requests after it got no answer."""
    start = {"protocolVersion": "2025-06-18", "capabilities": {}}
    start["clientInfo"] = {"name": "t", "version": "1"}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": start}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "[" * 5000,
        '{"a": ' * 5000,
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "plait.cli", "mcp-serve", str(HELLO)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    killer = threading.Timer(60, server.kill)
    killer.start()
    try:
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        answers = []
        while len(answers) < 2 or answers[-1].get("id") != 2:
            line = server.stdout.readline()
            assert line, f"the server stopped answering after {answers}"
            answers.append(json.loads(line))
        server.stdin.close()
        server.stdout.read()
        assert server.wait() == 0
    finally:
        killer.cancel()
        server.kill()
    assert answers[0]["id"] == 1
    assert "get_weather" in [tool["name"] for tool in answers[-1]["result"]["tools"]]
