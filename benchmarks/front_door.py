"""The front door: how long the ``plait`` command takes before it does any work.

Prints, for ``plait --help``, ``plait plugins`` (read from distribution metadata, no
plugin imported) and ``plait plugins --verbose`` (imports each middleware to read its
options), the wall time of a fresh process, beside ``python -c pass`` (the interpreter's
own start, measured in the same run) and as the time above it. Each figure is the best of
``--repeat`` runs, taken in turn, so load elsewhere on a shared machine weighs on every
row alike; the load average before and after is printed beside them. Goals: ``plait --help``
< 0.3 s, ``plait plugins`` < 1 s. ``plait --help`` loads each plugin's ``plait.commands``
entry point (for its line of help), so a plugin whose command module imports its heavy
dependencies shows here (plait-evals importing pydantic-evals cost ~0.9 s before it was
made lazy); ``tests/core/cli/test_cli_plugins.py`` checks help imports no third-party
package.

    python benchmarks/front_door.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "plait --help": [sys.executable, "-m", "plait", "--help"],
    "plait plugins": [sys.executable, "-m", "plait", "plugins"],
    "plait plugins --verbose": [sys.executable, "-m", "plait", "plugins", "--verbose"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    load_before = os.getloadavg()
    best = dict.fromkeys(COMMANDS, float("inf"))
    for _ in range(args.repeat):
        for label, command in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            best[label] = min(best[label], time.perf_counter() - start)
    base = best["python -c pass"]
    load_after = os.getloadavg()
    print(f"{sys.executable}, best of {args.repeat}")
    loads = [" ".join(f"{x:.2f}" for x in load) for load in (load_before, load_after)]
    print(f"load average (1, 5, 15 min): before {loads[0]}, after {loads[1]}")
    print(f"{'command':<26}{'wall (s)':>10}{'above python':>15}{'x python':>10}")
    for label, seconds in best.items():
        print(f"{label:<26}{seconds:>10.3f}{seconds - base:>15.3f}{seconds / base:>10.2f}")


if __name__ == "__main__":
    main()
