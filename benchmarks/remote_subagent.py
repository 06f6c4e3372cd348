"""What a remote sub-agent costs over a local one, on loopback only.

The same scripted sub-agent runs as a local ``SubAgent`` and as a remote one served by
``plait serve`` (uvicorn in a thread of this process, an API key on); the main agent's
scripted model calls ``task`` on it. Prints, beside the local baseline measured here:

- time per ``task`` call, one call per main run (``--runs`` runs);
- time for one main run whose AI message makes ``--fanout`` task calls at once
  (``ainvoke``: they run concurrently, local and remote alike).

    python benchmarks/remote_subagent.py [--runs 50] [--fanout 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from typing import Any

import uvicorn

import plait
import plait_serve
from plait.testing import ai, call
from plait_subagents import SubAgentMiddleware

KEY = "bench-remote-key-0123456789abcdef"


def worker() -> plait.Agent:
    return plait.create_agent(
        plait.ScriptedChatModel([lambda messages, tools: f"done: {messages[-1].text}"] * 100_000),
        name="worker",
        checkpointer="memory",
    )


def serve(agent: plait.Agent) -> tuple[str, uvicorn.Server]:
    config = uvicorn.Config(plait_serve.app(agent, keys=[KEY]), port=0, log_level="warning")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}", server


def main_agent(spec: dict[str, Any], calls: int, runs: int) -> plait.Agent:
    turn = [
        ai(
            "",
            *(
                call("task", f"c{i}", description=f"job {i}", subagent_type="worker")
                for i in range(calls)
            ),
        ),
        "ok",
    ]
    return plait.create_agent(
        plait.ScriptedChatModel(turn * runs),
        middleware=[SubAgentMiddleware(subagents=[spec])],
        checkpointer="memory",
    )


def per_task(spec: dict[str, Any], runs: int) -> float:
    agent = main_agent(spec, 1, runs)
    times = []
    for n in range(runs):
        start = time.perf_counter()
        result = agent.invoke("go", thread_id=f"t{n}")
        times.append(time.perf_counter() - start)
        assert result.messages[2].text == "done: job 0", result.messages[2].text
    agent.close()
    return statistics.median(times)


def fanned(spec: dict[str, Any], fanout: int, runs: int) -> float:
    agent = main_agent(spec, fanout, runs)

    async def go() -> list[float]:
        times = []
        for n in range(runs):
            start = time.perf_counter()
            result = await agent.ainvoke("go", thread_id=f"f{n}")
            times.append(time.perf_counter() - start)
            assert sum(m.type == "tool" for m in result.messages) == fanout
        return times

    times = asyncio.run(go())
    agent.close()
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--fanout", type=int, default=10)
    args = parser.parse_args(argv)
    url, server = serve(worker())
    os.environ["BENCH_REMOTE_KEY"] = KEY
    local = {"name": "worker", "description": "does jobs", "agent": worker()}
    remote = {
        "name": "worker",
        "description": "does jobs",
        "url": url,
        "assistant_id": "worker",
        "api_key_env": "BENCH_REMOTE_KEY",
    }
    try:
        one_local, one_remote = per_task(local, args.runs), per_task(remote, args.runs)
        many_local = fanned(local, args.fanout, max(args.runs // 5, 3))
        many_remote = fanned(remote, args.fanout, max(args.runs // 5, 3))
    finally:
        server.should_exit = True
    print(f"one task per run (median of {args.runs}):")
    print(f"  local  {one_local * 1e3:8.2f} ms")
    print(f"  remote {one_remote * 1e3:8.2f} ms  ({one_remote / one_local:.1f}x local)")
    print(f"{args.fanout} concurrent tasks in one run (ainvoke):")
    print(f"  local  {many_local * 1e3:8.2f} ms")
    print(f"  remote {many_remote * 1e3:8.2f} ms  ({many_remote / many_local:.1f}x local)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
