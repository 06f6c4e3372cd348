"""Where plait's first ``create_agent`` in a process goes (the "cold" of
``construct_cost.py``): the same agent, five middleware by name, split into

- scan: finding the installed entry points (once per process): from plait's copy on
  disk (``_entrypoint_cache``) in the "copy" columns, by scanning the installed
  distributions in the "scan" columns (``PLAIT_NO_CACHE=1``, as before the copy; with it
  attrs also compiles each class's methods, which the "copy" columns read back from the
  same folder, ``_attrs_compiled``);
- import <name>: importing the plugin an entry point names (its module and the kernel
  modules only plugins use);
- options <name>: building the middleware from its options (structuring, checks);
- hooks: registering and checking the middleware's hooks (once per middleware class);
- rest: the rest of ``create_agent``.

Each round is a fresh interpreter with bytecode written, once with the copy and once
without, interleaved; a first round is not counted (it writes the bytecode and the copy,
into a temporary folder: ``PLAIT_CACHE_DIR``). Medians (and minimums) over ``--repeat``
rounds, in ms of wall-clock time. The split
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
import tempfile
import time
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
_entrypoints._installed = lambda **how: timed("scan", scan, **how)
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
spent["from copy"] = float(_entrypoints._from_disk)
print(json.dumps(spent))
"""


VARIANTS = {"copy": {}, "scan": {"PLAIT_NO_CACHE": "1"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(HERE), "OTEL_SDK_DISABLED": "true"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' imports read compiled bytecode
    env.pop("PLAIT_NO_CACHE", None)
    rounds: dict[str, list[dict[str, float]]] = {variant: [] for variant in VARIANTS}
    with tempfile.TemporaryDirectory() as cache:

        def child(extra: dict[str, str]) -> dict[str, float]:
            done = subprocess.run(
                [sys.executable, "-c", CHILD],
                capture_output=True,
                text=True,
                cwd=HERE,
                env={**env, "PLAIT_CACHE_DIR": cache, **extra},
            )
            if done.returncode != 0:
                sys.exit(done.stderr)
            result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
            return result

        # A first round not counted: it writes any bytecode not yet written, which may
        # change a path entry's time (a new __pycache__), and the copy is kept only once
        # its stamps are 2 s old (_entrypoint_cache): wait, then let a process write it.
        for extra in VARIANTS.values():
            child(extra)
        time.sleep(2.1)
        child({})
        for _ in range(args.repeat):
            for variant, extra in VARIANTS.items():
                rounds[variant].append(child(extra))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"plait's first create_agent, 5 middleware by name: ms over {args.repeat} rounds")
    print(f"{'':<28}{'median':>16}{'min':>16}")
    print(f"{'':<28}" + f"{'copy':>8}{'scan':>8}" * 2)
    for label in rounds["copy"][0]:
        if label == "from copy":
            continue
        got = {
            variant: [each.get(label, 0.0) * 1e3 for each in kept]
            for variant, kept in rounds.items()
        }
        print(
            f"{label:<28}"
            + "".join(f"{statistics.median(got[v]):>8.2f}" for v in VARIANTS)
            + "".join(f"{min(got[v]):>8.2f}" for v in VARIANTS)
        )
    read = sum(int(each["from copy"]) for each in rounds["copy"])
    print(f"rounds that read the copy: {read} of {args.repeat}", end="")
    print(" (none: a path folder changed in the last two seconds?)" if not read else "")


if __name__ == "__main__":
    main()
