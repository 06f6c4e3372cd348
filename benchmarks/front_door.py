"""The front door: how long the ``plait`` command takes before it does any work.

Prints, for ``plait --help``, ``plait plugins`` (read from distribution metadata, no
plugin imported) and ``plait plugins --verbose`` (imports each middleware to read its
options), the wall time of a fresh process, beside ``python -c pass`` (the interpreter's
own start, measured in the same run) and as the time above it. Each figure is the best of
``--repeat`` runs, taken in turn, so load elsewhere on a shared machine weighs on every
row alike. Goals: ``plait --help`` < 0.3 s, ``plait plugins`` < 1 s.

    python benchmarks/front_door.py [--repeat 7]
"""

from __future__ import annotations

import argparse
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
    best = dict.fromkeys(COMMANDS, float("inf"))
    for _ in range(args.repeat):
        for label, command in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            best[label] = min(best[label], time.perf_counter() - start)
    base = best["python -c pass"]
    print(f"{'command':<26}{'wall (s)':>10}{'above python':>15}{'x python':>10}")
    for label, seconds in best.items():
        print(f"{label:<26}{seconds:>10.3f}{seconds - base:>15.3f}{seconds / base:>10.2f}")


if __name__ == "__main__":
    main()
