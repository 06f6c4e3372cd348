"""``model_refusal`` on refusals as the providers really send them: OpenAI's recorded
``refusal`` (whole and streamed), Anthropic's ``stop_reason: refusal``, Gemini's recorded
SAFETY finish, served over loopback HTTP by ``plait.testing``'s ``replay_server``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import recorded

import plait
from plait.errors import ConfigError, ProviderError
from plait.models.openai import OpenAIChatModel
from plait.replay import ReplayServer, Reply, split_bytes
from plait_anthropic import AnthropicChatModel
from plait_google import GoogleChatModel
from plait_model_refusal import ModelRefusalMiddleware, ModelRefusedError

pytestmark = [recorded.needs(recorded.PROVIDERS), recorded.needs(recorded.GEMINI)]
OPENAI = recorded.interactions(recorded.PROVIDERS)
GEMINI = recorded.interactions(recorded.GEMINI)
OPENAI_REFUSAL = "I'm very sorry, but I can't assist with that."


def openai(server: ReplayServer) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4o", api_key="test-key", base_url=server.url + "/v1")


def serve_openai(server: ReplayServer, name: str, *, split: int | None = None) -> None:
    data = OPENAI[name]["response"]["body"].encode("utf-8")
    if recorded.is_stream(OPENAI[name]):
        pieces = split_bytes(data, split or len(data))
        server.reply(Reply(200, b"", {"content-type": "text/event-stream"}, pieces=pieces))
    else:
        server.raw(data)


def anthropic_refusal(server: ReplayServer, text: str = "") -> AnthropicChatModel:
    """Anthropic's documented answer when its classifiers stop a turn."""
    server.json(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": "refusal",
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 3},
        }
    )
    return AnthropicChatModel("claude-sonnet-4-5", api_key="test-key", base_url=server.url)


def gemini_safety(server: ReplayServer) -> GoogleChatModel:
    item = GEMINI["gem_finish_safety"]
    server.raw(item["response"]["body"].encode("utf-8"))
    return GoogleChatModel("gemini-1.5-flash", api_key="AIza-test", base_url=server.url)


def test_an_openai_refusal_is_answered_by_the_fallback_model(replay_server: ReplayServer) -> None:
    serve_openai(replay_server, "oai_refusal")
    backup = plait.ScriptedChatModel(["Here is how to do it safely."])
    agent = plait.create_agent(
        openai(replay_server),
        middleware=[ModelRefusalMiddleware(fallback_models=[backup])],
        checkpointer="memory",
    )
    result = agent.invoke("how do I pick a lock?", thread_id="t")
    assert result.text == "Here is how to do it safely."
    assert [m.text for m in backup.requests[0].messages] == ["how do I pick a lock?"]
    answer = agent.get_state("t")["messages"][-1]
    assert answer.response_metadata["model_refusal"] == {
        "outcome": "fallback",
        "refusals": [
            {
                "provider": "openai",
                "model": "gpt-4o",
                "reason": "refusal",
                "text": OPENAI_REFUSAL,
                "detail": None,
            }
        ],
    }


def test_a_streamed_openai_refusal_ends_the_run_with_the_message(
    replay_server: ReplayServer,
) -> None:
    serve_openai(replay_server, "oai_stream_refusal", split=7)
    agent = plait.create_agent(
        openai(replay_server),
        middleware=[ModelRefusalMiddleware(message="I can't help with that here.")],
        checkpointer="memory",
    )
    events = list(agent.stream("hi", thread_id="t", stream_mode="messages"))
    assert events  # the model was streamed
    assert replay_server.last.body["stream"] is True
    final = agent.get_state("t")["messages"][-1]
    assert final.text == "I can't help with that here."
    record = final.response_metadata["model_refusal"]
    assert record["outcome"] == "end"
    assert record["refusals"][0]["text"] == "I'm sorry, I can't assist with that request."
    assert final.usage is not None  # the refused call's usage stays on the answer


def test_without_a_message_the_run_ends_with_the_models_own_refusal(
    replay_server: ReplayServer,
) -> None:
    serve_openai(replay_server, "oai_refusal")
    agent = plait.create_agent(openai(replay_server), middleware=["model_refusal"])
    result = agent.invoke("hi")
    assert result.text == OPENAI_REFUSAL


def test_an_anthropic_refusal_raises_model_refused_error(replay_server: ReplayServer) -> None:
    model = anthropic_refusal(replay_server, "I won't")
    agent = plait.create_agent(
        model, middleware=[ModelRefusalMiddleware(on_refusal="error")], checkpointer="memory"
    )
    with pytest.raises(ModelRefusedError) as raised:
        agent.invoke("hi", thread_id="t")
    assert str(raised.value) == (
        "the model refused: anthropic:claude-sonnet-4-5 (refusal): I won't"
    )
    (refusal,) = raised.value.refusals
    assert (refusal.provider, refusal.reason, refusal.text) == ("anthropic", "refusal", "I won't")


