"""What holding streamed text back for output guardrails costs.

A scripted answer of ``--sentences`` sentences streams word by word through
``agent.stream(mode="messages")``. Prints, for no middleware (the baseline), a keyword
guardrail with ``release="sentence"`` and with ``release="end"``, and a guardrail that
takes 1 ms (a small local classifier) with ``release="sentence"``: the whole stream's time
and the time to the first streamed text, each as a ratio to the baseline measured in this
run, and the most words a reader waited for at once (the held-back text released in one
chunk).

    python benchmarks/guardrails_stream.py [--sentences 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import plait
from plait.messages import AIMessageChunk
from plait.models.scripted import ScriptedChatModel
from plait_guardrails import GuardrailData, GuardrailsMiddleware


def answer(sentences: int) -> str:
    return " ".join(
        f"Sentence {i} says the weather in town number {i} is fine today." for i in range(sentences)
    )


def slow_check(data: GuardrailData) -> None:
    time.sleep(0.001)


def measure(middleware: list[Any], text: str, repeat: int) -> tuple[float, float, int]:
    """Best whole-stream time and best time to first text (seconds), and the largest
    number of words released in one chunk."""
    total = first = float("inf")
    largest = 0
    for _ in range(repeat):
        agent = plait.create_agent(ScriptedChatModel([text]), middleware=middleware)
        start = time.perf_counter()
        seen_first: float | None = None
        for event in agent.stream("go", mode="messages"):
            data = event.data
            if isinstance(data, AIMessageChunk) and data.content:
                if seen_first is None:
                    seen_first = time.perf_counter() - start
                largest = max(largest, len(data.content.split()))
        total = min(total, time.perf_counter() - start)
        first = min(first, seen_first if seen_first is not None else total)
    return total, first, largest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    text = answer(args.sentences)
    keywords = [{"keywords": ["launch code", "password"]}]
    cases: list[tuple[str, list[Any]]] = [
        ("no middleware (baseline)", []),
        ("keywords, release='sentence'", [GuardrailsMiddleware(output=keywords)]),
        ("keywords, release='end'", [GuardrailsMiddleware(output=keywords, release="end")]),
        ("1 ms check, release='sentence'", [GuardrailsMiddleware(output=[slow_check])]),
    ]
    words = len(text.split())
    print(f"{args.sentences} sentences, {words} words streamed word by word")
    base_total = base_first = 0.0
    for name, middleware in cases:
        total, first, largest = measure(middleware, text, args.repeat)
        if not middleware:
            base_total, base_first = total, first
        print(
            f"{name:32} stream {total * 1e3:8.2f} ms ({total / base_total:5.2f}x)  "
            f"first text {first * 1e3:7.2f} ms ({first / base_first:6.2f}x)  "
            f"largest chunk {largest:4} words"
        )


if __name__ == "__main__":
    main()
