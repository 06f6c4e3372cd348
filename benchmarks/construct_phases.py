"""Where plait's first ``create_agent`` in a process goes (the "cold" of
``construct_cost.py``): the same agent, five middleware by name, split into

- scan: reading the installed entry points (once per process);
- import <name>: importing the plugin an entry point names (its module and the kernel
  modules only plugins use);
- options <name>: building the middleware from its options (structuring, checks);
- hooks: registering and checking the middleware's hooks (once per middleware class);
- rest: the rest of ``create_agent``.

Each round is a fresh interpreter with bytecode written; a first round is not counted.
Medians (and minimums) over ``--repeat`` rounds, in ms of wall-clock time. The split
wraps private functions of the kernel, so it reads a little more than ``construct_cost``'s
"cold"; it says where to look, ``construct_cost`` says how much.

    python benchmarks/construct_phases.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import json, time
import _build_plait as built
from plait import _entrypoints, _registry, _resolve

clock = time.perf_counter
spent = {}
inner = [0.0]  # time spent in timed calls inside the current one

def timed(label, call, *args, **kwargs):
    # the time of call itself, less the timed calls it makes (the scan inside the first
    # middleware's options, the import inside each)
    inner.append(0.0)
    start = clock()
    try:
        return call(*args, **kwargs)
    finally:
        took = clock() - start
        spent[label] = spent.get(label, 0.0) + took - inner.pop()
        inner[-1] += took

scan = _entrypoints._installed
_entrypoints._installed = lambda: timed("scan", scan)
load = _entrypoints.EntryPoint.load
_entrypoints.EntryPoint.load = lambda self: timed("import " + self.name, load, self)
build = _resolve.build
_resolve.build = lambda name, options: timed("options " + name, build, name, options)
registry = _registry.Registry.__init__
_registry.Registry.__init__ = lambda self, mw: timed("hooks", registry, self, mw)

start = clock()
built.build()
cold = clock() - start
spent["rest"] = cold - sum(spent.values())
spent["cold"] = cold
print(json.dumps(spent))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(HERE), "OTEL_SDK_DISABLED": "true"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' imports read compiled bytecode
    rounds: list[dict[str, float]] = []
    for round_ in range(args.repeat + 1):
        done = subprocess.run(
            [sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=HERE, env=env
        )
        if done.returncode != 0:
            sys.exit(done.stderr)
        if round_:  # the first round writes any bytecode not yet written
            rounds.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"plait's first create_agent, 5 middleware by name: ms over {args.repeat} rounds")
    print(f"{'':<28}{'median':>8}{'min':>8}")
    for label in rounds[0]:
        values = [got.get(label, 0.0) * 1e3 for got in rounds]
        print(f"{label:<28}{statistics.median(values):>8.2f}{min(values):>8.2f}")


if __name__ == "__main__":
    main()
