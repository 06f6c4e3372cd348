"""A repeated eval run with and without ``response_cache``, against the same run without
it measured in the same process.

The eval: 20 questions, each a tool loop of two model calls (a tool call, then the
answer), asked of an OpenAI model over real HTTP to a loopback server
(``plait.replay.ReplayServer``) that answers at once — so the time saved is the least a
real provider would save (no network latency, no generation time). Each configuration
runs the eval twice (a repeated eval, as when a prompt or a grader is being tuned);
printed: the provider requests of the second pass, its time as a ratio to the second
pass without the cache, and the tokens it spent.

Figures are printed, never asserted.

    python benchmarks/response_cache.py
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import plait
from plait.models.openai import OpenAIChatModel
from plait.replay import ReplayServer
from plait_response_cache import ResponseCacheMiddleware

QUESTIONS = [f"What is the stock level of item {n}?" for n in range(20)]


@plait.tool
def stock(item: int) -> str:
    """The stock level of an item."""
    return f"{item * 7 % 50} units"


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140},
    }


def queue_eval(server: ReplayServer) -> None:
    for n in range(len(QUESTIONS)):
        arguments = json.dumps({"item": n})
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "stock", "arguments": arguments},
        }
        server.json(
            completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")
        )
        server.json(completion({"role": "assistant", "content": f"Item {n} is in stock."}, "stop"))


def run_eval(agent: plait.Agent) -> tuple[float, int]:
    started = time.perf_counter()
    tokens = 0
    for question in QUESTIONS:
        tokens += agent.invoke(question).usage.total_tokens
    return time.perf_counter() - started, tokens


def second_pass(middleware: list[Any]) -> tuple[float, int, int]:
    """(seconds, provider requests, tokens) of the eval's second pass."""
    server = ReplayServer()
    try:
        queue_eval(server)
        queue_eval(server)  # enough answers for both passes without a cache
        model = OpenAIChatModel("gpt-4o", api_key="bench", base_url=server.url + "/v1")
        agent = plait.create_agent(model, tools=[stock], middleware=middleware)
        run_eval(agent)
        before = len(server.requests)
        seconds, tokens = run_eval(agent)
        return seconds, len(server.requests) - before, tokens
    finally:
        server.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'cache.db'}"
        runs = {
            "no cache (baseline)": second_pass([]),
            "response_cache, memory": second_pass([ResponseCacheMiddleware(url="memory")]),
            "response_cache, SQLite": second_pass([ResponseCacheMiddleware(url=url)]),
        }
    base = runs["no cache (baseline)"][0]
    print(f"repeated eval: {len(QUESTIONS)} questions, {2 * len(QUESTIONS)} model calls a pass")
    print(f"{'second pass':28} {'requests':>8} {'tokens':>7} {'time vs baseline':>17}")
    for name, (seconds, requests, tokens) in runs.items():
        print(f"{name:28} {requests:8d} {tokens:7d} {seconds / base:16.2f}x")


if __name__ == "__main__":
    main()
