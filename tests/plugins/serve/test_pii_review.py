"""A server's reviewer sees real values when the agent pseudonymizes them (pii): the AG-UI
and Agent Protocol streams' interrupts and the stored interrupt a resume is checked
against show the real address; a resume is still matched to the call under review (ids
and decisions, as stored), an edit written with real values is accepted and runs, and
the model only ever sees placeholders."""

from __future__ import annotations

import json
from collections.abc import Callable

from langgraph_sdk import get_sync_client
from serve_helpers import Served, approve, post_sse, run_input

import plait
from plait.testing import ai, call

JANE = "jane@corp.example.com"
BOB = "bob@corp.example.com"
PSEUDONYMIZE_ALL = (
    "pii",
    {"pii_type": "email", "strategy": "pseudonymize", "apply_to_tool_results": True},
)
"""pii numbering addresses in what the user sends and what tools return."""
sent: list[str] = []


@plait.tool
def send_mail(to: str) -> str:
    """Send a mail.

    Args:
        to: the address.
    """
    sent.append(to)
    return "sent"


def test_an_ag_ui_reviewer_sees_and_edits_the_real_address(serve: Callable[..., Served]) -> None:
    sent.clear()
    model = plait.ScriptedChatModel([ai("", call("send_mail", id="c1", to="<EMAIL_1>")), "done"])
    agent = plait.create_agent(
        model,
        tools=[send_mail],
        middleware=[PSEUDONYMIZE_ALL, ("human_in_the_loop", {"interrupt_on": {"send_mail": True}})],
        checkpointer="memory",
    )
    with serve(agent).client() as client:
        first = post_sse(client, "/ag-ui", run_input("t", "r1", f"write to {JANE}"))
        (interrupt,) = first[-1][1]["outcome"]["interrupts"]
        review = interrupt["metadata"]["plait"]["tool_calls"][0]
        assert review["id"] == "c1" == interrupt["toolCallId"]
        assert review["args"] == {"to": JANE}
        assert "<EMAIL_1>" not in json.dumps(interrupt)
        edit = {
            "type": "edit",
            "tool_call_id": "c1",
            "edited_action": {"name": "send_mail", "args": {"to": BOB}},
        }
        second = post_sse(
            client, "/ag-ui", run_input("t", "r2", resume=approve(interrupt["id"], edit))
        )
    assert second[-1][1]["type"] == "RUN_FINISHED", second[-1]
    assert second[-1][1]["result"] == "done"
    assert sent == [BOB]
    seen = json.dumps(
        [
            [m.content, [c.args for c in getattr(m, "tool_calls", ())]]
            for r in model.requests
            for m in r.messages
        ],
        ensure_ascii=False,
    )
    # the reviewer's edit (a new value, in human_in_the_loop's note) is numbered too
    assert JANE not in seen and BOB not in seen
    assert '{"to": "<EMAIL_1>"}' in seen and "<EMAIL_2>" in seen
    assert agent.get_interrupts("t") == []
    agent.close()


def test_a_resume_naming_another_call_is_still_refused(serve: Callable[..., Served]) -> None:
    agent = plait.create_agent(
        plait.ScriptedChatModel([ai("", call("send_mail", id="c1", to="<EMAIL_1>"))]),
        tools=[send_mail],
        middleware=[
            ("pii", {"pii_type": "email", "strategy": "pseudonymize"}),
            ("human_in_the_loop", {"interrupt_on": {"send_mail": True}}),
        ],
        checkpointer="memory",
    )
    with serve(agent).client() as client:
        first = post_sse(client, "/ag-ui", run_input("t", "r1", f"write to {JANE}"))
        (interrupt,) = first[-1][1]["outcome"]["interrupts"]
        wrong = {"type": "approve", "tool_call_id": "other"}
        refused = client.post(
            "/ag-ui", json=run_input("t", "r2", resume=approve(interrupt["id"], wrong))
        )
    assert refused.status_code == 409, refused.text
    assert "names tool call 'other'" in refused.text
    agent.close()


