"""Memory of a long-lived agent serving many threads: the agent keeps at most
``THREAD_CACHE_SIZE`` threads in memory, so what it holds stays flat however many threads
it has served.

One agent on a SQLite file serves N threads one short run each (the threads themselves
live in the file). Prints the Python heap the agent holds (tracemalloc, after a garbage
collection) after each thousand threads, and the ratio of the last figure to the first.

    python benchmarks/thread_cache.py [--threads 20000]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

import plait
from plait.agent import THREAD_CACHE_SIZE
from plait.messages import AIMessage


class Echo(plait.ChatModel):
    """Answers every call with "ok" (keeps no record of its calls)."""

    provider = "echo"

    def invoke(self, messages: object, **options: object) -> AIMessage:
        return AIMessage("ok")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=2_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        model = Echo()
        url = f"sqlite:///{Path(folder) / 'threads.db'}"
        agent = plait.create_agent(model, checkpointer=url)
        tracemalloc.start()
        started = time.perf_counter()
        figures: list[tuple[int, float]] = []
        for n in range(1, args.threads + 1):
            agent.invoke(f"hello {n}", thread_id=f"thread-{n}")
            if n % args.every == 0:
                gc.collect()
                current, _ = tracemalloc.get_traced_memory()
                figures.append((n, current / 1024 / 1024))
        elapsed = time.perf_counter() - started

    print(f"threads served by one agent (cache size {THREAD_CACHE_SIZE}), heap after gc:")
    for n, mib in figures:
        print(f"  {n:7d} threads   {mib:8.2f} MiB")
    first, last = figures[0][1], figures[-1][1]
    print(f"growth from {figures[0][0]} to {figures[-1][0]} threads: x{last / first:.2f}")
    print(f"({elapsed:.1f} s, {elapsed / args.threads * 1e3:.2f} ms per run)")


if __name__ == "__main__":
    main()
