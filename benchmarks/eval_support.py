"""The example eval: ``plait eval examples/support_eval.yaml examples/support.toml``.

Prints the wall time of the 10-case dataset run through pydantic-evals (each case a
fresh agent, traced into its span tree, scored), in process and as the ``plait eval``
command a CI job runs (interpreter start and imports included), and as a ratio to the
baseline measured in this run: the same ten conversations (prompts and resumes) run one
after another on fresh agents with no harness, no tracing and no scoring. Best of
``--repeat``.

    python benchmarks/eval_support.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio

import plait
from plait.agentfile import load_agent
from plait_evals import Evaluation, load_dataset

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "examples" / "support_eval.yaml"
AGENT = ROOT / "examples" / "support.toml"


def bare() -> float:
    """The conversations alone: each case's prompt, then its resumes, on a fresh agent."""
    data = load_dataset(DATASET)
    start = time.perf_counter()
    for given in data.inputs.values():
        agent = load_agent(AGENT)
        thread = uuid.uuid4().hex
        agent.invoke(given.prompt, thread_id=thread)
        for value in given.resume:
            agent.invoke(plait.Command(resume=value), thread_id=thread)
        agent.close()
    return time.perf_counter() - start


def in_process() -> tuple[float, int]:
    evaluation = Evaluation(load_dataset(DATASET), AGENT)
    start = time.perf_counter()
    report = anyio.run(lambda: evaluation.run())
    elapsed = time.perf_counter() - start
    passed = sum(all(a.value is True for a in c.assertions.values()) for c in report.cases)
    return elapsed, passed


def command() -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "plait", "eval", str(DATASET), str(AGENT), "--fail-under", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"plait eval failed ({done.returncode}): {done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bare()  # warm imports and the tool module
    base = min(bare() for _ in range(args.repeat))
    runs = [in_process() for _ in range(args.repeat)]
    evald = min(t for t, _ in runs)
    passed = runs[-1][1]
    cli = min(command() for _ in range(args.repeat))
    print(f"10 conversations, no harness (baseline): {base * 1000:8.1f} ms")
    print(
        f"eval in process ({passed}/10 cases pass):    {evald * 1000:8.1f} ms"
        f"  ({evald / base:.2f}x baseline)"
    )
    print(
        f"plait eval command, whole process:      {cli * 1000:8.1f} ms"
        f"  ({cli / base:.2f}x baseline)"
    )


if __name__ == "__main__":
    main()
