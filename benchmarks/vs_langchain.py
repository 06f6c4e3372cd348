"""plait against LangChain 1.5.0's ``create_agent``, the same work in one run on one machine.

Scenarios (interleaved, plait then LangChain, each repetition; min and median printed):
per-step cost of a 200-step run (one fake model call + one trivial tool call a step)
with no middleware and with five equivalent middleware; SQLite per-turn cost at turns
10, 100 and 500 of one thread, and database bytes; cold import time and module count;
peak RSS of a child process running a 200-step agent. The bare-Python floor is the same
fake model decisions and tool calls in a plain loop.

    tox -e bench                      # or: python benchmarks/vs_langchain.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import _vs_lc  # noqa: E402
import _vs_plait  # noqa: E402
from _vs_common import bare_run  # noqa: E402

FRAMEWORKS = {"plait": _vs_plait, "langchain": _vs_lc}


def stats(values: list[float]) -> tuple[float, float]:
    return min(values), statistics.median(values)


def row(label: str, unit: str, plait: list[float], lc: list[float], target: str = "") -> None:
    (pmin, pmed), (lmin, lmed) = stats(plait), stats(lc)
    ratio = pmin / lmin
    print(
        f"  {label:34s} {pmin:10.1f} {pmed:10.1f} {lmin:10.1f} {lmed:10.1f} {unit:6s}"
        f" {ratio:7.3f}x  {target}"
    )


def interleaved(reps: int, measure: Callable[[Any], float]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in FRAMEWORKS}
    for _ in range(reps):
        for name, module in FRAMEWORKS.items():
            out[name].append(measure(module))
    return out


def per_step(steps: int, reps: int) -> None:
    for module in FRAMEWORKS.values():  # warm up: imports, caches, first-call costs
        module.run_steps(steps, middleware=True)
    bare = [bare_run(steps)[0] / steps * 1e6 for _ in range(reps * 5)]
    counts = {name: m.run_steps(steps, middleware=False)[1] for name, m in FRAMEWORKS.items()}
    assert len(set(counts.values())) == 1 == len({bare_run(steps)[1], *counts.values()}), counts
    print(f"per-step cost of a {steps}-step run ({counts['plait']} messages in each), µs/step")
    floor = min(bare)
    print(f"  {'bare-Python floor':34s} {floor:10.2f} {statistics.median(bare):10.2f}")
    objects = [_vs_plait.bare_objects_run(steps) / steps * 1e6 for _ in range(reps * 5)]
    print(
        f"  {'floor with message objects':34s} {min(objects):10.2f} "
        f"{statistics.median(objects):10.2f}   (plait's messages, checked arguments)"
    )
    for middleware, label in ((False, "no middleware"), (True, "five middleware")):
        got = interleaved(reps, lambda m: m.run_steps(steps, middleware=middleware)[0])  # noqa: B023
        p = [s / steps * 1e6 for s in got["plait"]]
        lc = [s / steps * 1e6 for s in got["langchain"]]
        target = ""
        if middleware:
            ok = min(p) / min(lc) <= 0.1
            target = (
                f"target <=0.1x: {'met' if ok else 'MISSED'}; plait = {min(p) / floor:.0f}x "
                f"floor, {min(p) / min(objects):.1f}x floor with objects"
            )
        row(label, "µs", p, lc, target)


def db_bytes(path: str) -> int:
    """The database's size once its write-ahead log is folded in (from another connection,
    so the thread carries on)."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def checkpoint_growth(turns: int, marks: list[int], reps_around: int) -> None:
    print(f"SQLite checkpointer, one thread, {turns} turns (user message + tool call + answer)")
    with tempfile.TemporaryDirectory() as tmp:
        threads = {n: m.Thread(os.path.join(tmp, f"{n}.db")) for n, m in FRAMEWORKS.items()}
        times: dict[str, list[float]] = {n: [] for n in FRAMEWORKS}
        sizes: dict[str, dict[int, int]] = {n: {} for n in FRAMEWORKS}
        for turn in range(1, turns + 1):
            for name, thread in threads.items():
                times[name].append(thread.turn() * 1e3)
                if turn in (*marks, 200, turns):
                    sizes[name][turn] = db_bytes(os.path.join(tmp, f"{name}.db"))
        for thread in threads.values():
            thread.close()
    half = reps_around // 2

    def around(name: str, mark: int) -> list[float]:
        return times[name][max(0, mark - 1 - half) : mark + half]

    for mark in marks:
        row(f"per-turn cost at turn {mark}", "ms", around("plait", mark), around("langchain", mark))
    growth = {n: min(around(n, marks[-1])) / min(around(n, marks[0])) for n in FRAMEWORKS}
    print(
        f"  turn {marks[-1]} / turn {marks[0]}: plait {growth['plait']:.2f}x, langchain "
        f"{growth['langchain']:.2f}x (target plait <=1.3x: "
        f"{'met' if growth['plait'] <= 1.3 else 'MISSED'})"
    )
    at = 200 if turns >= 200 else turns
    p, lc = sizes["plait"][at], sizes["langchain"][at]
    print(
        f"  database bytes at turn {at}: plait {p:,} ({p / at:,.0f}/turn), langchain {lc:,} "
        f"({lc / at:,.0f}/turn): {p / lc:.4f}x (target <=0.02x: "
        f"{'met' if p / lc <= 0.02 else 'MISSED'})"
    )


