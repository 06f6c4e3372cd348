"""The official ``openai`` Python client pointed at a plait server: chat completions and
responses, streamed and not, whose model is the agent — it runs its own tools, so no tool
call reaches the client; a thread continues through ``X-Plait-Thread`` or
``previous_response_id``; a paused run is answered with ``extra_body={"resume": ...}``,
checked like every resume; keys and thread ownership hold here too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from serve_helpers import Served

import plait
import plait_serve
from plait.testing import ai, call

KEY = "openai-client-key-0123456789"
OTHER = "another-client-key-0123456789"

REFUND = "Refunded 25.00 EUR for order 1042."


def client(served: Served, key: str = KEY, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key=key, max_retries=0, **kwargs)


def weather_agent() -> plait.Agent:
    """Answers with a tool call, then with what the tool said; remembers the thread."""

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"{city}: sunny, 22C"

    def brain(messages: list[Any], tools: Any) -> plait.AIMessage:
        last = messages[-1]
        if last.type == "tool":
            return ai(f"It is {last.text.split(': ', 1)[1]} there.")
        humans = [m.text for m in messages if m.type == "human"]
        if "what did I ask" in last.text:
            return ai(f"You asked: {humans[0]}")
        return ai("Let me check.", call("get_weather", city=last.text.split()[-1].rstrip("?")))

    return plait.create_agent(
        plait.ScriptedChatModel([brain] * 40),
        tools=[get_weather],
        checkpointer="memory",
        name="weather",
    )


def test_chat_completions_answer_with_the_agents_text_and_no_tool_calls(
    serve: Callable[..., Served],
) -> None:
    served = serve(weather_agent(), keys=[KEY])
    with client(served) as api:
        completion = api.chat.completions.create(
            model="weather", messages=[{"role": "user", "content": "Weather in Paris?"}]
        )
    message = completion.choices[0].message
    assert message.content == "Let me check.\n\nIt is sunny, 22C there."
    assert message.tool_calls is None
    assert completion.model == "weather" and completion.choices[0].finish_reason == "stop"
    assert completion.model_extra is not None
    assert completion.model_extra["plait"]["status"] == "success"


def test_a_streamed_chat_completion_gives_the_same_text_in_chunks(
    serve: Callable[..., Served],
) -> None:
    served = serve(weather_agent(), keys=[KEY])
    with client(served) as api:
        stream = api.chat.completions.create(
            model="weather", messages=[{"role": "user", "content": "Weather in Rome?"}], stream=True
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Let me check.\n\nIt is sunny, 22C there."
    assert len(chunks) > 4
    assert all(c.choices[0].delta.tool_calls is None for c in chunks if c.choices)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_thread_continues_through_the_header(serve: Callable[..., Served]) -> None:
    agent = weather_agent()
    served = serve(agent, keys=[KEY, OTHER])
    with client(served, default_headers={"X-Plait-Thread": "mine"}) as api:
        api.chat.completions.create(
            model="weather", messages=[{"role": "user", "content": "Weather in Oslo?"}]
        )
        raw = api.chat.completions.with_raw_response.create(
            model="weather",
            messages=[
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": "It is sunny, 22C there."},
                {"role": "user", "content": "And what did I ask first?"},
            ],
        )
    assert raw.headers["X-Plait-Thread"] == "mine"
    assert raw.parse().choices[0].message.content == "You asked: Weather in Oslo?"
    stored = plait_serve.scoped_thread_id(KEY, "mine")  # two keys: each has its own ids
    asked = ["Weather in Oslo?", "And what did I ask first?"]
    assert [m.text for m in agent.get_state(stored)["messages"] if m.type == "human"] == asked
    # The other key's "mine" is its own thread: it never reads the first key's.
    with client(served, OTHER, default_headers={"X-Plait-Thread": "mine"}) as other:
        other.chat.completions.create(
            model="weather", messages=[{"role": "user", "content": "Weather in Rome?"}]
        )
        theirs = other.chat.completions.with_raw_response.create(
            model="weather", messages=[{"role": "user", "content": "And what did I ask first?"}]
        )
    assert theirs.headers["X-Plait-Thread"] == "mine"
    assert theirs.parse().choices[0].message.content == "You asked: Weather in Rome?"
    assert [m.text for m in agent.get_state(stored)["messages"] if m.type == "human"] == asked


def test_the_model_is_the_agent_and_a_wrong_key_is_refused(serve: Callable[..., Served]) -> None:
    served = serve(weather_agent(), keys=[KEY])
    with client(served) as api:
        assert [m.id for m in api.models.list()] == ["weather"]
        with pytest.raises(openai.NotFoundError, match="this server's model is 'weather'"):
            api.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
            )
    with client(served, "not-a-valid-key-0123456789") as api:
        with pytest.raises(openai.AuthenticationError):
            api.chat.completions.create(
                model="weather", messages=[{"role": "user", "content": "hi"}]
            )


def test_responses_answer_and_continue_with_previous_response_id(
    serve: Callable[..., Served],
) -> None:
    agent = weather_agent()
    served = serve(agent, keys=[KEY, OTHER])
    with client(served) as api:
        first = api.responses.create(model="weather", input="Weather in Lima?")
        second = api.responses.create(
            model="weather", input="And what did I ask first?", previous_response_id=first.id
        )
    assert first.output_text == "Let me check.\n\nIt is sunny, 22C there."
    assert first.status == "completed"
    assert second.output_text == "You asked: Weather in Lima?"
    assert second.previous_response_id == first.id
    assert all(item.type == "message" for item in first.output + second.output)
    with client(served, OTHER) as intruder:
        with pytest.raises(openai.NotFoundError):
            intruder.responses.create(model="weather", input="hi", previous_response_id=first.id)
        with pytest.raises(openai.NotFoundError, match="previous_response_id"):
            intruder.responses.create(model="weather", input="hi", previous_response_id="resp_%%%")


def test_a_previous_response_id_the_conversation_went_on_from_is_refused(
    serve: Callable[..., Served],
) -> None:
    """OpenAI branches from an older response (a "regenerate"); plait's thread holds the
    turns after it, so such an id is a 409 naming the latest response, and nothing runs."""
    agent = weather_agent()
    served = serve(agent, keys=[KEY])
    with client(served) as api:
        first = api.responses.create(model="weather", input="Weather in Lima?")
        second = api.responses.create(
            model="weather", input="Weather in Oslo?", previous_response_id=first.id
        )
        with pytest.raises(openai.ConflictError, match=second.id):
            api.responses.create(
                model="weather", input="what did I ask first?", previous_response_id=first.id
            )
        third = api.responses.create(
            model="weather", input="And what did I ask first?", previous_response_id=second.id
        )
    assert third.output_text == "You asked: Weather in Lima?"
    history = agent.get_state(third.model_extra["plait"]["thread_id"])["messages"]
    assert [m.text for m in history if m.type == "human"] == [
        "Weather in Lima?",
        "Weather in Oslo?",
        "And what did I ask first?",
    ]


def test_streamed_responses_deliver_deltas_and_the_completed_response(
    serve: Callable[..., Served],
) -> None:
    served = serve(weather_agent(), keys=[KEY])
    with client(served) as api:
        events = list(api.responses.create(model="weather", input="Weather in Kyiv?", stream=True))
        with api.responses.stream(model="weather", input="Weather in Pune?") as stream:
            final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == "Let me check.\n\nIt is sunny, 22C there."
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == deltas
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    assert final.output_text == "Let me check.\n\nIt is sunny, 22C there."


def test_a_paused_run_is_answered_with_a_resume_checked_by_the_server(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[KEY])
    with client(served, default_headers={"X-Plait-Thread": "refunds"}) as api:
        paused = api.chat.completions.create(
            model="agent", messages=[{"role": "user", "content": "Refund order 1042."}]
        )
        extra = paused.model_extra or {}
        (interrupt,) = extra["plait"]["interrupts"]
        (review,) = interrupt["tool_calls"]
        assert extra["plait"]["status"] == "interrupted"
        assert paused.choices[0].message.content == (
            "Let me look that order up.\n\n[The run is paused: it waits for approval of "
            f'issue_refund (tool call {review["id"]}). Answer with "resume": '
            '{"decisions": [...]} on this thread.]'
        )
        with pytest.raises(
            openai.ConflictError, match="expected one of 'approve', 'edit', 'reject'"
        ):
            api.chat.completions.create(
                model="agent",
                messages=[{"role": "user", "content": "ok"}],
                extra_body={"resume": {"decisions": [{"type": "respond", "message": "done"}]}},
            )
        with pytest.raises(openai.ConflictError, match="names tool call 'call_other'"):
            api.chat.completions.create(
                model="agent",
                messages=[{"role": "user", "content": "ok"}],
                extra_body={
                    "resume": {"decisions": [{"type": "approve", "tool_call_id": "call_other"}]}
                },
            )
        assert [i.id for i in support.get_interrupts("refunds")] == [interrupt["id"]]
        done = api.chat.completions.create(
            model="agent",
            messages=[{"role": "user", "content": "ok"}],
            extra_body={
                "resume": {"decisions": [{"type": "approve", "tool_call_id": review["id"]}]}
            },
        )
    assert done.choices[0].message.content == REFUND
    assert support.get_interrupts("refunds") == []


def test_a_failed_run_is_a_500_the_client_does_not_retry(serve: Callable[..., Served]) -> None:
    calls: list[int] = []

    def broken(messages: Any, tools: Any) -> Any:
        calls.append(1)
        raise RuntimeError("boom")

    agent = plait.create_agent(plait.ScriptedChatModel([broken] * 5), checkpointer="memory")
    served = serve(agent)
    with openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=2) as api:
        with pytest.raises(openai.InternalServerError, match="internal error"):
            api.chat.completions.create(model="agent", messages=[{"role": "user", "content": "hi"}])
    assert calls == [1]
