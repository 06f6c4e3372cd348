"""Provider overhead: what the HTTP provider SDK (``plait.models.http``) adds to a model call.

Against a loopback server answering at once (``plait.replay.ReplayServer``), prints the
wall time per call of a bare ``httpx.Client.post`` of a ready JSON body whose answer is
read with ``json.loads`` (the baseline: what any client pays), and of ``invoke`` on the
Chat Completions model and on Anthropic's (body built from messages and tools, headers,
the answer parsed into an ``AIMessage``), each as a ratio to the baseline measured in this
run; then the CPU time of preparing one call alone (``_call`` and ``_headers``: the part
every provider shares through the SDK's template), without the network. Each figure is
the best of ``--repeat`` rounds, every round running each configuration in turn.

    python benchmarks/provider_overhead.py [--calls 300] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import httpx

import plait
from plait.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from plait.models.http import HTTPChatModel
from plait.models.openai import OpenAIChatModel
from plait.replay import ReplayServer

WIDTH = 46  # of the row labels

OPENAI_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4.1",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "It is sunny in Oslo."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47},
}
CLAUDE_ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "It is sunny in Oslo."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 40, "output_tokens": 7},
}


@plait.tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


MESSAGES = [
    HumanMessage("Weather in Oslo?"),
    AIMessage("", tool_calls=[ToolCall("get_weather", {"city": "Oslo"}, id="call_1")]),
    ToolMessage("sunny in Oslo", tool_call_id="call_1"),
]
OPTIONS: dict[str, Any] = {"system_prompt": "Be brief.", "tools": [get_weather]}


def _per_call(run: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls


def _cpu_per_call(run: Callable[[], Any], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        run()
    return (time.process_time() - start) / calls


def _models(url: str) -> dict[str, tuple[HTTPChatModel, dict[str, Any]]]:
    models: dict[str, tuple[HTTPChatModel, dict[str, Any]]] = {
        "openai (Chat Completions)": (
            OpenAIChatModel("gpt-4.1", api_key="k", base_url=url),
            OPENAI_ANSWER,
        )
    }
    try:
        from plait_anthropic import AnthropicChatModel
    except ImportError:  # plait-anthropic not installed: the kernel's provider only
        return models
    claude = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=url)
    models["anthropic (Messages)"] = (claude, CLAUDE_ANSWER)
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    server = ReplayServer()
    models = _models(server.url)
    bare_body = json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": "?"}]})
    client = httpx.Client()

    def bare() -> Any:
        response = client.post(
            server.url + "/chat/completions",
            content=bare_body,
            headers={"content-type": "application/json", "authorization": "Bearer k"},
        )
        return json.loads(response.read())

    def queue(answer: dict[str, Any]) -> None:
        for _ in range(args.calls):
            server.json(answer)

    wall: dict[str, float] = {}
    prep: dict[str, float] = {}
    for _ in range(args.repeat):
        queue(OPENAI_ANSWER)
        wall["bare"] = min(wall.get("bare", 1e9), _per_call(bare, args.calls))
        for name, (model, answer) in models.items():
            queue(answer)
            took = _per_call(lambda m=model: m.invoke(MESSAGES, **OPTIONS), args.calls)
            wall[name] = min(wall.get(name, 1e9), took)

            def prepare(m: HTTPChatModel = model) -> Any:
                return m._headers(stream=False, call=m._call(MESSAGES, OPTIONS, stream=False))

            cpu = _cpu_per_call(prepare, args.calls * 10)
            prep[name] = min(prep.get(name, 1e9), cpu)
        server.requests.clear()
    client.close()
    server.close()

    base = wall["bare"]
    print(f"per call against a loopback server (best of {args.repeat}, {args.calls} calls):")
    print(f"  {'bare httpx post + json.loads':{WIDTH}s} {base * 1e6:8.1f} us   x 1.00")
    for name in models:
        label = f"invoke, {name}"
        print(f"  {label:{WIDTH}s} {wall[name] * 1e6:8.1f} us   x {wall[name] / base:.2f}")
    print("preparing one call (body and headers), CPU time, no network:")
    for name in models:
        share = prep[name] / wall[name]
        print(f"  {name:{WIDTH}s} {prep[name] * 1e6:8.1f} us   ({share:.1%} of its call)")


if __name__ == "__main__":
    main()
