"""plait-serve under load, on loopback only: what serving a run over AG-UI adds to
streaming it in-process, and what the server holds up to.

The server is this file run with ``--serve PORT`` (uvicorn, one process, the memory
checkpointer, a scripted model answering with ``--words`` words streamed one chunk each);
the clients are httpx in this process; ``--checkpointer sqlite:///x.db`` serves from a
SQLite run log instead. Prints, each beside the baseline measured here:

- time to first event and per-event cost of ``POST /ag-ui`` against a direct
  ``agent.astream()`` of the same run (the difference per event is the server's overhead);
- runs per second and p50/p99 latency (request to RUN_FINISHED) at 1, 10 and 100
  concurrent streaming clients, and the errors seen (goal: none);
- the server's memory per open, idle stream (``--idle`` followers of one waiting run;
  resident memory growth divided by their number; goal ≤ 50 KB);
- a client killed mid-stream that reconnects with Last-Event-ID: how many events it got
  once, twice or never (goal: every event exactly once);
- a stateless Agent Protocol run (``POST /runs/wait``: a thread made for the run, listed
  in the registry of stateless threads where the checkpointer keeps one, deleted and
  forgotten once it is read) against a threaded one on a new thread (``POST
  /threads/{id}/runs/wait`` with ``if_not_exists: "create"``), taken in turns: the
  median latency of each and their ratio. Run it with ``--checkpointer sqlite:///x.db``
  to see the registry's write and removal (memory keeps no registry).

    python benchmarks/serve_load.py [--words 200] [--runs 20] [--idle 200] [--checkpointer URL]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

import plait
from plait.messages import AIMessage, ToolCall


def answer(words: int) -> str:
    return " ".join(f"word{i}" for i in range(words))


def bench_agent(words: int, checkpointer: str = "memory") -> plait.Agent:
    """Answers every message with ``words`` streamed words; "wait N" waits N seconds in a
    tool first (a run that stays open)."""

    async def wait(seconds: float) -> str:
        """Wait."""
        await asyncio.sleep(seconds)
        return "waited"

    text = answer(words)

    def brain(messages: list[Any], tools: Any) -> AIMessage:
        last = messages[-1]
        if last.type == "human" and last.text.startswith("wait "):
            return AIMessage("", tool_calls=[ToolCall("wait", {"seconds": float(last.text[5:])})])
        return AIMessage(text)

    model = plait.ScriptedChatModel([brain] * 200_000)
    return plait.create_agent(model, tools=[plait.tool(wait)], checkpointer=checkpointer)


def serve(port: int, words: int, checkpointer: str) -> None:
    import uvicorn

    import plait_serve

    app = plait_serve.app(bench_agent(words, checkpointer))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", backlog=1024)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def body(thread: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"r-{thread}",
        "messages": [{"id": f"u-{thread}", "role": "user", "content": text}],
    }


async def direct_run(agent: plait.Agent, thread: str) -> tuple[float, float, int]:
    """(time to first event, whole run, events) of one ``agent.astream()`` in-process."""
    start = time.perf_counter()
    first = None
    count = 0
    async for _ in agent.astream("go", mode=["messages", "updates", "custom"], thread_id=thread):
        if first is None:
            first = time.perf_counter() - start
        count += 1
    total = time.perf_counter() - start
    return first or total, total, count


async def one_run(client: httpx.AsyncClient, thread: str) -> tuple[float, float, int]:
    """(time to first event, whole run, SSE events) of one POST /ag-ui."""
    start = time.perf_counter()
    first = None
    events = 0
    async with client.stream("POST", "/ag-ui", json=body(thread, "go")) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                if first is None:
                    first = time.perf_counter() - start
                events += 1
                if '"RUN_FINISHED"' in line or '"RUN_ERROR"' in line:
                    assert '"RUN_FINISHED"' in line, line
    total = time.perf_counter() - start
    return first or total, total, events


async def paired(url: str, words: int, runs: int, prefix: str) -> dict[str, float]:
    """Direct and served runs taken in turns (so a busy machine slows both alike): the
    median time to first event and per-event time of each."""
    agent = bench_agent(words)
    direct: list[tuple[float, float, int]] = []
    served: list[tuple[float, float, int]] = []
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for i in range(runs):
            direct.append(await direct_run(agent, f"{prefix}d{i}"))
            served.append(await one_run(client, f"{prefix}s{i}"))
    return {
        "direct_first": statistics.median(r[0] for r in direct),
        "direct_event": statistics.median(r[1] / r[2] for r in direct),
        "direct_count": direct[-1][2],
        "served_first": statistics.median(r[0] for r in served),
        "served_event": statistics.median(r[1] / r[2] for r in served),
        "served_count": served[-1][2],
    }


async def stateless_and_threaded(url: str, runs: int) -> tuple[float, float]:
    """Median seconds of a stateless ``POST /runs/wait`` and of a threaded one on a new
    thread, taken in turns (so a busy machine slows both alike)."""
    stateless: list[float] = []
    threaded: list[float] = []
    run = {"input": {"messages": [{"role": "user", "content": "go"}]}}
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:

        async def timed(path: str, body: dict[str, Any]) -> float:
            start = time.perf_counter()
            response = await client.post(path, json=body)
            response.raise_for_status()
            assert response.json()["messages"][-1]["type"] == "ai", response.text[:200]
            return time.perf_counter() - start

        for _ in range(runs):
            stateless.append(await timed("/runs/wait", run))
            body = {**run, "if_not_exists": "create"}
            threaded.append(await timed(f"/threads/{uuid.uuid4()}/runs/wait", body))
    return statistics.median(stateless), statistics.median(threaded)


async def concurrent(url: str, clients: int, per_client: int) -> tuple[float, float, float, int]:
    """(runs/s, p50, p99 seconds, errors) for ``clients`` concurrent streaming clients."""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def worker(index: int) -> None:
            nonlocal errors
            for n in range(per_client):
                try:
                    latencies.append((await one_run(client, f"c{clients}-{index}-{n}"))[1])
                except Exception:
                    errors += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(clients)))
        elapsed = time.perf_counter() - start
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0.0
    return len(latencies) / elapsed, statistics.median(latencies or [0.0]), p99, errors


async def idle_memory(url: str, pid: int, streams: int) -> float:
    """KB of server memory per open stream following a run that waits."""
    limits = httpx.Limits(max_connections=streams + 10)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async with client.stream("POST", "/ag-ui", json=body("idle", "wait 30")) as owner:
            async for line in owner.aiter_lines():
                if "TOOL_CALL_END" in line:
                    break
            await asyncio.sleep(0.3)
            before = rss_kb(pid)
            opened: list[Any] = []
            for _ in range(streams):
                context = client.stream("GET", "/ag-ui/threads/idle/stream?since=0")
                response = await context.__aenter__()
                opened.append((context, response))
            # read each stream's backlog so every follower is waiting for the next event
            for _, response in opened:
                async for line in response.aiter_lines():
                    if "TOOL_CALL_END" in line:
                        break
            await asyncio.sleep(0.5)
            after = rss_kb(pid)
            await client.post("/plait/threads/idle/cancel")
            for context, _ in opened:
                await context.__aexit__(None, None, None)
    return (after - before) / streams


async def killed_and_reconnected(url: str) -> tuple[int, int, int, int]:
    """(numbered AG-UI events, seen once, seen twice or more, never seen) for a client that
    is killed mid-stream and reconnects from its Last-Event-ID."""
    seen: dict[int, int] = {}
    last = 0
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        async with client.stream("POST", "/ag-ui", json=body("kill", "go")) as response:
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    last = int(line[4:])
                    seen[last] = seen.get(last, 0) + 1
                    if len(seen) >= 40:
                        break  # the client dies here; the run goes on
        async with client.stream(
            "GET", "/ag-ui/threads/kill/stream", headers={"Last-Event-ID": str(last)}
        ) as response:
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    number = int(line[4:])
                    seen[number] = seen.get(number, 0) + 1
        # What the whole AG-UI stream numbers (a log event AG-UI has no use for, such as
        # a saved step's mark, carries no id there)
        full = await client.get("/ag-ui/threads/kill/stream?since=0")
    numbers = [int(line[4:]) for line in full.text.splitlines() if line.startswith("id: ")]
    numbers = [n for n in numbers if n >= min(seen)]
    once = sum(1 for n in numbers if seen.get(n) == 1)
    twice = sum(1 for n in numbers if seen.get(n, 0) > 1)
    never = sum(1 for n in numbers if n not in seen)
    return len(numbers), once, twice, never


async def main(args: argparse.Namespace) -> None:
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            __file__,
            *("--serve", str(port), "--words", str(args.words)),
            *("--checkpointer", args.checkpointer),
        ],
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)
        await paired(url, args.words, 3, "warm")
        m = await paired(url, args.words, args.runs, "m")
        d_first, d_event, s_first, s_event = (
            m["direct_first"],
            m["direct_event"],
            m["served_first"],
            m["served_event"],
        )
        print(
            f"run of {args.words} streamed words: {m['direct_count']:.0f} stream events "
            f"in-process, {m['served_count']:.0f} AG-UI events served"
        )
        print(
            f"time to first event: direct {d_first * 1e3:.2f} ms, "
            f"served {s_first * 1e3:.2f} ms ({s_first / d_first:.1f}x)"
        )
        print(
            f"per event: direct {d_event * 1e6:.1f} us, served {s_event * 1e6:.1f} us "
            f"({s_event / d_event:.1f}x); "
            f"overhead {(s_event - d_event) * 1e6:.1f} us/event (goal <= 50)"
        )
        await stateless_and_threaded(url, 3)
        stateless, threaded = await stateless_and_threaded(url, args.runs)
        print(
            f"Agent Protocol run ({args.checkpointer}): threaded on a new thread "
            f"{threaded * 1e3:.2f} ms, stateless {stateless * 1e3:.2f} ms "
            f"({stateless / threaded:.2f}x)"
        )
        for clients in (1, 10, 100):
            per_client = max(1, args.runs // clients) if clients < 100 else 1
            rate, p50, p99, errors = await concurrent(url, clients, max(per_client, 2))
            print(
                f"{clients:>3} concurrent streaming clients: {rate:.1f} runs/s, "
                f"p50 {p50 * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms, errors {errors}"
            )
        per_stream = await idle_memory(url, server.pid, args.idle)
        print(
            f"memory per idle open stream: {per_stream:.1f} KB over {args.idle} streams "
            "(goal <= 50 KB)"
        )
        total, once, twice, never = await killed_and_reconnected(url)
        print(
            f"client killed mid-stream, reconnected with Last-Event-ID: {total} events, "
            f"{once} received exactly once, {twice} twice, {never} never"
        )
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument(
        "--checkpointer",
        default="memory",
        help="the served agent's checkpointer, e.g. sqlite:///serve-bench.db (the baseline "
        "keeps memory)",
    )
    options = parser.parse_args()
    if options.serve:
        serve(options.serve, options.words, options.checkpointer)
    else:
        asyncio.run(main(options))
