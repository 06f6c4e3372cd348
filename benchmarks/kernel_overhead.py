"""Kernel overhead: per-step cost of the agent loop against a bare Python loop.

A step is one scripted model call plus one trivial tool call. Prints, for a 200-step run,
the cost per step of a bare loop making the same calls, of plait with no middleware and
with 10 no-op middleware (each as a ratio to the bare loop, measured in this run); the
async path as ratios to the sync path: with an async tool, with a sync tool (by default
run in a worker thread, so that it cannot block the event loop) and with a sync tool made
with ``run_in_thread=False`` (called on the event loop's thread: no hop), beside the cost
of one bare thread hop (``await asyncio.to_thread(f)``) on this machine; the cold import
time of ``plait`` (``-X importtime``) and the peak RSS. Each figure is the best of
``--repeat`` runs, and every repetition runs each configuration once in turn, so load
elsewhere on a shared machine weighs on a ratio's two sides alike.

    python benchmarks/kernel_overhead.py [--steps 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs

import plait
from plait.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from plait.models.scripted import ScriptedChatModel

WIDTH = 52  # of the row labels


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


@plait.tool(name="noop", run_in_thread=False)
def inline_noop(n: int) -> str:
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
    steps: int, middleware: int, *, use_async: bool = False, tool: plait.Tool = noop
) -> float:
    model = ScriptedChatModel(script(steps))
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


def best_interleaved(runs: dict[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """The best time of each run, each repetition running every one of them in turn, so a
    burst of load elsewhere on the machine weighs on all of them alike."""
    times: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(repeat):
        for label, run in runs.items():
            times[label].append(run())
    return {label: min(values) for label, values in times.items()}


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

    sync_rows: list[tuple[str, Callable[[], float]]] = [
        ("bare python loop", functools.partial(bare_loop, steps)),
        ("plait, 0 middleware", functools.partial(agent_run, steps, 0)),
        ("plait, 10 no-op middleware", functools.partial(agent_run, steps, 10)),
    ]
    async_rows = [  # label, middleware, tool
        ("async tool, 0 middleware", 0, anoop),
        ("async tool, 10 no-op middleware", 10, anoop),
        ("sync tool, 0 middleware", 0, noop),
        ("sync tool, 10 no-op middleware", 10, noop),
        ("sync tool, run_in_thread=False, 0 middleware", 0, inline_noop),
        ("sync tool, run_in_thread=False, 10 no-op middleware", 10, inline_noop),
    ]
    runs: dict[str, Callable[[], float]] = dict(sync_rows)
    for label, middleware, tool in async_rows:
        runs[label] = functools.partial(agent_run, steps, middleware, use_async=True, tool=tool)
    runs["thread hop"] = functools.partial(thread_hop, steps)
    times = best_interleaved(runs, repeat)

    bare = times["bare python loop"]
    print(f"per-step cost, {steps}-step run (best of {repeat}, runs interleaved):")
    for label, _ in sync_rows:
        seconds = times[label]
        per_step = seconds / steps * 1e6
        print(f"  {label:{WIDTH}s} {per_step:9.1f} us/step   x{seconds / bare:6.1f} of bare loop")
    hop = times["thread hop"]
    print("async path, as a ratio to the sync path with the same middleware:")
    for label, middleware, tool in async_rows:
        seconds = times[label]
        sync = times[sync_rows[1 if middleware == 0 else 2][0]]
        per_step = seconds / steps * 1e6
        line = f"  {label:{WIDTH}s} {per_step:9.1f} us/step   x{seconds / sync:6.2f} of sync"
        if tool is noop:
            rest = seconds / steps - hop
            line += f"   (x{rest * steps / sync:.2f} without the thread hop)"
        print(line)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for label, figure in [
        ("one thread hop (asyncio.to_thread)", f"{hop * 1e6:9.1f} us"),
        ("cold import of plait", f"{import_time() * 1e3:9.1f} ms (-X importtime)"),
        ("peak RSS of this process", f"{peak:9.1f} MiB"),
    ]:
        print(f"{label + ':':{WIDTH + 2}s} {figure}")


if __name__ == "__main__":
    main()
