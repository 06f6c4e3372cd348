"""Budgets count every model call made on a run's behalf: sub-agents started by ``task``
(sync, async, parallel calls), middleware's own calls, answers refused by
``response_format``; ``result.usage`` is the sum of what every provider reported, and a
call whose provider reports nothing is counted as a flagged estimate."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import attrs
import pytest

import plait
from plait import usage
from plait.errors import ModelCallLimitExceededError
from plait.messages import AIMessage, ToolMessage, Usage
from plait.models.scripted import ScriptedChatModel
from plait.testing import ai, call, scripted
from plait_llm_tool_selector import LLMToolSelectorMiddleware
from plait_subagents import SubAgent, SubAgentMiddleware
from plait_usage_limit import UsageLimitMiddleware

SPEND = Usage(500, 100)  # 600 tokens a call


@plait.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def _outermost() -> usage.RunUsage:
    ledger = usage.current()
    assert ledger is not None
    while ledger.parent is not None:
        ledger = ledger.parent
    return ledger


class Provider:
    """What a provider reported, call by call, and what the run had spent when each
    call started (read from the outermost run's ledger)."""

    def __init__(self) -> None:
        self.reported: list[Usage] = []
        self.started_at: list[int] = []
        self._lock = threading.Lock()

    def answer(self, text: str, *calls: Any, spend: Usage = SPEND) -> AIMessage:
        with self._lock:
            self.started_at.append(_outermost().total.total_tokens)
            self.reported.append(spend)
        return ai(text, *calls, usage=spend)

    @property
    def total(self) -> Usage:
        return sum(self.reported, Usage())


def _four_tasks(provider: Provider) -> tuple[ScriptedChatModel, ScriptedChatModel]:
    def researcher(messages: list[Any], tools: Any) -> AIMessage:
        if any(isinstance(m, ToolMessage) for m in messages):
            return provider.answer("found it")
        return provider.answer("", call("ping"))

    tasks = [
        call("task", id=f"task_{n}", description=f"topic {n}", subagent_type="researcher")
        for n in range(4)
    ]
    main = ScriptedChatModel(
        [
            lambda m, t: provider.answer("", *tasks, spend=Usage(80, 20)),
            lambda m, t: provider.answer("summary", spend=Usage(80, 20)),
        ]
    )
    return main, ScriptedChatModel([researcher] * 8, name="sub")


def _agent(main: Any, sub: Any, limiter: Any, **options: Any) -> plait.Agent:
    spec = SubAgent(
        name="researcher", description="Researches.", system_prompt="Go.", model=sub, tools=[ping]
    )
    return plait.create_agent(
        main,
        [ping],
        middleware=[limiter, SubAgentMiddleware(subagents=[spec], **options)],
        checkpointer="memory",
    )


LIMIT_END = "Usage limit reached (run limit: total_tokens 1300/1000)."


def test_sync_four_tasks_stop_at_the_limit_and_no_call_starts_after_it() -> None:
    provider = Provider()
    main, sub = _four_tasks(provider)
    limiter = UsageLimitMiddleware(run_limit={"total_tokens": 1000})
    result = _agent(main, sub, limiter).invoke("research", thread_id="t")
    # main 100, first sub-agent 600 + 600: the limit is crossed; nothing starts after it
    assert provider.started_at == [0, 100, 700]
    assert all(spent < 1000 for spent in provider.started_at)
    assert result.text.startswith(LIMIT_END)
    answers = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert answers[0].content == "found it"
    assert [a.content.split(":")[:3] for a in answers[1:]] == [
        ["Error", " sub-agent 'researcher' failed", " UsageLimitExceededError"]
    ] * 3
    assert result.usage == provider.total
    assert result.usage.total_tokens == 1300


def test_async_parallel_tasks_start_no_call_after_the_limit() -> None:
    provider = Provider()
    main, sub = _four_tasks(provider)
    limiter = UsageLimitMiddleware(run_limit={"total_tokens": 1000})
    result = asyncio.run(_agent(main, sub, limiter).ainvoke("research", thread_id="t"))
    assert all(spent < 1000 for spent in provider.started_at), provider.started_at
    assert result.text.startswith("Usage limit reached (run limit: total_tokens ")
    assert result.usage == provider.total
    # the four first calls may run at once; no second call starts past the limit
    assert len(provider.reported) <= 1 + 4 + 1


def test_a_sub_agent_that_opts_out_is_counted_but_not_refused() -> None:
    provider = Provider()
    main, sub = _four_tasks(provider)
    limiter = UsageLimitMiddleware(run_limit={"total_tokens": 1000})
    agent = _agent(main, sub, limiter, inherit=["pii", "otel"])
    result = agent.invoke("research", thread_id="t")
    assert len(provider.reported) == 1 + 8  # every sub-agent ran to its end
    assert result.usage == provider.total
    assert result.text.startswith("Usage limit reached (run limit: total_tokens 4900/1000).")


def test_per_sub_agent_usage_is_reported_and_rolls_up() -> None:
    provider = Provider()
    main, sub = _four_tasks(provider)
    limiter = UsageLimitMiddleware(run_limit={"total_tokens": 10_000})
    result = _agent(main, sub, limiter).invoke("research", thread_id="t")
    answers = [m for m in result.messages if isinstance(m, ToolMessage)]
    reports = [m.metadata["subagents"]["usage"] for m in answers]
    assert [(r["input_tokens"], r["output_tokens"]) for r in reports] == [(1000, 200)] * 4
    assert result.usage == provider.total == Usage(4160, 840)


def test_model_call_limit_counts_sub_agent_calls() -> None:
    provider = Provider()
    main, sub = _four_tasks(provider)
    agent = _agent(main, sub, ("model_call_limit", {"run_limit": 3}))
    result = agent.invoke("research", thread_id="t")
    assert len(provider.reported) == 3
    assert result.text.startswith("Model call limit reached: run limit (3/3).")
    strict = ("model_call_limit", {"run_limit": 2, "exit_behavior": "error"})
    with pytest.raises(ModelCallLimitExceededError, match=r"run limit \(5/2\)|run limit \(2/2\)"):
        _agent(*_four_tasks(Provider()), strict).invoke("go")


def test_a_middlewares_own_calls_count() -> None:
    provider = Provider()
    selector = ScriptedChatModel(
        [lambda m, t: provider.answer('{"tools": ["ping"]}', spend=Usage(700, 40))] * 3,
        name="selector",
    )
    main = ScriptedChatModel(
        [lambda m, t: provider.answer("", call("ping"), spend=Usage(30, 10))] * 3
    )
    agent = plait.create_agent(
        main,
        [ping],
        middleware=[
            UsageLimitMiddleware(run_limit={"total_tokens": 1000}),
            LLMToolSelectorMiddleware(model=selector),
        ],
    )
    result = agent.invoke("go")
    # selection 740 + answer 40, then a second selection crosses the limit: the answer
    # it was made for never starts, and the run ends as exit_behavior says
    assert provider.started_at == [0, 740, 780]
    assert result.usage == provider.total == Usage(1430, 90)
    assert result.text.startswith("Usage limit reached (run limit: total_tokens 1520/1000).")


@attrs.frozen
class Weather:
    city: str
    celsius: int


def test_answers_refused_by_response_format_count() -> None:
    provider = Provider()
    model = ScriptedChatModel(
        [lambda m, t: provider.answer("It is warm.", spend=Usage(500, 100))] * 5
    )
    agent = plait.create_agent(
        model,
        response_format=Weather,
        output_retries=4,
        middleware=[UsageLimitMiddleware(run_limit={"total_tokens": 500})],
    )
    result = agent.invoke("weather?")
    assert len(provider.reported) == 1  # the refused answer already spent the budget
    assert result.text.startswith("Usage limit reached (run limit: total_tokens 600/500).")
    assert result.usage == provider.total


def test_a_provider_without_usage_is_counted_as_a_flagged_estimate() -> None:
    words = "lorem ipsum " * 200  # about 600 tokens of answer
    model = scripted(*[ai("", call("ping")) for _ in range(3)], words)
    agent = plait.create_agent(
        model, [ping], middleware=[UsageLimitMiddleware(run_limit={"total_tokens": 50})]
    )
    stream = agent.stream("go", mode="messages")
    list(stream)
    assert stream.result is not None
    result = stream.result
    assert result.usage.estimated and result.usage.input_tokens > 0
    assert model.calls == 3  # estimates reach 50 tokens by the third call
    assert result.text.startswith("Usage limit reached (run limit: total_tokens ")
    assert "counts include estimates: a provider reported no usage" in result.text
    assert result.messages[-1].metadata["usage_limit"]["estimated"] is True


def test_a_provider_reporting_usage_is_not_an_estimate() -> None:
    result = plait.create_agent(scripted(ai("hi", usage=SPEND))).invoke("go")
    assert result.usage == SPEND and not result.usage.estimated


def test_summaries_count_and_a_summary_past_the_limit_is_not_made() -> None:
    provider = Provider()
    summarizer = ScriptedChatModel(
        [lambda m, t: provider.answer("summary", spend=Usage(900, 100))] * 3, name="summarizer"
    )
    main = ScriptedChatModel(
        [lambda m, t: provider.answer("", call("ping"), spend=Usage(50, 10))] * 4
    )
    agent = plait.create_agent(
        main,
        [ping],
        middleware=[
            (
                "summarization",
                {"model": summarizer, "trigger": {"messages": 3}, "keep": {"messages": 1}},
            ),
            UsageLimitMiddleware(run_limit={"total_tokens": 1000}, exit_behavior="error"),
        ],
    )
    with pytest.raises(plait.errors.UsageLimitExceededError, match="total_tokens 1060/1000"):
        agent.invoke("go")
    # answer 60, then a summary of 1,000 crosses the limit: the answer it was made for
    # and any later summary never start
    assert provider.started_at == [0, 60]
    assert summarizer.calls == 1


def test_an_emulated_tool_past_the_limit_ends_the_run_as_exit_behavior_says() -> None:
    provider = Provider()
    emulator = ScriptedChatModel(
        [lambda m, t: provider.answer("pong (emulated)", spend=Usage(400, 100))] * 4,
        name="emulator",
    )
    main = ScriptedChatModel(
        [lambda m, t: provider.answer("", call("ping"), call("ping"), spend=Usage(90, 10))] * 3
    )
    agent = plait.create_agent(
        main,
        [ping],
        middleware=[
            UsageLimitMiddleware(run_limit={"total_tokens": 500}),
            ("llm_tool_emulator", {"model": emulator}),
        ],
    )
    result = agent.invoke("go")
    # answer 100, first emulation 500 reaches the limit: the second is refused
    assert provider.started_at == [0, 100]
    answers = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [a.content for a in answers] == [
        "pong (emulated)",
        "Not run: Usage limit reached (run limit: total_tokens 600/500).",
    ]
    assert result.text.startswith("Usage limit reached (run limit: total_tokens 600/500).")
    assert result.usage == provider.total


def _chunk(**delta: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "qwen", "choices": [
        {"index": 0, "delta": delta, "finish_reason": None}
    ]}  # fmt: skip


def test_a_llama_cpp_stream_without_usage_is_estimated_over_http(replay_server: Any) -> None:
    from plait.models.openai import OpenAIChatModel

    model = OpenAIChatModel("qwen", base_url=replay_server.url + "/v1", compat="llama.cpp")
    words = "The weather in Paris is mild and sunny today. " * 10
    replay_server.openai_stream(
        [_chunk(role="assistant", content=words[:200]), _chunk(content=words[200:])]
    )
    answer = {"role": "assistant", "content": "And tomorrow too."}
    replay_server.json(
        {"id": "c2", "object": "chat.completion", "model": "qwen",
         "choices": [{"index": 0, "message": answer, "finish_reason": "stop"}]}
    )  # fmt: skip
    agent = plait.create_agent(
        model,
        middleware=[UsageLimitMiddleware(run_limit={"output_tokens": 100})],
        checkpointer="memory",
    )
    stream = agent.stream("Weather in Paris?", mode="messages", thread_id="t")
    chunks = [e.data.content for e in stream]
    assert "".join(chunks) == words
    first = stream.result
    assert first is not None and first.usage.estimated
    assert first.usage.output_tokens >= 100 and first.usage.input_tokens > 0
    second = agent.invoke("And tomorrow?", thread_id="t")  # a new run: its own count
    assert second.text == "And tomorrow too." and second.usage.estimated
    assert 0 < second.usage.output_tokens < 20


def test_a_thread_limit_counts_sub_agents_across_runs() -> None:
    provider = Provider()
    _, sub = _four_tasks(provider)
    tasks = [
        call("task", id=f"task_{n}", description=f"topic {n}", subagent_type="researcher")
        for n in range(4)
    ]
    main = ScriptedChatModel(
        [
            lambda m, t: provider.answer("hello", spend=Usage(80, 20)),
            lambda m, t: provider.answer("", *tasks, spend=Usage(80, 20)),
        ]
    )
    agent = _agent(main, sub, UsageLimitMiddleware(thread_limit={"total_tokens": 1000}))
    assert agent.invoke("hi", thread_id="t").text == "hello"
    result = agent.invoke("research", thread_id="t")
    # 100 in the first run; then 100 + 600 + 600 in this one: the thread reached 1,400
    # at the first sub-agent's second call, and no call started after it
    assert len(provider.reported) == 4
    assert result.text.startswith("Usage limit reached (thread limit: total_tokens 1400/1000).")
    assert agent.get_state("t")["usage_limit_thread"] == {
        "input_tokens": 1160,
        "output_tokens": 240,
        "cost": 0.0,
    }


def test_an_error_exit_keeps_the_stopped_steps_spend_in_the_thread_counts() -> None:
    provider = Provider()
    main, sub = _four_tasks(provider)
    limiter = UsageLimitMiddleware(thread_limit={"total_tokens": 1000}, exit_behavior="error")
    agent = _agent(main, sub, limiter)
    with pytest.raises(plait.errors.UsageLimitExceededError, match="total_tokens 1300/1000"):
        agent.invoke("research", thread_id="t")
    # the sub-agents' calls of the step that reached the limit are in the thread's counts
    assert agent.get_state("t")["usage_limit_thread"] == {
        "input_tokens": 1080,
        "output_tokens": 220,
        "cost": 0.0,
    }
    with pytest.raises(plait.errors.UsageLimitExceededError, match="total_tokens 1300/1000"):
        agent.invoke("again", thread_id="t")
    assert len(provider.reported) == 3  # the next run makes no call
