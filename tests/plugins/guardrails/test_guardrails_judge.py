"""``guardrails``: an LLM judge on any plait model id, asked over real HTTP (a loopback
OpenAI-compatible server), whose calls count in the run's usage."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from replay_server import ReplayServer

from plait.messages import AIMessage, Usage
from plait.testing import scripted
from plait_guardrails import GuardrailTripped

RULE = "The user must not ask for medical advice."


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayServer]:
    server = ReplayServer()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    yield server
    server.close()


def verdict(server: ReplayServer, content: str) -> None:
    server.json(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4.1-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
        }
    )


def judged(**options: Any) -> tuple[str, dict[str, Any]]:
    return "guardrails", {
        "input": [{"judge": "openai:gpt-4.1-mini", "prompt": RULE, "name": "medical"}],
        **options,
    }


def test_judge_trips_with_its_reason(make_agent: Any, judge_server: ReplayServer) -> None:
    verdict(judge_server, '{"tripped": true, "reason": "asks which pills to take"}')
    agent = make_agent(["never"], middleware=[judged()])
    with pytest.raises(GuardrailTripped) as caught:
        agent.invoke("Which pills should I take for my headache?")
    assert (caught.value.guardrail, caught.value.reason) == ("medical", "asks which pills to take")
    assert agent.model.calls == 0
    sent = judge_server.requests[0].body
    assert sent["model"] == "gpt-4.1-mini"
    assert RULE in sent["messages"][0]["content"]  # the system prompt carries the rule
    assert "Which pills" in sent["messages"][-1]["content"]
    schema = sent["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["tripped", "reason"]


def test_judge_calls_count_in_the_run_usage(make_agent: Any, judge_server: ReplayServer) -> None:
    verdict(judge_server, '{"tripped": false, "reason": "a travel question"}')
    model = scripted(AIMessage("Take the train.", usage=Usage(10, 3)))
    agent = make_agent(model, middleware=[judged()])
    result = agent.invoke("How do I get to Lyon?")
    assert result.text == "Take the train."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (110, 10)


def test_judge_on_the_async_path(make_agent: Any, judge_server: ReplayServer) -> None:
    verdict(judge_server, '```json\n{"tripped": true, "reason": "dosage"}\n```')
    agent = make_agent(["never"], middleware=[judged()])
    with pytest.raises(GuardrailTripped, match="dosage"):
        asyncio.run(agent.ainvoke("How much ibuprofen?"))


def test_an_answer_that_is_no_verdict_trips(make_agent: Any, judge_server: ReplayServer) -> None:
    verdict(judge_server, "I think it is probably fine.")
    agent = make_agent(["never"], middleware=[judged()])
    with pytest.raises(GuardrailTripped, match="the judge's answer is not a verdict") as caught:
        agent.invoke("hello")
    assert caught.value.info == {"judge_answer": "I think it is probably fine."}


def test_judge_as_output_guardrail_with_a_text_prompt(
    make_agent: Any, judge_server: ReplayServer
) -> None:
    verdict(judge_server, json.dumps({"tripped": True, "reason": "medical advice"}))
    options = {
        "output": [
            {
                "judge": "openai:gpt-4.1-mini",
                "prompt": "Does this answer give medical advice? {text}",
            }
        ]
    }
    agent = make_agent(["Take two aspirin."], middleware=[("guardrails", options)])
    with pytest.raises(
        GuardrailTripped, match=r"'judge:openai:gpt-4\.1-mini' tripped on the answer"
    ):
        agent.invoke("headache", thread_id="t")
    sent = judge_server.requests[0].body
    assert sent["messages"] == [
        {"role": "user", "content": "Does this answer give medical advice? Take two aspirin."}
    ]
    assert "aspirin" not in str(agent.get_state("t")["messages"])


def test_a_judge_that_fails_raises_its_error_not_a_trip(
    make_agent: Any, judge_server: ReplayServer
) -> None:
    judge_server.json({"not": "a completion"}, status=500)
    options = {"input": [{"judge": "openai:gpt-4.1-mini", "prompt": RULE}]}
    agent = make_agent(["never"], middleware=[("guardrails", options)])
    with pytest.raises(Exception) as caught:  # a failing judge fails the run, loudly
        agent.invoke("hello")
    assert not isinstance(caught.value, GuardrailTripped)
