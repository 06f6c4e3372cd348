"""What building an agent costs, plait beside LangChain, pydantic-ai, OpenAI Agents, Google
ADK and smolagents: the same fake model (``_vs_common.Brain``), one tool, and five
middleware or the nearest each framework has (each ``_build_<name>.py`` says what).

Each framework runs in a fresh interpreter, once per round, rounds interleaved:

- import: importing the framework and defining the agent's parts (its module);
- cold: the first agent built in the process (plait: entry points scanned, the five
  plugins imported, each middleware class checked once);
- warm: the mean of ``--builds`` more builds, as a server building one per request pays.

A first round is not counted (it compiles what has no bytecode yet). Medians over
``--repeat`` rounds are printed, with ratios to the best peer measured in
the same run (the lowest figure of the frameworks other than plait). A framework that
is not installed is skipped with a line saying so. A "floor" row imports only attrs, cattrs
and pluggy, the libraries the kernel is built on, to show how much of plait's import is
theirs. Goals (issue 38), for plait with
five middleware: warm <= 1 ms, cold <= 5 ms, import + cold <= 0.15x the best peer.

    python benchmarks/construct_cost.py [--repeat 5] [--builds 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent

# label: (module, build arguments, distribution whose version is shown)
CASES = {
    "plait, 5 middleware": ("_build_plait", "", "plait"),
    "plait, no middleware": ("_build_plait", "middleware=False", "plait"),
    "floor: attrs+cattrs+pluggy": ("_build_floor", "", "cattrs"),
    "LangChain": ("_build_langchain", "", "langchain"),
    "pydantic-ai": ("_build_pydantic_ai", "", "pydantic-ai-slim"),
    "OpenAI Agents": ("_build_openai_agents", "", "openai-agents"),
    "Google ADK": ("_build_adk", "", "google-adk"),
    "smolagents": ("_build_smolagents", "", "smolagents"),
}
PLAIT = "plait, 5 middleware"
OURS = {label for label in CASES if label.startswith(("plait", "floor"))}
"""Rows that are not peers: plait's own, and the floor under it."""

CHILD = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
import {module} as built
t1, c1 = time.perf_counter(), time.process_time()
built.build({args})
t2, c2 = time.perf_counter(), time.process_time()
for _ in range({builds}):
    built.build({args})
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "cold": t2 - t1, "warm": (t3 - t2) / {builds},
                  "cpu": c2 - c0, "what": built.WHAT}}))
"""


def run(module: str, args: str, builds: int) -> dict[str, object] | str:
    """One fresh interpreter's figures, or why there are none."""
    env = {**os.environ, "PYTHONPATH": str(HERE), "OTEL_SDK_DISABLED": "true"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' imports read compiled bytecode
    code = CHILD.format(module=module, args=args, builds=builds)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE, env=env
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["exit status " + str(done.returncode)])[-1]
        return last
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--builds", type=int, default=100)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    figures: dict[str, dict[str, list[float]]] = {}
    what: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for round_ in range(args.repeat + 1):
        for label, (module, build_args, _dist) in CASES.items():
            if label in skipped:
                continue
            result = run(module, build_args, args.builds)
            if isinstance(result, str):
                skipped[label] = result
                continue
            if round_ == 0:
                continue  # a first round not counted: it writes any bytecode not yet written
            what[label] = str(result.pop("what")) if build_args == "" else build_args
            kept = figures.setdefault(label, {"import": [], "cold": [], "warm": [], "cpu": []})
            for key in kept:
                kept[key].append(float(result[key]))  # type: ignore[arg-type]
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    median = {
        label: {key: statistics.median(values) for key, values in got.items()}
        for label, got in figures.items()
    }
    for got in median.values():
        got["total"] = got["import"] + got["cold"]
    peers = {label: got for label, got in median.items() if label not in OURS}
    keys = ("warm", "total", "cpu")
    best = {key: min(got[key] for got in peers.values()) for key in keys} if peers else {}
    print(
        f"\nmedians of {args.repeat} fresh interpreters, warm = mean of {args.builds} builds; "
        "ms of wall-clock time except cpu (import + cold, CPU time: what a busy machine's "
        "waiting for a core does not inflate)\n"
        f"{'':<28}{'import':>9}{'cold':>9}{'imp+cold':>10}{'cpu':>8}{'warm':>9}"
        f"{'warm/best':>11}{'imp+cold/best':>15}{'cpu/best':>10}"
    )
    for label, got in median.items():
        row = f"{label:<28}" + "".join(
            f"{got[key] * 1e3:>{width}.{digits}f}"
            for key, width, digits in (
                ("import", 9, 1),
                ("cold", 9, 2),
                ("total", 10, 1),
                ("cpu", 8, 1),
                ("warm", 9, 3),
            )
        )
        if best:
            row += f"{got['warm'] / best['warm']:>11.2f}{got['total'] / best['total']:>15.3f}"
            row += f"{got['cpu'] / best['cpu']:>10.3f}"
        print(row)
    print()
    for label, (_module, _args, dist) in CASES.items():
        if label in what:
            print(f"  {label:<28}{dist} {_version(dist)}: {what[label]}")
    for label, reason in skipped.items():
        print(f"  skipped {label}: {reason}")
    if PLAIT in median and best:
        got = median[PLAIT]
        print(
            f"\nplait, 5 middleware: warm {got['warm'] * 1e3:.3f} ms (goal <= 1), "
            f"cold {got['cold'] * 1e3:.1f} ms (goal <= 5), import + cold "
            f"{got['total'] / best['total']:.3f}x the best peer (goal <= 0.15; in CPU time "
            f"{got['cpu'] / best['cpu']:.3f}x)"
        )


if __name__ == "__main__":
    main()
