"""``response_cache``: a repeated request is answered from the cache (memory, the agent's
store, SQLite, PostgreSQL) with the hit in usage; errors and unfinished streams are never
stored; TTL and opting out."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from postgres_server import fresh_postgres_schema

import plait
from plait import effects
from plait.errors import ConfigError
from plait.messages import HumanMessage, Usage
from plait.testing import ai, call
from plait_response_cache import ResponseCacheMiddleware, no_cache


def scripted(*answers: Any) -> plait.ScriptedChatModel:
    return plait.ScriptedChatModel(list(answers))


def test_the_same_request_is_answered_from_the_cache(make_agent: Any) -> None:
    model = scripted(ai("Paris.", usage=Usage(10, 2)), ai("Rome.", usage=Usage(10, 2)))
    agent = make_agent(model, middleware=[ResponseCacheMiddleware()], checkpointer=None)
    first = agent.invoke("capital of France?")
    again = agent.invoke("capital of France?")
    assert first.text == again.text == "Paris."
    assert model.calls == 1
    assert first.usage.total_tokens == 12 and first.usage.cache_hits == 0
    assert again.usage.total_tokens == 0 and again.usage.cache_hits == 1
    assert again.messages[-1].response_metadata["cache_hit"] is True
    assert "cache_hit" not in first.messages[-1].response_metadata
    assert agent.invoke("capital of Italy?").text == "Rome."  # another request: a miss
    assert model.calls == 2


def test_hits_and_stores_show_in_the_trace(
    make_agent: Any, caplog: pytest.LogCaptureFixture
) -> None:
    agent = make_agent(scripted("Paris."), middleware=["response_cache"], checkpointer=None)
    with caplog.at_level("INFO", logger="plait.trace"):
        agent.invoke("capital of France?")
        agent.invoke("capital of France?")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("response_")]
    assert [line.split()[1] for line in lines] == ["stored", "hit"]
    assert lines[0].split()[2] == lines[1].split()[2]  # the same request key
    assert lines[1].endswith("(scripted:scripted)")


def test_a_tool_loop_is_replayed_call_by_call(make_agent: Any) -> None:
    ran: list[str] = []

    @plait.tool
    def weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "sunny"

    model = scripted(ai("", call("weather", city="Oslo", id="c1")), "Sunny in Oslo.")
    agent = make_agent(
        model, tools=[weather], middleware=[ResponseCacheMiddleware()], checkpointer=None
    )
    assert agent.invoke("weather in Oslo?").text == "Sunny in Oslo."
    result = agent.invoke("weather in Oslo?")
    assert result.text == "Sunny in Oslo."
    assert model.calls == 2 and ran == ["Oslo", "Oslo"]  # tools still run; models do not
    assert result.usage.cache_hits == 2


def test_an_error_is_never_cached(make_agent: Any) -> None:
    model = scripted(ConnectionError("reset"), "answer")
    agent = make_agent(model, middleware=[ResponseCacheMiddleware()], checkpointer=None)
    with pytest.raises(ConnectionError):
        agent.invoke("hi")
    assert agent.invoke("hi").text == "answer"
    assert model.calls == 2


def test_a_stream_is_cached_only_when_read_to_its_end() -> None:
    model = scripted("streamed answer", "second answer")
    middleware = ResponseCacheMiddleware()
    plait.create_agent(model, middleware=[middleware])  # builds its performer
    question = [HumanMessage("hi")]
    with effects.performing(middleware.performer):
        partial = model.stream(question)
        next(iter(partial))
        partial.close()  # the reader stopped: nothing stored
        assert "".join(c.content for c in model.stream(question)) == "second answer"
        replayed = list(model.stream(question))
        answer = asyncio.run(model.ainvoke(question))  # stored from a stream, asked whole
    assert model.calls == 2
    assert "".join(c.content for c in replayed) == "second answer"
    assert replayed[-1].usage == Usage(cache_hits=1)
    assert answer.text == "second answer" and answer.response_metadata["cache_hit"] is True


def test_a_streamed_run_reads_a_cached_answer(make_agent: Any) -> None:
    model = scripted("hello there")
    agent = make_agent(model, middleware=[ResponseCacheMiddleware()], checkpointer=None)
    agent.invoke("hi")
    chunks = [c for c, _ in agent.stream("hi", stream_mode="messages")]
    assert [c.content for c in chunks] == ["hello there", ""]
    assert chunks[-1].usage == Usage(cache_hits=1)
    assert chunks[-1].response_metadata == {"cache_hit": True}
    assert model.calls == 1


def test_entries_expire_after_ttl(make_agent: Any) -> None:
    now = [1000.0]
    model = scripted("one", "two")
    cache = ResponseCacheMiddleware(ttl=60, clock=lambda: now[0])
    agent = make_agent(model, middleware=[cache], checkpointer=None)
    assert agent.invoke("hi").text == "one"
    now[0] += 59
    assert agent.invoke("hi").text == "one"
    now[0] += 2
    assert agent.invoke("hi").text == "two"
    assert model.calls == 2


def test_opting_out_per_call(make_agent: Any) -> None:
    model = scripted("one", "two", "three", "four")
    skip_long = ResponseCacheMiddleware(skip=lambda c: len(c.messages[-1].text) > 10)
    agent = make_agent(model, middleware=[skip_long], checkpointer=None)
    agent.invoke("a long question")
    assert agent.invoke("a long question").text == "two"
    agent.invoke("short")
    with no_cache():
        assert agent.invoke("short").text == "four"
    assert model.calls == 4


def test_sqlite_is_shared_between_agents(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cache.db'}"
    first = scripted("cached on disk")
    plait.create_agent(first, middleware=[ResponseCacheMiddleware(url=url)]).invoke("hi")
    second = scripted("never asked")
    agent = plait.create_agent(second, middleware=[("response_cache", {"url": url})])
    assert agent.invoke("hi").text == "cached on disk"
    assert second.calls == 0


def test_the_agents_own_store_is_used_by_default(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    first = scripted("from the store")
    plait.create_agent(first, store=store, middleware=["response_cache"]).invoke("hi")
    second = scripted("never asked")
    agent = plait.create_agent(second, store=store, middleware=["response_cache"])
    assert agent.invoke("hi").text == "from the store"
    assert second.calls == 0
    item = agent.store.search(("plait", "response_cache"))
    assert len(item) == 1 and item[0].value["answer"]["content"] == "from the store"


def test_postgresql() -> None:
    with fresh_postgres_schema() as url:
        first = scripted("from postgres")
        plait.create_agent(first, middleware=[ResponseCacheMiddleware(url=url)]).invoke("hi")
        second = scripted("never asked")
        agent = plait.create_agent(second, middleware=[ResponseCacheMiddleware(url=url)])
        assert asyncio.run(agent.ainvoke("hi")).text == "from postgres"
        assert second.calls == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ttl": -1}, "option 'ttl': expected a number >= 0 or None, got -1"),
        ({"url": ""}, "option 'url'"),
        ({"url": "redis://x"}, "option 'url': expected a store URL whose scheme is one of"),
        ({"skip": 3}, "option 'skip'"),
    ],
)
def test_bad_options_fail_at_create_agent(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        plait.create_agent(scripted(), middleware=[("response_cache", options)])
    assert str(raised.value).startswith("plugin 'response_cache': ")
    assert message in str(raised.value)
