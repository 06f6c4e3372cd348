"""A2A ``message/stream`` read with a2a-sdk's own client: the model's text reaches the
client as it is written, a ``working`` status update per piece (the pieces of one model
message share its ``plait_message_id``), each tool call's start, the call and its result
as ``working`` updates with a data part, in the order the run made them; the task then
ends with its whole answer as the ``answer`` artifact (``lastChunk``) and ``completed``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2a.types import TaskState
from google.protobuf import json_format
from serve_helpers import Served
from test_a2a import KEY, responses, run, text
from test_tool_call_streaming import Fragments

import plait
from plait.testing import ai, call

ANSWER = "It is sunny and 22C in Lima today."


def weather() -> plait.Agent:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"{city}: sunny, 22C"

    answers = [ai("Let me check the weather.", call("get_weather", city="Lima")), ANSWER]
    model = Fragments(answers)
    return plait.create_agent(model, tools=[get_weather], checkpointer="memory", name="weather")


def describe(update: Any) -> tuple[str, Any]:
    """``("text", (piece, plait message id))``, ``("data", event type)``,
    ``("artifact", update)`` or ``("state", state)`` for one streamed response."""
    if update.HasField("artifact_update"):
        return "artifact", update.artifact_update
    status = update.status_update.status
    if status.state == TaskState.TASK_STATE_WORKING:
        (part,) = status.message.parts
        if part.HasField("data"):
            return "data", json_format.MessageToDict(part.data)["type"]
        metadata = json_format.MessageToDict(status.message.metadata)
        return "text", (part.text, metadata["plait_message_id"])
    return "state", status.state


def test_text_streams_as_working_updates_before_the_answer_artifact(
    serve: Callable[..., Served],
) -> None:
    served = serve(weather(), keys=[KEY])

    async def body(client: Any) -> Any:
        return await responses(client, text("Weather in Lima?"))

    first, *rest = run(served, body)
    assert first.task.status.state == TaskState.TASK_STATE_WORKING
    seen = [describe(update) for update in rest]
    kinds = [kind for kind, _ in seen]
    texts = [value for kind, value in seen if kind == "text"]
    messages: dict[str, str] = {}
    for piece, message_id in texts:
        messages[message_id] = messages.get(message_id, "") + piece
    assert list(messages.values()) == ["Let me check the weather.", ANSWER]
    assert len(texts) == 5 + 8  # a piece per word, as the model wrote them
    calls = [value for kind, value in seen if kind == "data"]
    assert calls == ["tool_call_start", "tool_call", "tool_result"]
    # the run's order: the first message's text, its call, the result, then the answer's text
    first_answer_piece = next(
        i for i, (kind, value) in enumerate(seen) if kind == "text" and value[0] == "It "
    )
    assert kinds.index("data") > kinds.index("text")
    assert len(kinds) - 1 - kinds[::-1].index("data") < first_answer_piece
    assert kinds[-2:] == ["artifact", "state"]
    artifact = seen[-2][1]
    assert artifact.artifact.artifact_id == "answer"
    assert [p.text for p in artifact.artifact.parts] == [ANSWER]
    assert artifact.last_chunk and not artifact.append
    assert seen[-1][1] == TaskState.TASK_STATE_COMPLETED


def test_a_run_failing_mid_stream_sends_its_text_then_fails_without_an_answer(
    serve: Callable[..., Served],
) -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    def broken(messages: Any, tools: Any) -> Any:
        raise RuntimeError("boom")

    model = Fragments([ai("Working on it now.", call("ping")), broken])
    served = serve(plait.create_agent(model, tools=[ping], checkpointer="memory"), keys=[KEY])

    async def body(client: Any) -> Any:
        return await responses(client, text("Go."))

    _, *rest = run(served, body)
    seen = [describe(update) for update in rest]
    pieces = [value[0] for kind, value in seen if kind == "text"]
    assert "".join(pieces) == "Working on it now." and len(pieces) == 4
    assert [value for kind, value in seen if kind == "data"] == [
        "tool_call_start",
        "tool_call",
        "tool_result",
    ]
    assert "artifact" not in [kind for kind, _ in seen]
    failed = rest[-1].status_update
    assert failed.status.state == TaskState.TASK_STATE_FAILED
    assert failed.status.message.parts[0].text == (
        "the run failed with an internal error (RuntimeError)"
    )