def child(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=HERE
    ).stdout


IMPORT_PROBE = (
    "import sys, time; before = len(sys.modules); start = time.perf_counter(); {stmt}; "
    "print(time.perf_counter() - start, len(sys.modules) - before)"
)


def imports(reps: int) -> None:
    got: dict[str, list[tuple[float, int]]] = {n: [] for n in FRAMEWORKS}
    for _ in range(reps):
        for name, module in FRAMEWORKS.items():
            seconds, modules = child(IMPORT_PROBE.format(stmt=module.IMPORT)).split()
            got[name].append((float(seconds) * 1e3, int(modules)))
    p = [s for s, _ in got["plait"]]
    lc = [s for s, _ in got["langchain"]]
    ok = min(p) / min(lc) <= 0.15
    row("cold import", "ms", p, lc, f"target <=0.15x: {'met' if ok else 'MISSED'}")
    print(
        f"  modules imported: plait {got['plait'][0][1]} ({_vs_plait.IMPORT!r}), langchain "
        f"{got['langchain'][0][1]} ({_vs_lc.IMPORT!r})"
    )


# VmHWM is the peak RSS of this process image: unlike ru_maxrss it starts afresh at exec,
# so it does not carry over the (larger) parent's size from the fork.
PEAK_KIB = "[int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0]"
RSS_PROBE = "import {module}; {module}.run_steps({steps}, middleware=True); print(" + PEAK_KIB + ")"


def memory(steps: int, reps: int) -> None:
    bare = min(int(child(f"print({PEAK_KIB})")) for _ in range(reps))
    got = interleaved(
        reps,
        lambda m: (int(child(RSS_PROBE.format(module=m.__name__, steps=steps))) - bare) / 1024,
    )
    ok = min(got["plait"]) / min(got["langchain"]) <= 0.5
    row(
        f"peak RSS over bare python ({steps} steps)",
        "MiB",
        got["plait"],
        got["langchain"],
        f"target <=0.5x: {'met' if ok else 'MISSED'}",
    )
    print(f"  bare interpreter: {bare / 1024:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--reps", type=int, default=None)
    args = parser.parse_args()
    reps = args.reps or (2 if args.quick else 7)
    turns, marks = (60, [10, 50]) if args.quick else (500, [10, 100, 500])

    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line),
        platform.processor(),
    )
    print(
        f"machine: {platform.machine()}, {cpu}, {os.cpu_count()} cores; Python "
        f"{platform.python_version()}; plait {version('plait')}, langchain "
        f"{version('langchain')}, langgraph {version('langgraph')}"
    )
    print(
        f"{'':36s} {'plait min':>10s} {'median':>10s} {'LC min':>10s} {'median':>10s}"
        f" {'unit':6s} {'ratio':>8s}"
    )
    per_step(200, reps)
    checkpoint_growth(turns, marks, reps_around=5)
    imports(max(reps, 5))
    memory(200, max(2, reps // 2))


if __name__ == "__main__":
    main()
