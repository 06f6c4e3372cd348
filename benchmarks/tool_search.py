"""Request size with 200 tools, with and without ``tool_search``, against the same
agent without it measured in the same run.

200 tools (names and one-line descriptions of a made-up business API, one string
parameter each) are given to an OpenAI model that calls a loopback server
(``plait.replay.ReplayServer``); the first request plait sends is measured: its body in
bytes and its tokens as ``plait.tokens`` estimates them (four characters a token), with
every tool sent (baseline) and with ``tool_search`` (the local ``search_tools``: the
deferred tools are left out until found). Then a search for one tool and the request
after it, which carries that tool too.

For Anthropic and OpenAI Responses the request still carries every tool, marked
``defer_loading``: the provider keeps them out of the prompt, so the billed input tokens
shrink as the local figure shows, but that cannot be measured offline.

Figures are printed, never asserted.

    python benchmarks/tool_search.py
"""

from __future__ import annotations

import json
from typing import Any

import plait
from plait.models.openai import OpenAIChatModel
from plait.replay import ReplayServer
from plait_tool_search import ToolSearchMiddleware

AREAS = ["invoice", "customer", "order", "shipment", "refund", "ticket", "report", "user"]
VERBS = ["create", "get", "list", "update", "delete", "archive", "export", "search", "merge"]


def tools(n: int) -> list[plait.Tool]:
    out = []
    for i in range(n):
        area, verb = AREAS[i % len(AREAS)], VERBS[(i // len(AREAS)) % len(VERBS)]
        name = f"{verb}_{area}_{i}"

        def run(value: str, _name: str = name) -> str:
            return _name

        out.append(
            plait.Tool(
                name,
                f"{verb.capitalize()} a {area} record in the back office (variant {i}).",
                {"type": "object", "properties": {"value": {"type": "string"}}},
                func=run,
            )
        )
    return out


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def sizes(middleware: list[Any], search: bool) -> list[tuple[int, int]]:
    """(bytes, estimated tokens) of each request of one run."""
    server = ReplayServer()
    try:
        if search:
            arguments = json.dumps({"query": "refund order export"})
            function = {"name": "search_tools", "arguments": arguments}
            found = {"id": "s1", "type": "function", "function": function}
            server.json(completion({"role": "assistant", "content": None, "tool_calls": [found]}))
        server.json(completion({"role": "assistant", "content": "done"}))
        model = OpenAIChatModel("gpt-4o", api_key="bench", base_url=server.url + "/v1")
        agent = plait.create_agent(model, tools=tools(200), middleware=middleware)
        agent.invoke("export the refunds of last week")
        out = []
        for received in server.requests:
            text = json.dumps(received.body)
            out.append((len(text.encode()), len(text) // 4))
        return out
    finally:
        server.close()


def main() -> None:
    (base,) = sizes([], search=False)
    first, after = sizes([ToolSearchMiddleware(max_results=5)], search=True)
    print("200 tools, first request of a run")
    print(f"{'':36} {'bytes':>8} {'~tokens':>8} {'vs all tools':>13}")
    print(f"{'every tool sent (baseline)':36} {base[0]:8d} {base[1]:8d} {1:12.3f}x")
    print(f"{'tool_search (local)':36} {first[0]:8d} {first[1]:8d} {first[1] / base[1]:12.3f}x")
    print(
        f"{'  after one search (5 tools found)':36} {after[0]:8d} {after[1]:8d} "
        f"{after[1] / base[1]:12.3f}x"
    )


if __name__ == "__main__":
    main()
