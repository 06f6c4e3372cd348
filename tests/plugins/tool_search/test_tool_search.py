"""``tool_search``: deferred tools stay out of the model's requests until found — by the
local BM25 ``search_tools``, or by the provider's own search (what plait sends to
Anthropic and OpenAI Responses, checked over loopback HTTP)."""

from __future__ import annotations

from typing import Any

import pytest
import recorded

import plait
from plait.errors import ConfigError
from plait.replay import ReplayServer
from plait.testing import ai, call
from plait_anthropic import AnthropicChatModel
from plait_openai_responses import OpenAIResponsesModel
from plait_tool_search import BM25, ProviderToolSearchMiddleware, ToolSearchMiddleware

TOPICS = [
    ("convert_currency", "Convert an amount between two currencies at today's exchange rate."),
    ("get_weather", "Current weather and forecast for a city."),
    ("send_email", "Send an e-mail to a recipient."),
    ("create_invoice", "Create an invoice for a customer."),
    ("translate_text", "Translate text into another language."),
]


def make(name: str, description: str) -> plait.Tool:
    def run(value: str) -> str:
        return f"{name}({value})"

    run.__name__ = name
    run.__doc__ = description
    return plait.tool(run)


TOOLS = [make(n, d) for n, d in TOPICS]


def offered(request: Any) -> list[str]:
    return [t.name for t in request.tools]


def test_bm25_ranks_by_name_and_description() -> None:
    index = BM25([f"{n} {d}" for n, d in TOPICS])
    assert index.top("exchange rate for currencies", 2)[0] == 0
    assert index.top("weather forecast", 1) == [1]
    assert index.top("sendEmail", 1) == [2]  # camelCase split like snake_case
    assert index.top("nothing relevant here", 3) == []


def test_deferred_tools_appear_once_the_local_search_finds_them(make_agent: Any) -> None:
    model = plait.ScriptedChatModel(
        [
            ai("", call("search_tools", query="currency exchange rate", id="s1")),
            ai("", call("convert_currency", value="10 EUR", id="c1")),
            "10 EUR is 11 USD.",
            "Still here.",
        ]
    )
    agent = make_agent(model, tools=TOOLS, middleware=[ToolSearchMiddleware(max_results=1)])
    result = agent.invoke("convert 10 EUR", thread_id="t")
    assert result.text == "10 EUR is 11 USD."
    requests = model.requests
    assert offered(requests[0]) == ["search_tools"]
    assert result.messages[2].text == (
        "Found 1 tool(s); you can call them now:\n- convert_currency: Convert an amount "
        "between two currencies at today's exchange rate."
    )
    assert offered(requests[1]) == ["convert_currency", "search_tools"]
    assert result.messages[4].text == "convert_currency(10 EUR)"
    # found tools stay found for the thread
    agent.invoke("and 20?", thread_id="t")
    assert offered(requests[3]) == ["convert_currency", "search_tools"]
    assert agent.get_state("t")["tool_search_found"] == ["convert_currency"]


def test_only_the_listed_tools_are_deferred(make_agent: Any) -> None:
    model = plait.ScriptedChatModel(
        [ai("", call("search_tools", query="zebra", id="s1")), "nothing found"]
    )
    agent = make_agent(
        model,
        tools=TOOLS,
        middleware=[ToolSearchMiddleware(deferred=["create_invoice", "translate_text"])],
    )
    result = agent.invoke("hi")
    assert offered(model.requests[0]) == [
        "convert_currency",
        "get_weather",
        "send_email",
        "search_tools",
    ]
    assert result.messages[2].text == "No tool matches 'zebra'. Try other words."


def anthropic_answer(server: ReplayServer) -> None:
    server.json(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 1},
        }
    )


def test_provider_tool_search_without_searchable_tools_defers_nothing(
    replay_server: ReplayServer, make_agent: Any
) -> None:
    # LangChain 1.5's ProviderToolSearchMiddleware() passes requests through when no tool
    # is searchable; it used to hide every tool (deferred=None) and add the search tool.
    anthropic_answer(replay_server)
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=replay_server.url)
    agent = plait.create_agent(model, tools=TOOLS, middleware=[ProviderToolSearchMiddleware()])
    agent.invoke("hi")
    sent = replay_server.last
    assert [t["name"] for t in sent.body["tools"]] == [n for n, _ in TOPICS]
    assert not any("defer_loading" in t for t in sent.body["tools"])
    assert "advanced-tool-use" not in sent.headers.get("anthropic-beta", "")
    local = make_agent(["ok"], tools=TOOLS, middleware=[ProviderToolSearchMiddleware()])
    local.invoke("hi")
    assert offered(local.model.requests[0]) == [n for n, _ in TOPICS]


def test_anthropic_gets_defer_loading_and_its_tool_search_tool(
    replay_server: ReplayServer,
) -> None:
    anthropic_answer(replay_server)
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=replay_server.url)
    agent = plait.create_agent(
        model, tools=TOOLS, middleware=[ProviderToolSearchMiddleware(searchable_tools=TOOLS[3:])]
    )
    agent.invoke("hi")
    sent = replay_server.last
    tools = sent.body["tools"]
    assert [t["name"] for t in tools] == [
        "convert_currency",
        "get_weather",
        "send_email",
        "create_invoice",
        "translate_text",
        "tool_search_tool_bm25",
    ]
    assert [t.get("defer_loading", False) for t in tools[:5]] == [False] * 3 + [True] * 2
    assert tools[5] == {"name": "tool_search_tool_bm25", "type": "tool_search_tool_bm25_20251119"}
    assert "advanced-tool-use-2025-11-20" in sent.headers["anthropic-beta"]


@recorded.needs(recorded.RESPONSES)
def test_openai_responses_gets_defer_loading_and_tool_search(
    replay_server: ReplayServer,
) -> None:
    body = recorded.interactions(recorded.RESPONSES)["resp_text_plain"]["response"]["body"]
    replay_server.raw(body.encode("utf-8"))
    model = OpenAIResponsesModel("gpt-4o", api_key="k", base_url=replay_server.url + "/v1")
    agent = plait.create_agent(model, tools=TOOLS[:2], middleware=["tool_search"])
    agent.invoke("hi")
    tools = replay_server.last.body["tools"]
    assert [t.get("name", t["type"]) for t in tools] == [
        "convert_currency",
        "get_weather",
        "tool_search",
    ]
    assert [t.get("defer_loading") for t in tools] == [True, True, None]
    assert tools[2] == {"type": "tool_search"}


def test_local_mode_with_a_provider_that_has_a_search(replay_server: ReplayServer) -> None:
    anthropic_answer(replay_server)
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=replay_server.url)
    agent = plait.create_agent(model, tools=TOOLS, middleware=[ToolSearchMiddleware(mode="local")])
    agent.invoke("hi")
    assert [t["name"] for t in replay_server.last.body["tools"]] == ["search_tools"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "native"}, "option 'mode': expected one of 'auto', 'local', got 'native'"),
        ({"max_results": 0}, "option 'max_results': expected an int >= 1, got 0"),
        ({"deferred": "x"}, "option 'deferred': expected a list or None, got 'x'"),
        (
            {"deferred": ["send_mail"]},
            "option 'deferred' names a tool the agent does not have: 'send_mail' "
            "(did you mean 'send_email'?)",
        ),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent([], tools=TOOLS, middleware=[("tool_search", options)])
    assert str(raised.value).startswith("plugin 'tool_search': ")
    assert message in str(raised.value)
