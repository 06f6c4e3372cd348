"""Kill loop: parallel tool calls under SIGKILL. Counts how many *finished* tool calls a
resume runs again (the guarantee: none — only calls in flight at the kill run again).

Each round, a worker process runs a thread whose model asks for three tool calls at once
(each sleeps a random 20-200 ms and logs its start and end); the worker is SIGKILLed at a
random moment of that step, then a new process resumes the thread to its end. Rounds use the sync
and the async path in turn. Prints the kills, the calls in flight at a kill (run again,
as they must be), the calls killed between their return and the save of their answer
(a few milliseconds' window), and the finished calls whose answer was saved that ran
again (must be 0; the run fails otherwise).

    python benchmarks/kill_loop.py [--rounds 40] [--url sqlite:///...]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

WORKER = textwrap.dedent(
    '''
    import asyncio, random, sys, time
    import plait
    from plait.messages import AIMessage, ToolCall
    from plait.models import ScriptedChatModel

    path, url, thread_id, log = sys.argv[1:5]

    def write(line):
        with open(log, "a") as out:
            out.write(f"{line} {time.time()}\\n")
            out.flush()
            import os; os.fsync(out.fileno())

    def job(n: int) -> str:
        """Job n."""
        write(f"start {n}")
        time.sleep(random.uniform(0.02, 0.2))
        write(f"done {n}")
        return f"job {n} done"

    async def ajob(n: int) -> str:
        """Job n."""
        write(f"start {n}")
        await asyncio.sleep(random.uniform(0.02, 0.2))
        write(f"done {n}")
        return f"job {n} done"

    calls = [ToolCall("job", {"n": n}, f"call_{n}") for n in (1, 2, 3)]
    model = ScriptedChatModel([AIMessage("", tool_calls=calls), "done"] * 2)
    tool = plait.tool(job if path == "sync" else ajob, name="job")
    agent = plait.create_agent(model, tools=[tool], checkpointer=url)
    state = agent.checkpointer.load(thread_id)
    text = None if state is not None else "run three jobs"
    if state is not None:  # resuming: the first model call is in the thread already
        model.responses = model.responses[1:]
    if path == "sync":
        agent.invoke(text, thread_id=thread_id)
    else:
        asyncio.run(agent.ainvoke(text, thread_id=thread_id))
    '''
)


SAVE_WINDOW = 0.05
"""Seconds between a tool's return and the commit of its answer, ample on this machine: a
call that returned within this time before the kill may not be saved yet."""


def count(log: Path, killed_at: float) -> tuple[int, int, int]:
    """Of the calls that ran again: (in flight at the kill, returned within the save
    window before it, returned and saved before it — which must never run again)."""
    done: dict[str, float] = {}
    started: set[str] = set()
    in_flight = in_window = saved = 0
    for line in log.read_text().splitlines():
        kind, n, stamp = line.split()
        if kind == "done":
            done.setdefault(n, float(stamp))
            continue
        if n in done:
            if killed_at - done[n] > SAVE_WINDOW:
                saved += 1
            else:
                in_window += 1
        elif n in started:
            in_flight += 1
        started.add(n)
    return in_flight, in_window, saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--url", default=None, help="a checkpointer URL (default: SQLite)")
    args = parser.parse_args()
    rng = random.Random(7)
    kills = in_flight = in_window = saved = 0
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "worker.py"
        script.write_text(WORKER)
        url = args.url or f"sqlite:///{Path(folder) / 'kill.db'}"
        for round_ in range(args.rounds):
            path = "sync" if round_ % 2 == 0 else "async"
            thread_id, log = f"round-{round_}", Path(folder) / f"log-{round_}"
            command = [sys.executable, str(script), path, url, thread_id, str(log)]
            worker = subprocess.Popen(command, stderr=subprocess.DEVNULL)
            while not log.exists() and worker.poll() is None:  # until the first job starts
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.35))  # then at a random moment of the tools step
            killed_at = float("inf")
            if worker.poll() is None:
                killed_at = time.time()
                os.kill(worker.pid, signal.SIGKILL)
                kills += 1
            worker.wait()
            subprocess.run(command, check=True, timeout=120)
            if log.exists():
                figures = count(log, killed_at)
                in_flight += figures[0]
                in_window += figures[1]
                saved += figures[2]
    print(f"rounds: {args.rounds}, workers killed mid-run: {kills}")
    print("tool calls run again on resume:")
    print(f"  in flight at the kill:                         {in_flight}")
    print(f"  returned <{SAVE_WINDOW * 1e3:.0f} ms before the kill (answer unsaved): {in_window}")
    print(f"  returned and saved before the kill:            {saved}")
    if saved:
        sys.exit("MISSED: a finished, saved tool call ran again")


if __name__ == "__main__":
    main()
