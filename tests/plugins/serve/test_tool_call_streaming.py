"""A tool call's arguments reach each protocol's client in fragments as the model streams
them, before the call runs and before the run ends, and the fragments add up to the
arguments the tool got: AG-UI's TOOL_CALL_START / TOOL_CALL_ARGS / TOOL_CALL_END with
``@ag-ui/client`` under node, the Agent Protocol's ``messages-tuple`` chunks
(``tool_call_chunks``, read back with LangChain's ``AIMessageChunk``) and ``messages``
partials with langgraph-sdk, a chat completion's ``delta.tool_calls`` with openai when
it asks for them (``stream_tool_calls``). ``updates`` still carries each call whole, once. With pii
pseudonymizing, every fragment is restored (the model's placeholders never show)."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessageChunk as LCChunk
from langgraph_sdk import get_sync_client
from serve_helpers import Served
from test_ag_ui_client import JS, node_or_skip

import plait
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCallChunk
from plait.testing import ai, call
from plait.types import ModelRequest, ModelResponse

JANE = "jane@corp.example.com"
BODY = "Your refund of 25.00 EUR for order 1042 is on its way."
sent: list[dict[str, str]] = []


@plait.tool
def send_mail(to: str, body: str) -> str:
    """Send a mail.

    Args:
        to: the address.
        body: the text.
    """
    sent.append({"to": to, "body": body})
    return "sent"


class Fragments(plait.ScriptedChatModel):
    """Streams each scripted answer as a provider does: its text word by word, each tool
    call's arguments six characters at a time, the first fragment naming the call."""

    def stream(self, messages: Sequence[AnyMessage], **kwargs: Any) -> Iterator[AIMessageChunk]:
        message = self.invoke(messages, **kwargs)
        for word in re.findall(r"\S+\s*", message.text):
            yield AIMessageChunk(word, id=message.id)
        for index, tool_call in enumerate(message.tool_calls):
            raw = json.dumps(tool_call.args)
            for at in range(0, len(raw), 6):
                named = (tool_call.id, tool_call.name) if at == 0 else (None, None)
                part = ToolCallChunk(index, *named, raw[at : at + 6])
                yield AIMessageChunk(tool_call_chunks=[part], id=message.id)

    async def astream(
        self, messages: Sequence[AnyMessage], **kwargs: Any
    ) -> AsyncIterator[AIMessageChunk]:
        for chunk in self.stream(messages, **kwargs):
            yield chunk


def mailer(pii: bool) -> plait.Agent:
    """Mails ``JANE``; with ``pii`` the model only knows her as ``<EMAIL_1>``."""
    to = "<EMAIL_1>" if pii else JANE
    answers = [ai("Sending it now.", call("send_mail", id="c1", to=to, body=BODY)), "done"]
    model = Fragments(answers * 2)
    middleware: list[Any] = []
    if pii:
        middleware.append(("pii", {"pii_type": "email", "strategy": "pseudonymize"}))
    return plait.create_agent(
        model, tools=[send_mail], middleware=middleware, checkpointer="memory", name="mailer"
    )


EXPECTED = json.dumps({"to": JANE, "body": BODY})
"""The arguments' text as the client must read it: real values, as the model wrote it."""


