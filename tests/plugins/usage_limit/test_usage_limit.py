"""``usage_limit``: token and cost limits per run and per thread, both exits, prices."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, UsageLimitExceededError
from plait.messages import Usage
from plait.models.scripted import ScriptedChatModel
from plait.testing import ai, call, transcript
from plait_usage_limit import UsageLimitMiddleware

THREAD = "usage_limit_thread"
RUN = "usage_limit_run"
SPEND = Usage(100, 20)
PRICES = {"input": 2.0, "output": 10.0}  # 100 in + 20 out = $0.0004


@plait.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def looping(n: int, usage: Usage = SPEND) -> list[Any]:
    """A model calling ``ping`` ``n`` times, each answer spending ``usage``."""
    return [ai("", call("ping"), usage=usage) for _ in range(n)] + [ai("done", usage=usage)]


def test_run_limit_lets_the_crossing_call_finish_and_stops_before_the_next(
    make_agent: Any,
) -> None:
    limiter = UsageLimitMiddleware(run_limit={"total_tokens": 250})
    agent = make_agent(looping(5), tools=[ping], middleware=[limiter])
    result = agent.invoke("go")
    assert agent.model.calls == 3  # 120, 240, then 360: the third crossed 250
    assert transcript(result.messages)[-3:] == [
        ("ai", ""),
        ("tool", "pong"),
        (
            "ai",
            "Usage limit reached (run limit: total_tokens 360/250). The agent stopped without "
            "calling the model again; start a new conversation or raise the limit to continue.",
        ),
    ]
    assert result.messages[-1].metadata["usage_limit"]["run"] == {
        "input_tokens": 300,
        "output_tokens": 60,
        "cost": 0.0,
    }
    assert result.usage.total_tokens == 360
    assert result.usage.cost is None  # the scripted model has no price


def test_error_exit_raises_naming_limit_and_counts_and_keeps_history_valid(
    make_agent: Any,
) -> None:
    limiter = UsageLimitMiddleware(run_limit={"output_tokens": 20}, exit_behavior="error")
    agent = make_agent(looping(3), tools=[ping], middleware=[limiter])
    with pytest.raises(UsageLimitExceededError) as raised:
        agent.invoke("go", thread_id="t")
    assert str(raised.value) == "Usage limit reached (run limit: output_tokens 20/20)."
    assert agent.model.calls == 1
    assert [m.type for m in agent.get_state("t")["messages"]] == ["human", "ai", "tool"]


def test_cost_limit_with_prices_option_and_cost_in_result_usage(make_agent: Any) -> None:
    limiter = UsageLimitMiddleware(run_limit={"cost": 0.001}, prices=PRICES)
    agent = make_agent(looping(5), tools=[ping], middleware=[limiter])
    result = agent.invoke("go")
    assert agent.model.calls == 3  # $0.0004 each: 0.0012 crosses 0.001
    assert result.text.startswith("Usage limit reached (run limit: cost $0.0012/$0.0010).")
    assert result.usage.cost == pytest.approx(0.0012)
    assert [m.usage.cost for m in result.messages if m.type == "ai" and m.usage] == [
        pytest.approx(0.0004)
    ] * 3


def test_cache_prices_default_to_the_input_price(make_agent: Any) -> None:
    usage = Usage(1000, 0, cache_read_tokens=600, cache_write_tokens=100)
    prices = {"input": 1.0, "output": 0.0, "cache_read": 0.1}
    limiter = UsageLimitMiddleware(run_limit={"total_tokens": 10**6}, prices=prices)
    result = make_agent([ai("hi", usage=usage)], middleware=[limiter]).invoke("go")
    # 300 plain at $1, 600 read at $0.1, 100 written at the input price
    assert result.usage.cost == pytest.approx((300 + 60 + 100) / 1e6)


def test_genai_prices_price_a_known_model(make_agent: Any) -> None:
    model = ScriptedChatModel(
        [ai("hi", usage=Usage(1000, 100, cache_read_tokens=800))], name="gpt-4o"
    )
    limiter = UsageLimitMiddleware(run_limit={"cost": 1.0})
    result = make_agent(model, middleware=[limiter]).invoke("go")
    # gpt-4o: $2.5/M input, $1.25/M cache read, $10/M output
    assert result.usage.cost == pytest.approx((200 * 2.5 + 800 * 1.25 + 100 * 10) / 1e6)


def test_thread_limit_spans_runs_and_run_limit_resets(make_agent: Any) -> None:
    limiter = UsageLimitMiddleware(
        thread_limit={"input_tokens": 250}, run_limit={"input_tokens": 100}
    )
    answers = [ai(str(i), usage=Usage(100, 1)) for i in range(5)]
    agent = make_agent(answers, middleware=[limiter])
    assert [agent.invoke(q, thread_id="t").text for q in "abc"] == ["0", "1", "2"]
    fourth = agent.invoke("d", thread_id="t")
    assert fourth.text.startswith("Usage limit reached (thread limit: input_tokens 300/250).")
    assert agent.get_state("t")[THREAD] == {"input_tokens": 300, "output_tokens": 3, "cost": 0.0}
    assert agent.invoke("e", thread_id="other").text == "3"


def test_both_scopes_are_named(make_agent: Any) -> None:
    limiter = UsageLimitMiddleware(
        thread_limit={"total_tokens": 100}, run_limit={"output_tokens": 10}, exit_behavior="error"
    )
    agent = make_agent(looping(3), tools=[ping], middleware=[limiter])
    with pytest.raises(UsageLimitExceededError) as raised:
        agent.invoke("go", thread_id="t")
    assert str(raised.value) == (
        "Usage limit reached (thread limit: total_tokens 120/100; run limit: output_tokens 20/10)."
    )


def test_two_instances_count_and_price_each_answer_once(make_agent: Any) -> None:
    agent = make_agent(
        looping(5),
        tools=[ping],
        middleware=[
            UsageLimitMiddleware(run_limit={"cost": 1.0}, prices=PRICES),
            UsageLimitMiddleware(
                run_limit={"total_tokens": 240}, prices={"input": 1000, "output": 0}
            ),
        ],
    )
    result = agent.invoke("go")
    assert agent.model.calls == 2
    assert result.state[RUN]["input_tokens"] == 200
    # the inner instance priced the answers first; the outer one leaves its price alone
    assert result.usage.cost == pytest.approx(0.2)


def test_async_and_streaming_paths(make_agent: Any) -> None:
    limiter = UsageLimitMiddleware(run_limit={"total_tokens": 200}, prices=PRICES)
    agent = make_agent(looping(4), tools=[ping], middleware=[limiter])
    result = asyncio.run(agent.ainvoke("go"))
    assert agent.model.calls == 2
    assert result.text.startswith("Usage limit reached (run limit: total_tokens 240/200).")
    assert result.usage.cost == pytest.approx(0.0008)

    streamed = make_agent(looping(4), tools=[ping], middleware=[limiter])
    list(streamed.stream("go", thread_id="s"))
    assert streamed.model.calls == 2
    state = streamed.get_state("s")
    assert state[THREAD]["input_tokens"] == 200
    assert state[THREAD]["cost"] == pytest.approx(0.0008)

    failing = make_agent(
        looping(4),
        tools=[ping],
        middleware=[UsageLimitMiddleware(run_limit={"input_tokens": 1}, exit_behavior="error")],
    )

    async def drain() -> None:
        async for _ in failing.astream("go"):
            pass

    with pytest.raises(UsageLimitExceededError, match=r"input_tokens 100/1"):
        asyncio.run(drain())
    assert failing.model.calls == 1


SCRIPT = textwrap.dedent(
    """
    import sys
    import plait
    from plait.messages import Usage
    from plait.testing import ai, scripted

    model = scripted(ai("answer", usage=Usage(100, 50)))
    agent = plait.create_agent(
        model, [], checkpointer=sys.argv[1],
        middleware=[("usage_limit", {"thread_limit": {"output_tokens": 80}})],
    )
    print(agent.invoke(sys.argv[2], thread_id="t").text)
    print(model.calls)
    """
)


def test_thread_counts_survive_a_new_process_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'threads.db'}"

    def run(prompt: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, url, prompt], capture_output=True, text=True, check=True
        )
        return done.stdout.splitlines()

    assert run("a") == ["answer", "1"]
    assert run("b") == ["answer", "1"]  # 50 spent: under 80
    third = run("c")
    assert third[0].startswith("Usage limit reached (thread limit: output_tokens 100/80).")
    assert third[1] == "0"


# -- options at create_agent --------------------------------------------------------------


def test_by_name_structures_the_tables(make_agent: Any) -> None:
    options = {"run_limit": {"cost": 0.5}, "prices": {"input": 3, "output": 15}}
    (limiter,) = make_agent([], middleware=[("usage_limit", options)]).middleware
    assert isinstance(limiter, UsageLimitMiddleware)
    assert limiter.run_limit is not None and limiter.run_limit.cost == 0.5
    assert limiter.prices is not None and limiter.prices.output == 15


def test_no_limit_is_a_config_error(make_agent: Any) -> None:
    with pytest.raises(
        ConfigError, match=r"^plugin 'usage_limit': run_limit and thread_limit set no limit"
    ):
        make_agent([], middleware=[("usage_limit", {"run_limit": {}})])


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"run_limit": {"tokens": 5}}, "tokens"),
        ({"run_limit": {"cost": -1}}, "cost"),
        ({"run_limit": {"cost": 1}, "prices": {"input": 1}}, "output"),
        ({"run_limit": {"cost": 1}, "exit_behavior": "stop"}, "exit_behavior"),
    ],
)
def test_bad_options_name_the_plugin_and_option(
    make_agent: Any, options: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError, match="usage_limit") as raised:
        make_agent([], middleware=[("usage_limit", options)])
    assert words in str(raised.value)


def test_cost_limit_on_a_model_without_a_price_is_a_config_error(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent(["hi"], middleware=[UsageLimitMiddleware(run_limit={"cost": 1.0})])
    assert str(raised.value).startswith(
        "plugin 'usage_limit': a cost limit needs the price of model scripted:scripted"
    )
    # token limits need no price, and prices= makes the cost limit usable
    make_agent(["hi"], middleware=[UsageLimitMiddleware(run_limit={"total_tokens": 5})])
    make_agent(["hi"], middleware=[UsageLimitMiddleware(run_limit={"cost": 1.0}, prices=PRICES)])
