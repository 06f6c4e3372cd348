"""plait against LangChain 1.5.0's ``create_agent``, the same work in one run on one machine.

Scenarios (interleaved, plait then LangChain, each repetition; min and median printed):
per-step cost of a 200-step run (one fake model call + one trivial tool call a step)
with no middleware and with five equivalent middleware; SQLite per-turn cost on a young
thread against a 500-turn one, turns alternating, CPU and wall-clock apart, and database
bytes; cold import time and module count;
peak RSS of a child process running a 200-step agent. The bare-Python floor is the same
fake model decisions and tool calls in a plain loop. A missed target makes the run exit 1.

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


MISSED: list[str] = []


def target(text: str, met: bool) -> str:
    """The target's verdict, remembered: a missed target makes the run exit non-zero."""
    if not met:
        MISSED.append(text)
    return f"target {text}: {'met' if met else 'MISSED'}"


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
        verdict = ""
        if middleware:
            verdict = (
                f"{target('<=0.1x', min(p) / min(lc) <= 0.1)}; plait = {min(p) / floor:.0f}x "
                f"floor, {min(p) / min(objects):.1f}x floor with objects"
            )
        row(label, "µs", p, lc, verdict)


def db_bytes(path: str) -> int:
    """The database's size once its write-ahead log is folded in (from another connection,
    so the thread carries on)."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def checkpoint_growth(old_turns: int, reps: int) -> None:
    """Per-turn cost on a young thread against an old one, in the same database and the
    same minutes: each framework grows one thread to ``old_turns`` turns, then turns of a
    fresh thread and of the old one alternate, ``reps`` each, so whatever slows the
    machine slows both alike. CPU time is taken apart from wall-clock time, which adds
    the disk's fsync; the growth target is judged on CPU time."""
    print(
        f"SQLite checkpointer: a young thread (turns 1-{reps}) against an old one (turns "
        f"{old_turns + 1}-{old_turns + reps}), turns alternating (user message + tool call + "
        "answer)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        threads = {n: m.Thread(os.path.join(tmp, f"{n}.db")) for n, m in FRAMEWORKS.items()}
        for _ in range(old_turns):
            for thread in threads.values():
                thread.turn("old")
        size = {n: db_bytes(os.path.join(tmp, f"{n}.db")) for n in FRAMEWORKS}
        wall: dict[str, dict[str, list[float]]] = {n: {"young": [], "old": []} for n in threads}
        cpu: dict[str, dict[str, list[float]]] = {n: {"young": [], "old": []} for n in threads}
        for _ in range(reps):
            for name, thread in threads.items():
                for age in ("young", "old"):
                    seconds, cpu_seconds = thread.turn(age)
                    wall[name][age].append(seconds * 1e3)
                    cpu[name][age].append(cpu_seconds * 1e3)
        for thread in threads.values():
            thread.close()
    for age in ("young", "old"):
        row(f"per-turn CPU, {age} thread", "ms", cpu["plait"][age], cpu["langchain"][age])
        row(f"per-turn wall, {age} thread", "ms", wall["plait"][age], wall["langchain"][age])
    growth = {n: statistics.median(cpu[n]["old"]) / statistics.median(cpu[n]["young"]) for n in cpu}
    wall_growth = {
        n: statistics.median(wall[n]["old"]) / statistics.median(wall[n]["young"]) for n in wall
    }
    print(
        f"  old / young, median CPU: plait {growth['plait']:.2f}x, langchain "
        f"{growth['langchain']:.2f}x; wall: plait {wall_growth['plait']:.2f}x, langchain "
        f"{wall_growth['langchain']:.2f}x  "
        + target("plait CPU growth <=1.3x", growth["plait"] <= 1.3)
    )
    p, lc = size["plait"], size["langchain"]
    print(
        f"  database bytes after {old_turns} turns: plait {p:,} ({p / old_turns:,.0f}/turn), "
        f"langchain {lc:,} ({lc / old_turns:,.0f}/turn): {p / lc:.4f}x  "
        + target("<=0.02x", p / lc <= 0.02)
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
    row("cold import", "ms", p, lc, target("<=0.15x", min(p) / min(lc) <= 0.15))
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
    row(
        f"peak RSS over bare python ({steps} steps)",
        "MiB",
        got["plait"],
        got["langchain"],
        target("<=0.5x", min(got["plait"]) / min(got["langchain"]) <= 0.5),
    )
    print(f"  bare interpreter: {bare / 1024:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--reps", type=int, default=None)
    args = parser.parse_args()
    reps = args.reps or (2 if args.quick else 7)
    old_turns = 60 if args.quick else 500

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
    checkpoint_growth(old_turns, reps=10 if args.quick else 40)
    imports(max(reps, 5))
    memory(200, max(2, reps // 2))
    if MISSED:
        print(f"MISSED: {'; '.join(MISSED)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
