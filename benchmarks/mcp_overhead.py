"""MCP overhead: what one tool call costs when the tool lives in an MCP server.

A step is one scripted model call plus one call of an ``echo`` tool. The same agent loop
runs the tool as a plain Python function (the baseline, measured in this run) and as
the same function served by an MCP server (the SDK's ``MCPServer``, this file run with
``--serve``) over stdio and over streamable HTTP on loopback. Prints the cost per step of
each, the MCP cost as a ratio to the direct call and the added time per call, beside the
cost of a bare SDK ``call_tool`` to the same server (so what plait adds on top of the
protocol shows), for the sync path (``invoke``) and the async path (``ainvoke``); then
the time ``create_agent`` takes to start the stdio server and list its tools.

    python benchmarks/mcp_overhead.py [--steps 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import plait
from plait.messages import AIMessage, ToolCall


def echo(text: str) -> str:
    """Repeat the text.

    Args:
        text: what to repeat.
    """
    return text


def serve(transport: str, port: int) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")
    server.tool()(echo)
    if transport == "http":
        asyncio.run(server.run_streamable_http_async(host="127.0.0.1", port=port))
    else:
        server.run("stdio")


def script(steps: int) -> plait.ScriptedChatModel:
    turns: list[Any] = [
        AIMessage("", tool_calls=[ToolCall("echo", {"text": f"hi {i}"}, id=f"c{i}")])
        for i in range(steps)
    ]
    return plait.ScriptedChatModel([*turns, "done"])


def agent_for(server: dict[str, Any] | None, steps: int) -> plait.Agent:
    if server is None:
        return plait.create_agent(model=script(steps), tools=[plait.tool(echo)])
    return plait.create_agent(model=script(steps), middleware=[("mcp", {"servers": [server]})])


def per_step(make: Callable[[], plait.Agent], steps: int, repeat: int, use_async: bool) -> float:
    best = float("inf")
    for _ in range(repeat):
        agent = make()
        try:
            start = time.perf_counter()
            if use_async:
                asyncio.run(agent.ainvoke("go", recursion_limit=steps * 2 + 5))
            else:
                agent.invoke("go", recursion_limit=steps * 2 + 5)
            best = min(best, (time.perf_counter() - start) / steps)
        finally:
            agent.close()
    return best


def bare_sdk(server: dict[str, Any], steps: int, repeat: int) -> float:
    """The SDK alone: one ``Client``, ``call_tool`` in a loop (no agent, no thread hops)."""
    from mcp import Client, StdioServerParameters

    target: Any = server.get("url") or StdioServerParameters(
        command=server["command"], args=server["args"]
    )

    async def run() -> float:
        async with Client(target, cache=None) as client:
            best = float("inf")
            for _ in range(repeat):
                start = time.perf_counter()
                for i in range(steps):
                    await client.call_tool("echo", {"text": f"hi {i}"})
                best = min(best, (time.perf_counter() - start) / steps)
            return best

    return asyncio.run(run())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return

    port = free_port()
    http = subprocess.Popen(
        [sys.executable, __file__, "--serve", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the HTTP server did not start") from None
                time.sleep(0.05)
        stdio = {"name": "bench", "command": sys.executable, "args": [__file__, "--serve", "stdio"]}
        web = {"name": "bench", "url": f"http://127.0.0.1:{port}/mcp"}
        steps, repeat = args.steps, args.repeat
        print(f"{steps} steps (one scripted model call + one echo call), best of {repeat}")
        for use_async in (False, True):
            path = "ainvoke" if use_async else "invoke"
            direct = per_step(lambda: agent_for(None, steps), steps, repeat, use_async)
            print(f"\n{path}: direct Python tool   {direct * 1e6:9.0f} µs/step  (baseline)")
            for label, server in (("MCP stdio", stdio), ("MCP HTTP ", web)):
                cost = per_step(lambda s=server: agent_for(s, steps), steps, repeat, use_async)
                bare = bare_sdk(server, steps, repeat)
                print(
                    f"{path}: {label} tool         {cost * 1e6:9.0f} µs/step  "
                    f"{cost / direct:6.1f}x direct, +{(cost - direct) * 1e6:.0f} µs per call; "
                    f"the SDK's own call_tool alone: {bare * 1e6:.0f} µs "
                    f"(plait adds {(cost - direct - bare) * 1e6:+.0f} µs)"
                )
        start = time.perf_counter()
        agent_for(stdio, 1).close()
        print(
            f"\ncreate_agent with one stdio server (start, handshake, list): "
            f"{(time.perf_counter() - start) * 1e3:.0f} ms"
        )
    finally:
        http.kill()
        http.wait()


if __name__ == "__main__":
    main()