def test_an_agent_protocol_reviewer_sees_the_real_address(serve: Callable[..., Served]) -> None:
    """LangGraph's SDK: the streamed ``__interrupt__`` and the thread's state (read from
    the checkpoint) show the real address; the approved call runs with it."""
    sent.clear()
    model = plait.ScriptedChatModel([ai("", call("send_mail", id="c1", to="<EMAIL_1>")), "done"])
    agent = plait.create_agent(
        model,
        tools=[send_mail],
        middleware=[
            ("pii", {"pii_type": "email", "strategy": "pseudonymize"}),
            ("human_in_the_loop", {"interrupt_on": {"send_mail": True}}),
        ],
        checkpointer="memory",
    )
    key = "pii-review-key-0123456789abcdef"
    lg = get_sync_client(url=serve(agent, keys=[key]).url, api_key=key)
    thread = lg.threads.create()["thread_id"]
    ask = {"messages": [{"role": "user", "content": f"write to {JANE}"}]}
    parts = list(lg.runs.stream(thread, agent.name, input=ask, stream_mode=["updates"]))
    updates = [p.data for p in parts if p.event == "updates"]
    (interrupt,) = updates[-1]["__interrupt__"]
    assert interrupt["value"]["action_requests"][0]["args"] == {"to": JANE}
    assert lg.threads.get_state(thread)["interrupts"] == [interrupt]
    result = lg.runs.wait(
        thread, agent.name, command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert result["messages"][-1]["content"] == "done"
    assert sent == [JANE]
    seen = json.dumps([m.content for r in model.requests for m in r.messages])
    assert JANE not in seen
    agent.close()


def test_a_private_state_key_is_never_served(serve: Callable[..., Served]) -> None:
    """pii's pseudonym table (``StateField(private=True)``, every real value it has
    numbered) is checkpointed but not shown: it was in the run log's ``state`` events,
    the AG-UI ``STATE_SNAPSHOT``/``STATE_DELTA`` a client gets, ``/plait/.../events`` and
    the Agent Protocol's ``/state``, also for a value only a tool had returned."""

    def contact(name: str) -> str:
        """The address of a person."""
        return BOB

    model = plait.ScriptedChatModel([ai("", call("contact", id="c1", name="Bob")), "done"])
    agent = plait.create_agent(
        model,
        tools=[contact],
        middleware=[PSEUDONYMIZE_ALL],
        checkpointer="memory",
    )
    served = serve(agent)
    with served.client() as client:
        events = post_sse(client, "/ag-ui", run_input("x", "r1", f"I am {JANE}; find Bob."))
        assert events[-1][1]["type"] == "RUN_FINISHED"
        seen = [
            json.dumps(events),
            client.get("/plait/threads/x/events").text,
            client.get("/threads/x/state").text,
            client.get("/threads/x").text,
            client.post("/threads/x/history", json={}).text,
            client.get("/ag-ui/threads/x/stream?since=0").text,
        ]
    assert agent.get_state("x")["pii_pseudonyms"] == {"email": {JANE: 1, BOB: 2}}  # kept
    for text in seen:
        assert "pii_pseudonyms" not in text
    assert any("STATE_SNAPSHOT" in text for text in seen)


def test_a_served_token_stream_shows_the_answer_with_real_values(
    serve: Callable[..., Served],
) -> None:
    """The text a client streams (AG-UI ``TEXT_MESSAGE_CONTENT``, the Agent Protocol's
    ``messages-tuple`` tokens through LangGraph's SDK) is the answer the caller gets, with
    the address where the model wrote ``<EMAIL_1>``."""
    model = plait.ScriptedChatModel(["Mail <EMAIL_1> today.", "Mail <EMAIL_1> today."])
    agent = plait.create_agent(
        model,
        middleware=[("pii", {"pii_type": "email", "strategy": "pseudonymize"})],
        checkpointer="memory",
    )
    served = serve(agent)
    with served.client() as client:
        events = [e[1] for e in post_sse(client, "/ag-ui", run_input("t", "r1", f"for {JANE}"))]
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert "".join(deltas) == events[-1]["result"] == f"Mail {JANE} today."
    assert not [d for d in deltas if "<" in d]
    lg = get_sync_client(url=served.url)
    thread = lg.threads.create()["thread_id"]
    ask = {"messages": [{"role": "user", "content": f"for {JANE}"}]}
    parts = list(lg.runs.stream(thread, agent.name, input=ask, stream_mode="messages-tuple"))
    tokens = [p.data[0]["content"] for p in parts if p.event == "messages"]
    assert "".join(tokens) == f"Mail {JANE} today."
    assert "<EMAIL_1>" in json.dumps([m.content for r in model.requests for m in r.messages])
    agent.close()


@plait.tool
def notify(to: str) -> str:
    """Notify someone.

    Args:
        to: the address.
    """
    return f"notified {to}"


def test_a_served_stream_shows_tool_calls_and_results_with_real_values(
    serve: Callable[..., Served],
) -> None:
    """AG-UI's ``TOOL_CALL_ARGS``/``TOOL_CALL_RESULT`` and the Agent Protocol's tool calls
    and tool messages show the address, as the text beside them does; the thread and the
    model keep ``<EMAIL_1>``."""
    script = [ai("Writing to <EMAIL_1>.", call("notify", id="c1", to="<EMAIL_1>")), "done"]
    model = plait.ScriptedChatModel(script * 2)
    agent = plait.create_agent(
        model,
        tools=[notify],
        middleware=[PSEUDONYMIZE_ALL],
        checkpointer="memory",
    )
    served = serve(agent)
    with served.client() as client:
        events = [e[1] for e in post_sse(client, "/ag-ui", run_input("t", "r1", f"to {JANE}"))]
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"to": JANE}
    (result,) = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result == f"notified {JANE}"
    assert "<EMAIL_1>" not in json.dumps(events)
    lg = get_sync_client(url=served.url)
    thread = lg.threads.create()["thread_id"]
    ask = {"messages": [{"role": "user", "content": f"to {JANE}"}]}
    parts = list(lg.runs.stream(thread, agent.name, input=ask, stream_mode=["updates"]))
    calls = [
        c["args"]
        for p in parts
        if p.event == "updates"
        for u in p.data.values()
        for m in u.get("messages", [])
        for c in m.get("tool_calls") or []
    ]
    assert calls == [{"to": JANE}]
    stored = lg.threads.get_state(thread)["values"]["messages"]
    assert [c["args"] for m in stored for c in m.get("tool_calls") or []] == [{"to": "<EMAIL_1>"}]
    tool_texts = [
        m["content"]
        for p in parts
        if p.event == "updates"
        for u in p.data.values()
        for m in u.get("messages", [])
        if m.get("type") == "tool"
    ]
    assert tool_texts == [f"notified {JANE}"]
    assert JANE not in json.dumps([m.content for r in model.requests for m in r.messages])
    agent.close()