@pytest.mark.parametrize("pii", [False, True], ids=["plain", "pii"])
def test_the_ag_ui_client_gets_the_arguments_in_fragments_before_the_call_runs(
    serve: Callable[..., Served], pii: bool
) -> None:
    node = node_or_skip()
    sent.clear()
    served = serve(mailer(pii))
    done = subprocess.run(
        [node, str(JS / "tool_args.mjs"), served.url, "t1", f"Mail {JANE} please"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    events = report["events"]
    kinds = [e["type"] for e in events]
    start = kinds.index("TOOL_CALL_START")
    end = kinds.index("TOOL_CALL_END")
    fragments = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    args_at = [i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_ARGS"]
    # many fragments, each after the call's start, all before its end, its result and
    # the run's end: they streamed
    assert len(fragments) >= len(EXPECTED) // 6 - 2 and all(fragments)
    assert start < args_at[0] and args_at[-1] < end < kinds.index("TOOL_CALL_RESULT")
    assert kinds.index("TOOL_CALL_RESULT") < kinds.index("RUN_FINISHED")
    assert events[start]["toolCallId"] == "c1" == events[end]["toolCallId"]
    assert "".join(fragments) == EXPECTED
    assert not any("<EMAIL" in f for f in fragments)
    # the client assembled the call as it streamed, growing with each fragment
    buffers = [e["buffer"] for e in events if e["type"] == "buffer"]
    assert buffers == ["".join(fragments[:n]) for n in range(len(fragments))]
    (assistant,) = [m for m in report["messages"] if m.get("toolCalls")]
    (tool_call,) = assistant["toolCalls"]
    assert tool_call["id"] == "c1" and tool_call["function"]["name"] == "send_mail"
    assert tool_call["function"]["arguments"] == EXPECTED
    assert sent == [json.loads(EXPECTED)]
    assert report["result"] == "done"


def stream_parts(served: Served, modes: list[str]) -> list[tuple[str, Any]]:
    lg = get_sync_client(url=served.url)
    thread = lg.threads.create()["thread_id"]
    return [
        (part.event, part.data)
        for part in lg.runs.stream(
            thread,
            "mailer",
            input={"messages": [{"role": "user", "content": f"Mail {JANE} please"}]},
            stream_mode=modes,
        )
    ]


@pytest.mark.parametrize("pii", [False, True], ids=["plain", "pii"])
def test_langgraph_sdk_gets_tool_call_chunks_in_messages_tuple_mode(
    serve: Callable[..., Served], pii: bool
) -> None:
    sent.clear()
    parts = stream_parts(serve(mailer(pii)), ["messages-tuple", "updates"])
    kinds = [event for event, _ in parts]
    chunks = [
        (i, data[0])
        for i, (event, data) in enumerate(parts)
        if event == "messages" and data[0].get("tool_call_chunks")
    ]
    fragments = [c["tool_call_chunks"][0]["args"] for _, c in chunks]
    assert len(fragments) >= len(EXPECTED) // 6 - 2
    first = chunks[0][1]["tool_call_chunks"][0]
    assert (first["id"], first["name"], first["index"]) == ("c1", "send_mail", 0)
    assert all(c["tool_call_chunks"][0]["id"] is None for _, c in chunks[1:])
    assert {c["id"] for _, c in chunks} == {chunks[0][1]["id"]}  # the AI message's id
    assert {parts[i][1][1]["langgraph_node"] for i, _ in chunks} == {"model"}
    # the chunks, as LangChain reads them, add up to the call the tool got
    whole = sum((LCChunk(**c) for _, c in chunks[1:]), LCChunk(**chunks[0][1]))
    assert whole.tool_calls == [
        {"name": "send_mail", "args": json.loads(EXPECTED), "id": "c1", "type": "tool_call"}
    ]
    assert "".join(fragments) == EXPECTED
    # all before the model's update (the call whole, once) and the tool's result
    updates = [(i, data) for i, (event, data) in enumerate(parts) if event == "updates"]
    model_at, model_update = next((i, d) for i, d in updates if "model" in d)
    tools_at = next(i for i, d in updates if "tools" in d)
    assert chunks[-1][0] < model_at < tools_at < len(parts)
    (message,) = model_update["model"]["messages"]
    assert [(c["id"], c["args"]) for c in message["tool_calls"]] == [("c1", json.loads(EXPECTED))]
    calls = [
        c
        for _, d in updates
        for m in d.get("model", {}).get("messages", [])
        for c in m.get("tool_calls", [])
    ]
    assert len(calls) == 1
    assert kinds[-1] != "error" and sent == [json.loads(EXPECTED)]


def test_langgraph_sdk_messages_mode_partials_grow_with_the_arguments(
    serve: Callable[..., Served],
) -> None:
    sent.clear()
    parts = stream_parts(serve(mailer(True)), ["messages"])
    partials = [
        data[0]
        for event, data in parts
        if event == "messages/partial" and data[0].get("tool_call_chunks")
    ]
    assert len(partials) >= len(EXPECTED) // 6 - 2
    so_far = [p["tool_call_chunks"][0]["args"] for p in partials]
    assert so_far == [EXPECTED[: len(s)] for s in so_far] and so_far[-1] == EXPECTED
    assert all(len(a) < len(b) for a, b in itertools.pairwise(so_far))
    # the partly read arguments, as LangChain reads a chunk's
    assert partials[-1]["tool_calls"][-1]["args"] == json.loads(EXPECTED)
    assert partials[-1]["content"] == "Sending it now."
    complete = [
        data[0]
        for event, data in parts
        if event == "messages/complete" and data[0].get("type") == "ai" and data[0]["tool_calls"]
    ]
    assert [c["tool_calls"][0]["args"] for c in complete] == [json.loads(EXPECTED)]
    assert "tool_call_chunks" not in complete[0]


@pytest.mark.parametrize("pii", [False, True], ids=["plain", "pii"])
def test_an_openai_chat_stream_asked_for_tool_calls_gets_their_argument_fragments(
    serve: Callable[..., Served], pii: bool
) -> None:
    sent.clear()
    served = serve(mailer(pii))
    api = openai.OpenAI(base_url=served.url + "/v1", api_key="none", max_retries=0)
    ask = {"model": "mailer", "messages": [{"role": "user", "content": f"Mail {JANE} please"}]}
    chunks = list(
        api.chat.completions.create(**ask, stream=True, extra_body={"stream_tool_calls": True})
    )
    deltas = [(i, c.choices[0].delta) for i, c in enumerate(chunks) if c.choices]
    calls = [(i, d.tool_calls[0]) for i, d in deltas if d.tool_calls]
    first = calls[0][1]
    assert (first.index, first.id, first.type) == (0, "c1", "function")
    assert first.function is not None and first.function.name == "send_mail"
    fragments = [c.function.arguments for _, c in calls[1:] if c.function]
    assert len(fragments) >= len(EXPECTED) // 6 - 2 and all(fragments)
    assert all(c.id is None and c.index == 0 for _, c in calls[1:])
    assert "".join(fragments) == EXPECTED
    # between the text before the call and the answer after it ran, before the end
    text_at = [i for i, d in deltas if d.content]
    done_at = next(i for i, d in deltas if d.content and "done" in d.content)
    assert text_at[0] < calls[0][0] and calls[-1][0] < done_at < len(chunks) - 1
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert "".join(d.content or "" for _, d in deltas) == "Sending it now.\n\ndone"
    assert sent == [json.loads(EXPECTED)]
    # not asked: no tool calls, as before (the same run on a new thread); asked without
    # streaming: one clear error
    plain = list(api.chat.completions.create(**ask, stream=True))
    assert all(c.choices[0].delta.tool_calls is None for c in plain if c.choices)
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        api.chat.completions.create(**ask, extra_body={"stream_tool_calls": True})
    assert refused.value.body == {
        "code": "invalid_request",
        "message": "stream_tool_calls: expected true (with stream true) or false, got True",
    }


class DropCalls(plait.Middleware):
    """Answers with the model's text alone: every tool call it streamed is dropped."""

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Any]
    ) -> ModelResponse:
        response = await handler(request)
        message = response.message
        assert message is not None and message.tool_calls
        return ModelResponse([AIMessage(message.text, id=message.id)])


def test_a_streamed_call_a_middleware_drops_is_ended_for_the_ag_ui_client(
    serve: Callable[..., Served],
) -> None:
    """Its start and fragments were sent: the client gets its TOOL_CALL_END (the run could
    not finish with a call open) and no result, and nothing runs."""
    node = node_or_skip()
    sent.clear()
    model = Fragments([ai("Sending it now.", call("send_mail", id="c1", to=JANE, body=BODY))])
    agent = plait.create_agent(
        model, tools=[send_mail], middleware=[DropCalls()], checkpointer="memory"
    )
    served = serve(agent)
    done = subprocess.run(
        [node, str(JS / "tool_args.mjs"), served.url, "t1", f"Mail {JANE} please"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    kinds = [e["type"] for e in report["events"] if e["type"] != "buffer"]
    assert kinds.count("TOOL_CALL_ARGS") >= 2
    assert (
        kinds.index("TOOL_CALL_START") < kinds.index("TOOL_CALL_END") < kinds.index("RUN_FINISHED")
    )
    assert "TOOL_CALL_RESULT" not in kinds and sent == []
    assert report["result"] == "Sending it now."
    assert not agent.get_state("t1")["messages"][-1].tool_calls


def test_a_call_a_dead_worker_left_open_is_ended_on_ag_ui_when_its_step_restarts() -> None:
    """A durable run's step made again after its worker died mid-call: the call is ended
    (the AG-UI client refuses a start for a call in progress, and a run end with one
    open) before the custom event saying what is void."""
    from plait_serve.ag_ui import project

    marker = {
        "type": "step_restarted",
        "void_after": 7,
        "voided": 2,
        "message_id": "ai-1",
        "open": True,
        "open_calls": ["c1", "c2"],
    }
    events = [e.model_dump(by_alias=True, exclude_none=True) for e in project("t", marker)]
    assert [(e["type"], e.get("toolCallId", e.get("messageId"))) for e in events] == [
        ("TEXT_MESSAGE_END", "ai-1"),
        ("TOOL_CALL_END", "c1"),
        ("TOOL_CALL_END", "c2"),
        ("CUSTOM", None),
    ]
