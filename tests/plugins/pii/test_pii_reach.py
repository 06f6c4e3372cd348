"""pseudonymize, everywhere a value could travel: no model call made for the run —
the agent's, a summary written by middleware listed before pii — sees a real value, nor
does the checkpoint; the caller's structured answer and a reviewer's question hold the
real values."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import attrs
import pytest

import plait
from plait.checkpoint import MemoryCheckpointer, StepDelta
from plait.messages import ToolMessage
from plait.models import ScriptedChatModel
from plait.testing import ai, call
from plait_human_in_the_loop import HumanInTheLoopMiddleware
from plait_pii import PIIMiddleware
from plait_summarization import Keep, SummarizationMiddleware

JANE = "jane@corp.example.com"
BOB = "bob@corp.example.com"
ran: list[dict[str, Any]] = []


@plait.tool
def lookup(name: str) -> str:
    """Find a customer's address.

    Args:
        name: who.
    """
    return {"Jane": f"Jane's address is {JANE}", "Bob": f"Bob: {BOB}"}[name]


@plait.tool
def send_mail(to: str, body: str) -> str:
    """Send a mail.

    Args:
        to: the address.
        body: the text.
    """
    ran.append({"to": to, "body": body})
    return "sent"


def everything_sent(*models: ScriptedChatModel) -> str:
    return json.dumps(
        [
            [m.content, [c.args for c in getattr(m, "tool_calls", ())]]
            for model in models
            for request in model.requests
            for m in request.messages
        ],
        ensure_ascii=False,
    )


def pii(**options: Any) -> PIIMiddleware:
    return PIIMiddleware("email", strategy="pseudonymize", apply_to_tool_results=True, **options)


# -- a model call made by other middleware ---------------------------------------------------


@pytest.mark.parametrize("pii_first", [False, True])
def test_a_summary_model_never_sees_a_tool_results_value(make_agent: Any, pii_first: bool) -> None:
    summarizer = ScriptedChatModel(["Jane's address was looked up: <EMAIL_1>."])
    summarize = SummarizationMiddleware(summarizer, trigger={"messages": 3}, keep=Keep(messages=0))
    order = [pii(), summarize] if pii_first else [summarize, pii()]
    agent = make_agent(
        [ai("", call("lookup", id="c1", name="Jane")), "It is <EMAIL_1>."],
        tools=[lookup],
        middleware=order,
    )
    result = agent.invoke("what is Jane's address?", thread_id="t")
    assert len(summarizer.requests) == 1
    assert JANE not in everything_sent(summarizer, agent.model)
    assert "<EMAIL_1>" in summarizer.requests[0].messages[0].text
    assert result.text == f"It is {JANE}."  # the summary's placeholder still restores


class RecordingCheckpointer(MemoryCheckpointer):
    """A memory checkpointer that keeps every step it was given, to search what is stored."""

    def __init__(self) -> None:
        super().__init__()
        self.deltas: list[StepDelta] = []

    def save(self, thread_id: str, delta: StepDelta) -> None:
        self.deltas.append(delta)
        super().save(thread_id, delta)


def test_the_checkpoint_never_holds_a_tool_results_value(make_agent: Any) -> None:
    store = RecordingCheckpointer()
    agent = make_agent(
        [ai("", call("lookup", id="c1", name="Jane")), "ok"],
        tools=[lookup],
        middleware=[pii()],
        checkpointer=store,
    )
    agent.invoke("find Jane", thread_id="t")
    stored = json.dumps([[m.content for m in d.upserts] for d in store.deltas])
    assert JANE not in stored and "<EMAIL_1>" in stored


@plait.tool
def record(name: str, runtime: plait.ToolRuntime) -> ToolMessage:
    """A customer's record, its fields in the message's metadata as an MCP tool keeps its
    structuredContent.

    Args:
        name: who.
    """
    return ToolMessage(
        "Jane's record",
        tool_call_id=runtime.tool_call_id,
        metadata={"structured_content": {"name": name, "emails": [JANE]}},
    )


@pytest.mark.parametrize("strategy", ["pseudonymize", "redact", "hash"])
def test_a_tool_results_metadata_is_handled_before_it_is_stored(
    make_agent: Any, strategy: str
) -> None:
    """The message's metadata is kept in state and checkpointed with it (an MCP tool's
    structured_content): it held the value the text no longer did."""

    store = RecordingCheckpointer()
    agent = make_agent(
        [ai("", call("record", id="c1", name="Jane")), "ok"],
        tools=[record],
        middleware=[PIIMiddleware("email", strategy=strategy, apply_to_tool_results=True)],
        checkpointer=store,
    )
    result = agent.invoke("find Jane", thread_id="t")
    stored = json.dumps([[[m.content, m.metadata] for m in d.upserts] for d in store.deltas])
    assert JANE not in stored
    assert JANE not in everything_sent(agent.model)
    (answer,) = [m for m in result.messages if isinstance(m, ToolMessage)]
    emails = answer.metadata["structured_content"]["emails"]
    if strategy == "pseudonymize":
        assert "<EMAIL_1>" in stored
        assert emails == [JANE]  # the caller's copy is restored, as its text is
    else:
        assert emails != [JANE] and "jane" not in emails[0]


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_parallel_tool_results_get_distinct_numbers(make_agent: Any, run: str) -> None:
    ran.clear()
    script = [
        ai("", call("lookup", id="c1", name="Jane"), call("lookup", id="c2", name="Bob")),
        ai("", call("send_mail", id="c3", to="<EMAIL_2>", body="hi <EMAIL_1>")),
        "done",
    ]
    agent = make_agent(script, tools=[lookup, send_mail], middleware=[pii()])
    if run == "invoke":
        agent.invoke("mail Bob about Jane", thread_id="t")
    else:
        asyncio.run(agent.ainvoke("mail Bob about Jane", thread_id="t"))
    table = agent.get_state("t")["pii_pseudonyms"]["email"]
    assert sorted(table) == [BOB, JANE] and sorted(table.values()) == [1, 2]
    value = {number: address for address, number in table.items()}  # parallel: either order
    assert ran == [{"to": value[2], "body": f"hi {value[1]}"}]
    assert JANE not in everything_sent(agent.model) and BOB not in everything_sent(agent.model)


# -- what the caller and a reviewer read -----------------------------------------------------


@attrs.frozen
class Contact:
    name: str
    emails: tuple[str, ...]


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_the_structured_answer_holds_real_values(make_agent: Any, run: str) -> None:
    answer = '{"name": "Jane", "emails": ["<EMAIL_1>", "<EMAIL_2>"]}'
    agent = make_agent(
        [ai("", call("lookup", id="c1", name="Jane")), answer],
        tools=[lookup],
        middleware=[pii()],
        response_format=Contact,
    )
    question = f"Jane's contact card; she also uses {BOB}"
    if run == "invoke":
        result = agent.invoke(question, thread_id="t")
    else:
        result = asyncio.run(agent.ainvoke(question, thread_id="t"))
    assert result.structured_response == Contact("Jane", (BOB, JANE))
    assert result["structured_response"] == Contact("Jane", (BOB, JANE))
    assert JANE not in everything_sent(agent.model)


def test_a_structured_answer_as_a_dict_holds_real_values(make_agent: Any) -> None:
    schema = {
        "title": "card",
        "type": "object",
        "properties": {"email": {"type": "string"}},
        "required": ["email"],
    }
    agent = make_agent(['{"email": "<EMAIL_1>"}'], middleware=[pii()], response_format=schema)
    result = agent.invoke(f"card for {JANE}", thread_id="t")
    assert result.structured_response == {"email": JANE}


def test_a_reviewer_approves_the_real_call_and_the_model_never_sees_it(make_agent: Any) -> None:
    ran.clear()
    review = HumanInTheLoopMiddleware(interrupt_on={"send_mail": True})
    agent = make_agent(
        [ai("", call("send_mail", id="c1", to="<EMAIL_1>", body="hello <EMAIL_1>")), "sent"],
        tools=[send_mail],
        middleware=[pii(), review],
    )
    paused = agent.invoke(f"say hello to {JANE}", thread_id="t")
    request = paused.interrupts[0].value["action_requests"][0]
    assert request["args"] == {"to": JANE, "body": f"hello {JANE}"}
    assert JANE in request["description"] and "<EMAIL_1>" not in request["description"]
    assert ran == []
    done = agent.invoke(plait.Command(resume={"decisions": [{"type": "approve"}]}), thread_id="t")
    assert done.text == "sent"
    assert ran == [{"to": JANE, "body": f"hello {JANE}"}]
    assert JANE not in everything_sent(agent.model)
    # the thread keeps placeholders, also for the paused run's question
    stored = agent.get_state("t")["messages"][1]
    assert stored.tool_calls[0].args == {"to": "<EMAIL_1>", "body": "hello <EMAIL_1>"}
