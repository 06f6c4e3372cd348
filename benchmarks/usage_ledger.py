"""Usage ledger: what recording each model call in the run's ledger (``plait.usage``)
costs per call.

Prints, per ``ScriptedChatModel.invoke`` call, the time outside a run (straight to the
provider) and inside a run's ledger: with usage reported, with no usage (plait estimates
it from the messages), and nested two runs deep (recorded in both ledgers), each as a
ratio to the straight call measured in this run. Each figure is the best of ``--repeat``
rounds, every round running each configuration once in turn.

    python benchmarks/usage_ledger.py [--calls 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from plait import usage
from plait.messages import AIMessage, HumanMessage, Usage
from plait.models.scripted import ScriptedChatModel

MESSAGES = [HumanMessage("What is the weather in Paris today? " * 8)]


def _model(n: int, reported: bool) -> ScriptedChatModel:
    answer = AIMessage("Sunny, 21 degrees.", usage=Usage(120, 8) if reported else None)
    return ScriptedChatModel([answer] * n)


def _time(calls: int, make: Callable[[], Callable[[], None]]) -> float:
    run = make()
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) / calls


def straight(calls: int) -> Callable[[], None]:
    model = _model(calls, True)

    def run() -> None:
        for _ in range(calls):
            model.invoke(MESSAGES)

    return run


def in_ledger(calls: int, reported: bool = True, depth: int = 1) -> Callable[[], None]:
    model = _model(calls, reported)

    def run() -> None:
        ledgers = [usage.RunUsage()]
        for _ in range(depth - 1):
            ledgers.append(usage.RunUsage(parent=ledgers[-1], path=(*ledgers[-1].path, "c")))
        with ledgers[-1].active():
            for _ in range(calls):
                model.invoke(MESSAGES)
        assert ledgers[0].calls == calls

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.calls
    configs: dict[str, Callable[[], Callable[[], None]]] = {
        "straight to the provider (no run)": lambda: straight(n),
        "in a run's ledger, usage reported": lambda: in_ledger(n),
        "in a run's ledger, usage estimated": lambda: in_ledger(n, reported=False),
        "nested two runs deep, usage reported": lambda: in_ledger(n, depth=2),
    }
    best = dict.fromkeys(configs, float("inf"))
    for _ in range(args.repeat):
        for name, make in configs.items():
            best[name] = min(best[name], _time(n, make))
    base = best["straight to the provider (no run)"]
    for name, seconds in best.items():
        print(f"{name:<40} {seconds * 1e6:7.2f} µs/call  {seconds / base:5.2f}x")


if __name__ == "__main__":
    main()
