"""``POST /v1/responses`` with ``stream: true`` read by the official ``openai`` client:
the run's text arrives as ``response.output_text.delta`` events before the response
completes, adding up to its ``output_text``, usage at the end; tool calls only when the
client asks (``stream_tool_calls``), as ``function_call`` items whose argument fragments
add up to the call; a paused run completes with the pause named; a run that fails
mid-stream ends with ``response.failed`` carrying its error and the text so far."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from serve_helpers import Served
from test_tool_call_streaming import BODY, JANE, DropCalls, Fragments, mailer, send_mail, sent

import plait
from plait.testing import ai, call


def client(served: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)


def test_text_arrives_in_deltas_before_the_response_completes(
    serve: Callable[..., Served],
) -> None:
    agent = plait.create_agent(
        Fragments(["Here is a long answer in several words."] * 2), checkpointer="memory", name="m"
    )
    with client(serve(agent)) as api:
        events = list(api.responses.create(model="m", input="Talk to me.", stream=True))
        with api.responses.stream(model="m", input="Again.") as stream:
            streamed = [e.type for e in stream]
            final = stream.get_final_response()
    kinds = [e.type for e in events]
    deltas = [i for i, kind in enumerate(kinds) if kind == "response.output_text.delta"]
    assert len(deltas) == 8  # a delta per word, as the model streamed them
    assert (
        max(deltas) < kinds.index("response.output_text.done") < kinds.index("response.completed")
    )
    assert kinds[-1] == "response.completed"
    text = "".join(events[i].delta for i in deltas)
    completed = events[-1]
    assert completed.type == "response.completed"
    assert text == completed.response.output_text == "Here is a long answer in several words."
    usage = completed.response.usage
    assert usage is not None and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    assert "response.function_call_arguments.delta" not in kinds
    assert streamed.count("response.output_text.delta") == 8
    assert final.output_text == "Here is a long answer in several words."


def test_tool_calls_stream_as_function_call_items_only_when_asked(
    serve: Callable[..., Served],
) -> None:
    served = serve(mailer(False))
    with client(served) as api:
        plain = list(api.responses.create(model="mailer", input="Mail Jane.", stream=True))
        with api.responses.stream(
            model="mailer", input="Mail Jane again.", extra_body={"stream_tool_calls": True}
        ) as stream:
            events = list(stream)
            final = stream.get_final_response()
        with pytest.raises(openai.UnprocessableEntityError, match="stream_tool_calls: expected"):
            api.responses.create(
                model="mailer", input="Mail Jane.", extra_body={"stream_tool_calls": True}
            )
    assert not [e for e in plain if "function_call" in e.type]
    assert [o.type for o in plain[-1].response.output] == ["message"]

    kinds = [e.type for e in events]
    (added,) = [e for e in events if e.type == "response.output_item.added" and e.output_index]
    assert added.item.type == "function_call" and added.item.name == "send_mail"
    fragments = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(fragments) > 3
    assert json.loads("".join(fragments)) == {"to": JANE, "body": BODY}
    (done,) = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert done.arguments == "".join(fragments) and done.name == "send_mail"
    # the call's fragments go out between the text before it and the text after it
    first_text = kinds.index("response.output_text.delta")
    assert first_text < kinds.index("response.function_call_arguments.delta")
    after = len(kinds) - 1 - kinds[::-1].index("response.output_text.delta")
    assert kinds.index("response.function_call_arguments.done") < after
    message, function_call = final.output
    assert message.type == "message" and function_call.type == "function_call"
    assert function_call.call_id == "c1" and function_call.status == "completed"
    assert json.loads(function_call.arguments) == {"to": JANE, "body": BODY}
    assert final.output_text == "Sending it now.\n\ndone"
    assert final.status == "completed"  # the agent ran the call: nothing for the client


def test_a_streamed_call_a_middleware_drops_ends_incomplete_and_nothing_runs(
    serve: Callable[..., Served],
) -> None:
    sent.clear()
    model = Fragments([ai("Sending it now.", call("send_mail", id="c1", to=JANE, body=BODY))])
    agent = plait.create_agent(
        model, tools=[send_mail], middleware=[DropCalls()], checkpointer="memory"
    )
    with client(serve(agent)) as api:
        with api.responses.stream(
            model="agent", input="Mail Jane.", extra_body={"stream_tool_calls": True}
        ) as stream:
            kinds = [e.type for e in stream]
            final = stream.get_final_response()
    assert kinds.count("response.function_call_arguments.delta") >= 2
    assert "response.function_call_arguments.done" not in kinds
    message, dropped = final.output
    assert (
        message.type == "message"
        and dropped.type == "function_call"
        and dropped.status == "incomplete"
    )
    assert final.output_text == "Sending it now." and sent == []


def test_a_paused_run_completes_naming_what_waits_and_a_streamed_resume_finishes_it(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    with client(serve(support)) as api:
        with api.responses.stream(model="agent", input="Refund order 1042.") as stream:
            kinds = [e.type for e in stream]
            final = stream.get_final_response()
        with api.responses.stream(
            model="agent",
            input="Approved.",  # the SDK wants an input; a resume takes none from it
            previous_response_id=final.id,
            extra_body={"resume": {"decisions": [{"type": "approve"}]}},
        ) as resumed:
            deltas = [e.delta for e in resumed if e.type == "response.output_text.delta"]
            done = resumed.get_final_response()
    extra = final.model_extra or {}
    (interrupt,) = extra["plait"]["interrupts"]
    (review,) = interrupt["tool_calls"]
    assert extra["plait"]["status"] == "interrupted"
    assert final.output_text.startswith("Let me look that order up.\n\n[The run is paused")
    assert f"issue_refund (tool call {review['id']})" in final.output_text
    assert kinds.index("response.output_text.delta") < kinds.index("response.completed")
    assert final.usage is not None and final.usage.input_tokens > 0
    assert "".join(deltas) == done.output_text == "Refunded 25.00 EUR for order 1042."
    assert (done.model_extra or {})["plait"]["status"] == "success"
    assert support.get_interrupts(extra["plait"]["thread_id"]) == []


def test_a_run_failing_mid_stream_ends_with_response_failed(
    serve: Callable[..., Served],
) -> None:
    ran: list[str] = []

    def ping() -> str:
        """Ping."""
        ran.append("ping")
        return "pong"

    def broken(messages: Any, tools: Any) -> Any:
        raise RuntimeError("boom")

    model = plait.ScriptedChatModel([ai("Working on it.", call("ping")), broken])
    agent = plait.create_agent(model, tools=[ping], checkpointer="memory")
    with client(serve(agent)) as api:
        events = list(api.responses.create(model="agent", input="Go.", stream=True))
    kinds = [e.type for e in events]
    assert kinds[-1] == "response.failed" and "response.completed" not in kinds
    assert kinds.index("response.output_text.delta") < kinds.index("response.failed")
    failed = events[-1]
    assert failed.type == "response.failed"
    assert failed.response.status == "failed" and failed.response.error is not None
    assert failed.response.error.message == "the run failed with an internal error (RuntimeError)"
    (message,) = failed.response.output
    assert message.type == "message" and message.status == "incomplete"
    assert message.content[0].text == "Working on it."  # type: ignore[union-attr]
    assert ran == ["ping"]
