"""What building an agent costs: ``create_agent`` with five middleware, warm (the same
agent built again in a process, as a server building one per request does) and cold (the
first in a fresh process: entry points scanned, the five plugins imported, each middleware
class validated once), and ``import plait`` plus the first construct.

The agent: one tool, a fake model, and the five middleware of ``vs_langchain.py``
(``model_call_limit``, ``tool_call_limit``, ``model_retry``, ``tool_retry``, ``pii``).
Beside it, measured in the same run: plait with no middleware (the kernel's floor), and
pydantic-ai's ``Agent`` with one tool on its ``FunctionModel`` when pydantic-ai is
installed. Each figure is the best of ``--repeat`` rounds (warm: the mean of ``--builds``
builds); ratios are to plait's own floor and to the peer. Goals (issue 38): warm <= 1 ms,
cold <= 5 ms.

    python benchmarks/construct_cost.py [--repeat 5] [--builds 200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PLAIT = """
import time
t0 = time.perf_counter()
import plait
from _vs_plait import MIDDLEWARE, TOOL, FakeModel
from _vs_common import Brain
plait.create_agent
t1 = time.perf_counter()
middleware = MIDDLEWARE if {with_middleware} else []
plait.create_agent(FakeModel(Brain(1)), tools=[TOOL], middleware=middleware)
t2 = time.perf_counter()
for _ in range({builds}):
    plait.create_agent(FakeModel(Brain(1)), tools=[TOOL], middleware=middleware)
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "cold": t2 - t1, "warm": (t3 - t2) / {builds}}}))
"""

PYDANTIC_AI = """
import time
t0 = time.perf_counter()
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from _vs_common import lookup
t1 = time.perf_counter()
model = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("done")]))
Agent(model, tools=[lookup])
t2 = time.perf_counter()
for _ in range({builds}):
    Agent(model, tools=[lookup])
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "cold": t2 - t1, "warm": (t3 - t2) / {builds}}}))
"""


def _run(code: str) -> dict[str, float] | None:
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + code],
        capture_output=True,
        text=True,
        cwd=HERE,
        env={"PYTHONPATH": str(HERE), "PATH": ""},
    )
    if done.returncode != 0:
        return None
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--builds", type=int, default=200)
    args = parser.parse_args()
    cases = {
        "plait, 5 middleware": PLAIT.format(with_middleware=True, builds=args.builds),
        "plait, no middleware": PLAIT.format(with_middleware=False, builds=args.builds),
        "pydantic-ai Agent": PYDANTIC_AI.format(builds=args.builds),
    }
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):
        for label, code in cases.items():
            result = _run(code)
            if result is None:
                continue
            kept = best.setdefault(label, result)
            for key, value in result.items():
                kept[key] = min(kept[key], value)
    floor = best["plait, no middleware"]
    peer = best.get("pydantic-ai Agent")
    print(
        f"{'':<22}{'warm (ms)':>10}{'cold (ms)':>10}{'import+cold':>12}"
        f"{'warm/floor':>11}{'warm/peer':>10}{'imp+cold/peer':>14}"
    )
    for label, got in best.items():
        total = got["import"] + got["cold"]
        row = f"{label:<22}{got['warm'] * 1e3:>10.3f}{got['cold'] * 1e3:>10.2f}{total * 1e3:>12.1f}"
        row += f"{got['warm'] / floor['warm']:>11.2f}"
        if peer is not None:
            row += f"{got['warm'] / peer['warm']:>10.2f}"
            row += f"{total / (peer['import'] + peer['cold']):>14.2f}"
        print(row)
    if peer is None:
        print("(pydantic-ai is not installed: no peer column)")


if __name__ == "__main__":
    main()
