"""``guardrails``: output guardrails on the final answer and the structured answer, and
streaming that never lets a tripped answer reach the reader."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

import plait
from plait.messages import AIMessage, AIMessageChunk
from plait.testing import ai, call, transcript
from plait_guardrails import (
    GuardrailData,
    GuardrailResult,
    GuardrailsMiddleware,
    GuardrailTripped,
    output_guardrail,
)

SECRET = "the launch code is 0000"


@output_guardrail
def no_launch_codes(data: GuardrailData) -> GuardrailResult:
    """Trips on an answer that gives the launch code away."""
    if "launch code" in data.text:
        return GuardrailResult.trip("reveals the launch code")
    return GuardrailResult.allow()


@plait.tool
def vault() -> str:
    """Read the vault."""
    return "launch code: 0000"


def test_output_trip_keeps_the_answer_out_of_the_thread(make_agent: Any) -> None:
    agent = make_agent(
        [f"Sure. {SECRET}."], middleware=[GuardrailsMiddleware(output=[no_launch_codes])]
    )
    with pytest.raises(
        GuardrailTripped,
        match=r"^guardrail 'no_launch_codes' tripped on the answer: reveals the launch code$",
    ):
        agent.invoke("code?", thread_id="t")
    messages = agent.get_state("t")["messages"]
    assert SECRET not in str(messages)
    assert transcript(messages) == [
        ("human", "code?"),
        (
            "ai",
            "Stopped: guardrail 'no_launch_codes' tripped on the answer: reveals the launch code.",
        ),
    ]
    assert messages[-1].metadata["guardrails"]["kind"] == "output"


def test_output_checks_only_final_answers(make_agent: Any) -> None:
    seen: list[str] = []

    def record(data: GuardrailData) -> None:
        seen.append(data.text)

    agent = make_agent(
        [ai("let me look", call("vault")), "All clear."],
        tools=[vault],
        middleware=[GuardrailsMiddleware(output=[record])],
    )
    assert agent.invoke("go").text == "All clear."
    assert seen == ["All clear."]


def test_end_exit_answers_with_the_message_instead(make_agent: Any) -> None:
    agent = make_agent(
        [SECRET],
        middleware=[
            GuardrailsMiddleware(
                output=[no_launch_codes], exit_behavior="end", message="I can't share that."
            )
        ],
    )
    result = agent.invoke("code?")
    assert result.text == "I can't share that."
    assert SECRET not in str(result.messages)


@attrs.frozen
class Answer:
    city: str
    code: str


def test_structured_answer_is_checked_as_json(make_agent: Any) -> None:
    seen: list[Any] = []

    @output_guardrail
    def no_codes(data: GuardrailData) -> str | None:
        seen.append(data.structured)
        return "a code in the answer" if data.structured["code"] != "" else None

    agent = make_agent(
        ['{"city": "Paris", "code": "0000"}', '{"city": "Paris", "code": ""}'],
        middleware=[GuardrailsMiddleware(output=[no_codes])],
        response_format=Answer,
    )
    with pytest.raises(GuardrailTripped, match="a code in the answer"):
        agent.invoke("where?")
    assert agent.invoke("where?").structured_response == Answer("Paris", "")
    assert seen == [{"city": "Paris", "code": "0000"}, {"city": "Paris", "code": ""}]


def test_structured_answer_through_the_answer_tool(make_agent: Any) -> None:
    from plait.testing import scripted

    @output_guardrail
    def no_codes(data: GuardrailData) -> str | None:
        return "a code in the answer" if data.structured.get("code") else None

    model = scripted(
        ai("", call("Answer", city="Paris", code="0000")), native_structured_output=False
    )
    agent = make_agent(
        model, middleware=[GuardrailsMiddleware(output=[no_codes])], response_format=Answer
    )
    with pytest.raises(GuardrailTripped, match="a code in the answer"):
        agent.invoke("where?")


# -- streaming -------------------------------------------------------------------------

ANSWER = "Hello there. The weather is fine. " + SECRET + ". Bye now."


def streamed(agent: Any, **kwargs: Any) -> tuple[str, BaseException | None]:
    """Every byte a reader of ``agent.stream`` saw, and the error it ended with."""
    seen: list[str] = []
    try:
        for event in agent.stream("go", mode="messages", **kwargs):
            if isinstance(event.data, AIMessageChunk):
                seen.append(event.data.content)
            elif isinstance(event.data, AIMessage):
                seen.append("|" + event.data.text)
    except GuardrailTripped as exc:
        return "".join(seen), exc
    return "".join(seen), None


def astreamed(agent: Any, **kwargs: Any) -> tuple[str, BaseException | None]:
    async def collect() -> tuple[str, BaseException | None]:
        seen: list[str] = []
        try:
            async for event in agent.astream("go", mode="messages", **kwargs):
                if isinstance(event.data, AIMessageChunk):
                    seen.append(event.data.content)
                elif isinstance(event.data, AIMessage):
                    seen.append("|" + event.data.text)
        except GuardrailTripped as exc:
            return "".join(seen), exc
        return "".join(seen), None

    return asyncio.run(collect())


@pytest.mark.parametrize("read", [streamed, astreamed], ids=["sync", "async"])
def test_stream_releases_passed_sentences_and_never_the_tripped_one(
    make_agent: Any, read: Any
) -> None:
    agent = make_agent([ANSWER], middleware=[GuardrailsMiddleware(output=[no_launch_codes])])
    seen, error = read(agent, thread_id="t")
    assert isinstance(error, GuardrailTripped)
    assert "launch" not in seen and "0000" not in seen
    assert seen.startswith("Hello there. The weather is fine. ")
    assert SECRET not in str(agent.get_state("t")["messages"])


@pytest.mark.parametrize("read", [streamed, astreamed], ids=["sync", "async"])
def test_release_end_holds_everything_until_the_end(make_agent: Any, read: Any) -> None:
    agent = make_agent(
        [ANSWER], middleware=[GuardrailsMiddleware(output=[no_launch_codes], release="end")]
    )
    seen, error = read(agent)
    assert isinstance(error, GuardrailTripped)
    assert "Hello" not in seen and "launch" not in seen


@pytest.mark.parametrize("read", [streamed, astreamed], ids=["sync", "async"])
def test_a_passing_answer_streams_whole_and_is_checked_once_per_sentence(
    make_agent: Any, read: Any
) -> None:
    checked: list[str] = []

    @output_guardrail
    def record(data: GuardrailData) -> None:
        checked.append(data.text)

    text = "One fine day. Two more! Three"
    agent = make_agent([text], middleware=[GuardrailsMiddleware(output=[record])])
    seen, error = read(agent)
    assert error is None
    assert seen.startswith(text)
    # each check sees the whole answer so far; the final answer is not checked again
    assert checked == ["One fine day. ", "One fine day. Two more! ", text]


def test_stream_trip_with_end_exit_shows_the_message(make_agent: Any) -> None:
    agent = make_agent(
        [ANSWER],
        middleware=[
            GuardrailsMiddleware(output=[no_launch_codes], exit_behavior="end", message="Nope.")
        ],
    )
    seen, error = streamed(agent, thread_id="t")
    assert error is None
    assert "launch" not in seen
    assert agent.get_state("t")["messages"][-1].text == "Nope."
