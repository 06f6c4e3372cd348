"""Kernel overhead: per-step cost of the agent loop against a bare Python loop.

A step is one scripted model call plus one trivial tool call. Prints, for a 200-step run,
the cost per step of a bare loop making the same calls, of plait with no middleware and
with 10 no-op middleware (each as a ratio to the bare loop, measured in this run); the
async path with an async tool and with a sync tool (run in a worker thread, as it must
be so it cannot block the event loop) as ratios to the sync path, beside the cost of one
bare thread hop (``await asyncio.to_thread(f)``) on this machine; the cold import time
of ``plait`` (``-X importtime``) and the peak RSS.

    python benchmarks/kernel_overhead.py [--steps 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import time
from typing import Any

import attrs

import plait
from plait.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from plait.models.scripted import ScriptedChatModel


@plait.tool
def noop(n: int) -> str:
    """Return n.

    Args:
        n: any number.
    """
    return str(n)


@plait.tool(name="noop")
async def anoop(n: int) -> str:
    """Return n.

    Args:
        n: any number.
    """
    return str(n)


@attrs.frozen
class NoOp(plait.Middleware):
    """Implements the per-step hooks and does nothing in them."""

    def before_model(self) -> None:
        return None

    def after_model(self) -> None:
        return None

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


def script(steps: int) -> list[AIMessage]:
    calls = [AIMessage("", tool_calls=[ToolCall("noop", {"n": i}, f"c{i}")]) for i in range(steps)]
    return [*calls, AIMessage("done")]


def bare_loop(steps: int) -> float:
    """The same model and tool calls, with nothing around them."""
    model = ScriptedChatModel(script(steps))
    tools = {"noop": noop}
    start = time.perf_counter()
    messages: list[Any] = [HumanMessage("go")]
    while True:
        answer = model.invoke(messages, tools=list(tools.values()))
        messages.append(answer)
        if not answer.tool_calls:
            break
        for call in answer.tool_calls:
            tool = tools[call.name]
            result = tool.func(**tool.prepare(call.args, None))  # type: ignore[misc]
            messages.append(ToolMessage(result, tool_call_id=call.id, name=call.name))
    return time.perf_counter() - start


def agent_run(
    steps: int, middleware: int, *, use_async: bool = False, async_tool: bool = False
) -> float:
    model = ScriptedChatModel(script(steps))
    tool = anoop if async_tool else noop
    agent = plait.create_agent(model, [tool], middleware=[NoOp() for _ in range(middleware)])
    if not use_async:
        start = time.perf_counter()
        agent.invoke("go", recursion_limit=steps + 1)
        return time.perf_counter() - start

    async def timed() -> float:  # the event loop's own start-up is not the kernel's cost
        start = time.perf_counter()
        await agent.ainvoke("go", recursion_limit=steps + 1)
        return time.perf_counter() - start

    return asyncio.run(timed())


def thread_hop(count: int) -> float:
    """What one ``await asyncio.to_thread(f)`` of a trivial ``f`` costs here: the floor of
    a sync tool on the async path."""

    async def hops() -> float:
        start = time.perf_counter()
        for _ in range(count):
            await asyncio.to_thread(int)
        return (time.perf_counter() - start) / count

    return asyncio.run(hops())


def best(fn: Any, repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def import_time() -> float:
    """Cold ``import plait`` in a fresh interpreter, from ``-X importtime`` (seconds)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import plait"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    total = 0
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == "plait":
            total = int(parts[1])
    return total / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    steps, repeat = args.steps, args.repeat

    bare = best(lambda: bare_loop(steps), repeat)
    sync0 = best(lambda: agent_run(steps, 0), repeat)
    sync10 = best(lambda: agent_run(steps, 10), repeat)
    rows = [
        ("bare python loop", bare),
        ("plait, 0 middleware", sync0),
        ("plait, 10 no-op middleware", sync10),
    ]
    print(f"per-step cost, {steps}-step run (best of {repeat}):")
    for label, seconds in rows:
        per_step = seconds / steps * 1e6
        print(f"  {label:34s} {per_step:9.1f} us/step   x{seconds / bare:6.1f} of bare loop")
    hop = min(thread_hop(steps) for _ in range(repeat))
    print("async path, as a ratio to the sync path with the same middleware:")
    for label, middleware, async_tool, sync in [
        ("async tool, 0 middleware", 0, True, sync0),
        ("async tool, 10 no-op middleware", 10, True, sync10),
        ("sync tool, 0 middleware", 0, False, sync0),
        ("sync tool, 10 no-op middleware", 10, False, sync10),
    ]:
        seconds = best(
            lambda m=middleware, a=async_tool: agent_run(steps, m, use_async=True, async_tool=a),
            repeat,
        )
        per_step = seconds / steps * 1e6
        line = f"  {label:34s} {per_step:9.1f} us/step   x{seconds / sync:6.2f} of sync"
        if not async_tool:
            rest = seconds / steps - hop
            line += f"   (x{rest * steps / sync:.2f} without the thread hop)"
        print(line)
    print(f"one thread hop (asyncio.to_thread):   {hop * 1e6:9.1f} us")
    print(f"cold import of plait:              {import_time() * 1e3:9.1f} ms (-X importtime)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process:          {peak:9.1f} MiB")


if __name__ == "__main__":
    main()
