"""``model_router``: rules on the call, a classifier asked once per user turn, the route
recorded in the answer, and routing composed with ``model_fallback`` and ``model_retry``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, ProviderError
from plait.testing import FakeSleeper, ai, call
from plait.types import ModelRequest
from plait_model_fallback import ModelFallbackMiddleware
from plait_model_retry import ModelRetryMiddleware
from plait_model_router import ModelRouterMiddleware, ModelRoutingMiddleware, Rule


def model(name: str, *answers: Any) -> plait.ScriptedChatModel:
    return plait.ScriptedChatModel(list(answers), name=name)


@plait.tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def routes(message: Any) -> dict[str, Any]:
    record: dict[str, Any] = message.response_metadata["model_router"]
    return record


def test_the_first_matching_rule_chooses_the_model(make_agent: Any) -> None:
    fast, big = model("fast", "short answer"), model("big", "long answer")
    router = ModelRouterMiddleware(
        {"fast": fast, "big": big},
        rules=[Rule(route="big", min_tokens=50), Rule(route="fast", max_messages=3)],
    )
    agent = make_agent(model("main"), middleware=[router])
    result = agent.invoke("hi")
    assert result.text == "short answer"
    assert routes(result.messages[-1]) == {
        "route": "fast",
        "model": "scripted:fast",
        "reason": "rules[1]",
    }
    result = agent.invoke("please " * 60)
    assert result.text == "long answer"
    assert routes(result.messages[-1])["reason"] == "rules[0]"
    assert (fast.calls, big.calls) == (1, 1)


def test_tools_state_text_and_a_callable_are_conditions(make_agent: Any) -> None:
    tooling = model("tooling", ai("", call("lookup", key="k", id="c1")), "found it")
    plain = model("plain", "no tools needed", "hello back")

    def after_a_tool(request: ModelRequest) -> bool:
        return request.messages[-1].type == "tool"

    router = ModelRouterMiddleware(
        {"tooling": tooling, "plain": plain},
        rules=[
            {"route": "plain", "contains": "JUST CHAT"},
            {"route": "tooling", "when": after_a_tool},
            {"route": "tooling", "tools": True, "state": {"mode": "work"}},
        ],
        fallback_route="plain",
    )
    agent = make_agent(model("main"), tools=[lookup], middleware=[router])
    result = agent.invoke({"messages": [plait.HumanMessage("look k up")], "mode": "work"})
    assert result.text == "found it"
    assert [routes(m)["reason"] for m in result.messages if m.type == "ai"] == [
        "rules[2]",
        "rules[1]",
    ]
    assert agent.invoke("just chat with me").text == "no tools needed"
    result = agent.invoke({"messages": [plait.HumanMessage("hello")], "mode": "rest"})
    assert routes(result.messages[-1]) == {
        "route": "plain",
        "model": "scripted:plain",
        "reason": "fallback",
    }


def test_with_nothing_deciding_the_agents_model_answers(make_agent: Any) -> None:
    main = model("main", "from main")
    router = ModelRouterMiddleware({"big": model("big")}, rules=[Rule(route="big", tools=True)])
    result = make_agent(main, middleware=[router]).invoke("hi")
    assert result.text == "from main"
    assert routes(result.messages[-1]) == {
        "route": None,
        "model": "scripted:main",
        "reason": "fallback",
    }


def test_the_classifier_is_asked_once_per_user_turn(make_agent: Any) -> None:
    classifier = model("classifier", " `Reasoning`.", "fast")
    reasoning = model("reasoning", ai("", call("lookup", key="k", id="c1")), "thought hard")
    fast = model("fast", "quick")
    router = ModelRoutingMiddleware(  # LangChain's name and option shapes
        models={
            "fast": {"model": fast, "criteria": "Direct lookups"},
            "reasoning": {"model": reasoning, "criteria": "Architectural tradeoffs"},
        },
        routing_model=classifier,
    )
    agent = make_agent(model("main"), tools=[lookup], middleware=[router], checkpointer="memory")
    result = agent.invoke("compare two designs", thread_id="t")
    assert result.text == "thought hard"
    assert reasoning.calls == 2 and classifier.calls == 1  # the tool loop kept the route
    asked = classifier.requests[0]
    assert [m.text for m in asked.messages] == ["compare two designs"]
    assert asked.system_prompt == (
        "Choose the least expensive model likely to complete the user's task.\n\n"
        "Routes (name: when to choose it):\n- fast: Direct lookups\n"
        "- reasoning: Architectural tradeoffs\n\nAnswer with the route name only."
    )
    assert agent.invoke("what is k?", thread_id="t").text == "quick"
    assert classifier.calls == 2  # a new user turn is classified again
    assert routes(agent.get_state("t")["messages"][-1])["reason"] == "classifier"


def test_an_unknown_classifier_answer_takes_the_fallback_route(make_agent: Any) -> None:
    classifier = model("classifier", "medium please")
    cheap = model("cheap", "cheap answer")
    router = ModelRouterMiddleware(
        {"cheap": cheap, "big": model("big")}, routing_model=classifier, fallback_route="cheap"
    )
    result = asyncio.run(make_agent(model("main"), middleware=[router]).ainvoke("hi"))
    assert result.text == "cheap answer"
    assert routes(result.messages[-1])["reason"] == (
        "fallback (the classifier answered 'medium please')"
    )


def overloaded() -> ProviderError:
    return ProviderError("overloaded", status_code=529, provider="scripted", retryable=True)


def test_the_routed_model_falls_back_and_is_retried(make_agent: Any) -> None:
    big = model("big", overloaded())
    backup = model("backup", "backup answer")
    router = ModelRouterMiddleware({"big": big}, rules=[Rule(route="big")])
    main = model("main")
    agent = make_agent(main, middleware=[router, ModelFallbackMiddleware(backup)])
    result = agent.invoke("hi")
    assert result.text == "backup answer"
    assert (main.calls, big.calls, backup.calls) == (0, 1, 1)
    # the record says which route was taken; the backup's name says who answered
    assert routes(result.messages[-1])["route"] == "big"

    big = model("big", overloaded(), "second try")
    sleeper = FakeSleeper()
    retry = ModelRetryMiddleware(sleep=sleeper, asleep=sleeper.asleep, jitter=False)
    router = ModelRouterMiddleware({"big": big}, rules=[Rule(route="big")])
    result = make_agent(model("main"), middleware=[router, retry]).invoke("hi")
    assert result.text == "second try"
    assert big.calls == 2 and sleeper.delays == [1.0]


def test_by_name_with_rule_tables_as_in_an_agent_file(
    make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    options = {
        "models": {"fast": "openai:gpt-4.1-mini", "big": {"model": "openai:gpt-4.1"}},
        "rules": [{"route": "big", "min_messages": 10}, {"route": "fast"}],
    }
    agent = make_agent(model("main"), middleware=[("model_router", options)])
    (router,) = [m for m in agent.middleware if isinstance(m, ModelRouterMiddleware)]
    assert router.rules == (Rule(route="big", min_messages=10), Rule(route="fast"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"models": {}}, "option 'models': expected a non-empty mapping of route names"),
        ({"models": {"a": "llama3"}}, "option 'models': route 'a': expected a 'provider:model'"),
        (
            {"models": {"a": "openai:gpt-4.1"}, "rules": [{"route": "b"}]},
            "plugin 'model_router': option 'rules[0].route': expected a route named in "
            "models ('a'), got 'b'",
        ),
        (
            {"models": {"a": "openai:gpt-4.1"}, "fallback_route": "z"},
            "option 'fallback_route': expected a route named in models ('a'), got 'z'",
        ),
        (
            {"models": {"a": "openai:gpt-4.1"}, "rules": [{"route": "a", "max_tokens": -1}]},
            "max_tokens",
        ),
        ({"models": {"a": "openai:gpt-4.1"}, "routing_model": "llama3"}, "routing_model"),
        ({"models": {"a": "nosuch:model"}}, "option \"models['a']\""),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent(model("main"), middleware=[("model_router", options)])
    assert str(raised.value).startswith("plugin 'model_router': ")
    assert message in str(raised.value)


def test_the_route_shows_in_the_trace(
    make_agent: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PLAIT_TRACE", "1")
    router = ModelRouterMiddleware({"fast": model("fast", "ok")}, rules=[Rule(route="fast")])
    agent = make_agent(model("main"), middleware=[router])
    with caplog.at_level("INFO", logger="plait.trace"):
        agent.invoke("hi")
    (line,) = [r.getMessage() for r in caplog.records if ".wrap_model_call ->" in r.getMessage()]
    assert line.startswith("ModelRouterMiddleware.wrap_model_call -> ")
    assert "'model_router': {'route': 'fast', 'model': 'scripted:fast', 'reason': 'rules[0]'}" in (
        line
    )
