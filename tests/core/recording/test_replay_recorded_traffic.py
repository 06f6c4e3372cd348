"""Record a streamed run whose answers are real OpenAI bytes (``../shared/recorded``,
served in small pieces from loopback), then replay it with no server: the same messages
and the same streamed text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recorded import PROVIDERS, interactions, needs
from replay_server import ReplayServer

import plait
from plait.messages import unstructure_message
from plait.models.openai import OpenAIChatModel

pytestmark = needs(PROVIDERS)


@plait.tool
def get_weather(location: str) -> str:
    """The weather at a place."""
    return f"{location}: 22C and clear"


def _messages(agent: Any) -> list[dict[str, Any]]:
    """The thread's messages as data, without the ids a run makes up for the input."""
    plain = []
    for m in agent.get_state("t")["messages"]:
        data = unstructure_message(m)
        if m.type == "human":
            data.pop("id")
        plain.append(data)
    return plain


def test_real_streamed_answers_replay_offline(tmp_path: Path) -> None:
    traffic = interactions(PROVIDERS)
    path = tmp_path / "runs.jsonl"
    server = ReplayServer()
    try:
        for name in ("oai_stream_tool_call", "oai_stream_tool_result_roundtrip"):
            server.sse(traffic[name]["response"]["body"], split=97)
        model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key="sk-test")
        agent = plait.create_agent(model, [get_weather], checkpointer="memory", record=path)
        recorded = list(
            agent.stream("what's the weather in NYC?", thread_id="t", stream_mode="messages")
        )
        assert len(server.requests) == 2
    finally:
        server.close()
    offline_model = OpenAIChatModel("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="k")
    offline = plait.create_agent(offline_model, [get_weather], checkpointer="memory", replay=path)
    replayed = list(
        offline.stream("what's the weather in NYC?", thread_id="t", stream_mode="messages")
    )

    def text(items: list[Any]) -> str:
        return "".join(c.content for c, _ in items if isinstance(c.content, str))

    assert text(replayed) == text(recorded) != ""
    assert _messages(offline) == _messages(agent)
    assert [m["type"] for m in _messages(agent)] == ["human", "ai", "tool", "ai"]