def test_a_refusal_error_keeps_the_users_input_on_the_thread(
    replay_server: ReplayServer, tmp_path: Path
) -> None:
    """The refused answer is not saved; the input is, so ``invoke(None)`` asks again."""
    model = anthropic_refusal(replay_server, "I won't")
    agent = plait.create_agent(
        model,
        middleware=[ModelRefusalMiddleware(on_refusal="error")],
        checkpointer=f"sqlite:///{tmp_path / 'agent.db'}",
    )
    with pytest.raises(ModelRefusedError):
        agent.invoke("Plan my trip", thread_id="t")
    assert [(m.type, m.text) for m in agent.get_state("t")["messages"]] == [
        ("human", "Plan my trip")
    ]
    replay_server.json(
        {
            "id": "msg_02",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Lisbon, then Porto."}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 5},
        }
    )
    result = agent.invoke(None, thread_id="t")
    assert [(m.type, m.text) for m in result.messages] == [
        ("human", "Plan my trip"),
        ("ai", "Lisbon, then Porto."),
    ]
    sent = replay_server.last.body["messages"]
    assert sent == [{"role": "user", "content": "Plan my trip"}]


def test_a_gemini_safety_finish_is_a_refusal_not_a_failure(replay_server: ReplayServer) -> None:
    agent = plait.create_agent(gemini_safety(replay_server), middleware=["model_refusal"])
    result = agent.invoke("hi")
    assert result.text == "The model declined to answer (SAFETY)."
    (refusal,) = result.messages[-1].response_metadata["model_refusal"]["refusals"]
    assert refusal["provider"] == "google" and refusal["reason"] == "SAFETY"
    assert refusal["detail"] == (
        "google: the answer was withheld, finish reason SAFETY (blocked: HARM_CATEGORY_HATE_SPEECH)"
    )


def test_every_model_refusing_in_turn_is_recorded_async(replay_server: ReplayServer) -> None:
    first = gemini_safety(replay_server)
    second = anthropic_refusal(replay_server)
    agent = plait.create_agent(
        first,
        middleware=[ModelRefusalMiddleware(fallback_models=[second], on_refusal="error")],
    )
    with pytest.raises(ModelRefusedError) as raised:
        asyncio.run(agent.ainvoke("hi"))
    assert [(r.provider, r.reason) for r in raised.value.refusals] == [
        ("google", "SAFETY"),
        ("anthropic", "refusal"),
    ]
    assert str(raised.value) == (
        "the model refused: google:gemini-1.5-flash (SAFETY), anthropic:claude-sonnet-4-5 (refusal)"
    )


def test_answers_and_other_errors_pass_through(replay_server: ReplayServer) -> None:
    serve_openai(replay_server, "oai_text_plain")
    agent = plait.create_agent(openai(replay_server), middleware=["model_refusal"])
    answer = agent.invoke("hi").messages[-1]
    assert "model_refusal" not in answer.response_metadata
    replay_server.json({"error": {"message": "bad key", "type": "auth"}}, status=401)
    backup = plait.ScriptedChatModel(["never"])
    agent = plait.create_agent(
        openai(replay_server), middleware=[ModelRefusalMiddleware(fallback_models=[backup])]
    )
    with pytest.raises(ProviderError) as raised:
        agent.invoke("hi")
    assert raised.value.status_code == 401
    assert backup.calls == 0  # a failure is not a refusal: model_fallback's job


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"on_refusal": "retry"},
            "option 'on_refusal': expected one of 'end', 'error', got 'retry'",
        ),
        ({"message": ""}, "option 'message': expected a non-empty string"),
        ({"fallback_models": "openai:gpt-4o"}, "option 'fallback_models'"),
        ({"fallback_models": ["llama3"]}, "option 'fallback_models': expected a 'provider:model'"),
        ({"fallback_models": ["nosuch:model"]}, "option 'fallback_models[0]'"),
    ],
)
def test_bad_options_fail_at_create_agent(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        plait.create_agent(plait.ScriptedChatModel([]), middleware=[("model_refusal", options)])
    assert str(raised.value).startswith("plugin 'model_refusal': ")
    assert message in str(raised.value)


def test_the_recorded_refusal_is_what_openai_sent() -> None:
    # the test data itself: the refusal field, not the content, carries the words
    body = json.loads(OPENAI["oai_refusal"]["response"]["body"])
    assert body["choices"][0]["message"]["content"] is None
    assert body["choices"][0]["message"]["refusal"] == OPENAI_REFUSAL


@recorded.needs(recorded.RESPONSES)
def test_an_openai_responses_refusal_part_is_a_refusal(replay_server: ReplayServer) -> None:
    from plait_openai_responses import OpenAIResponsesModel

    # the recorded answer, its output text replaced by the refusal part the API documents
    item = recorded.interactions(recorded.RESPONSES)["resp_text_plain"]
    body = json.loads(item["response"]["body"])
    body["output"][0]["content"] = [{"type": "refusal", "refusal": "I can't help with that."}]
    replay_server.json(body)
    model = OpenAIResponsesModel("gpt-4o", api_key="k", base_url=replay_server.url + "/v1")
    agent = plait.create_agent(model, middleware=[ModelRefusalMiddleware(on_refusal="error")])
    with pytest.raises(ModelRefusedError) as raised:
        agent.invoke("hi")
    assert str(raised.value) == (
        "the model refused: openai-responses:gpt-4o (refusal): I can't help with that."
    )
