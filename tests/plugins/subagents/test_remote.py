"""Remote sub-agents: a sub-agent given by URL is an assistant of an Agent Protocol server,
here a real ``plait serve`` (uvicorn on loopback, API keys on). ``task`` runs it and
answers with its last AI message; an interrupt of the remote pauses the main run and the
caller's answer resumes it; background tasks are remote threads and runs (start, check,
update as a new run, cancel, list, an interrupted task answered with update_task); a
wrong key, an unknown assistant and an unreachable server are clear tool errors, a bad
spec a clear create_agent error."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.checkpoint import MemoryCheckpointer
from plait.errors import ConfigError
from plait.messages import AnyMessage
from plait.middleware import Middleware
from plait.testing import ai, call, tool_answers, transcript
from plait.types import AgentResult, RunRequest
from plait.usage import RunUsage
from plait_subagents import BACKGROUND_KEY, SubAgentMiddleware

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))
plait_serve = pytest.importorskip("plait_serve")
pytest.importorskip("langgraph_sdk")
from serve_helpers import SUPPORT, Served  # noqa: E402

from plait.agentfile import load_agent  # noqa: E402

KEY = "billing-remote-key-0123456789"
REFUND = "Refunded 25.00 EUR for order 1042."
APPROVE = '{"decisions": [{"type": "approve"}]}'
APPROVE_COMMAND = plait.Command(resume={"decisions": [{"type": "approve"}]})

gate = threading.Event()


@pytest.fixture(autouse=True)
def _gate() -> Iterator[None]:
    gate.clear()
    yield
    gate.set()


@plait.tool
def ledger(customer: str) -> str:
    """Read a customer's ledger.

    Args:
        customer: who.
    """
    assert gate.wait(20), "the test never opened the gate"
    return f"{customer} owes 12 EUR"


def billing_brain(messages: list[AnyMessage], tools: list[object]) -> plait.AIMessage | str:
    """The remote billing agent: reads the ledger when asked to ("ledger: NAME"), then
    answers what it was asked last."""
    last = messages[-1]
    if last.type == "human" and last.text.startswith("ledger: "):
        return ai("", call("ledger", customer=last.text.removeprefix("ledger: ")))
    if last.type == "tool":
        return f"Billing: {last.text}."
    return f"Billing answers: {last.text}"


@pytest.fixture
def billing() -> Iterator[tuple[plait.Agent, Served]]:
    """A plait agent named ``billing`` served with an API key."""
    agent = plait.create_agent(
        plait.ScriptedChatModel([billing_brain] * 40),
        [ledger],
        name="billing",
        checkpointer="memory",
    )
    served = Served(plait_serve.app(agent, keys=[KEY]))
    yield agent, served
    served.stop()


@pytest.fixture
def support() -> Iterator[tuple[plait.Agent, Served]]:
    """examples/support.toml served: it pauses for approval before a refund."""
    agent = load_agent(SUPPORT)
    served = Served(plait_serve.app(agent, keys=[KEY]))
    yield agent, served
    served.stop()


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BILLING_KEY", KEY)
    monkeypatch.setenv("WRONG_KEY", "not-a-key-of-this-server")


def remote(url: str, assistant: str = "billing", **more: Any) -> dict[str, Any]:
    return {
        "name": "billing",
        "description": "answers billing questions",
        "url": url,
        "assistant_id": assistant,
        "api_key_env": "BILLING_KEY",
        **more,
    }


def task(call_id: str, description: str) -> Any:
    return call("task", call_id, description=description, subagent_type="billing")


def start(call_id: str, description: str) -> Any:
    return call("start_task", call_id, description=description, subagent_type="billing")


def remote_threads(agent: plait.Agent) -> list[str]:
    return [t for t in agent.list_threads()]


# -- task ------------------------------------------------------------------------------------


def test_task_runs_the_remote_and_answers_with_its_last_ai_message(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    agent_b, served = billing
    main = make_agent(
        [ai("", task("t1", "What does Ann owe?")), "Ann owes what billing says."],
        middleware=[SubAgentMiddleware(subagents=[remote(served.url)])],
    )
    result = main.invoke("ask billing", thread_id="m")
    answer = tool_answers(result.messages)["t1"]
    assert answer.text == "Billing answers: What does Ann owe?"
    assert answer.status == "success"
    report = answer.metadata["subagents"]
    assert report["subagent_type"] == "billing" and report["url"] == served.url
    # the remote thread holds the brief and the answer, nothing of the main conversation
    [thread] = remote_threads(agent_b)
    assert thread == report["remote_thread_id"]
    assert transcript(agent_b.get_state(thread)["messages"]) == [
        ("human", "What does Ann owe?"),
        ("ai", "Billing answers: What does Ann owe?"),
    ]
    assert result.text == "Ann owes what billing says."


def test_the_usage_the_remote_reports_counts_in_the_main_run(make_agent: Any) -> None:
    spent = plait.Usage(input_tokens=70, output_tokens=30)
    priced = plait.create_agent(
        plait.ScriptedChatModel([plait.AIMessage("Done remotely.", usage=spent)] * 2),
        name="priced",
        checkpointer="memory",
    )
    served = Served(plait_serve.app(priced, keys=[KEY]))
    try:
        own = plait.Usage(input_tokens=100, output_tokens=10)
        middleware = SubAgentMiddleware(subagents=[remote(served.url, "priced")], background=True)
        keep = KeepLedger()
        main = make_agent(
            [
                ai("", task("t1", "Do it."), usage=own),
                plait.AIMessage("Done.", usage=own),
                ai("", start("s1", "Do it again."), usage=own),
                plait.AIMessage("Started.", usage=own),
            ],
            middleware=[keep, middleware],
        )
        result = main.invoke("go", thread_id="m")
        answer = tool_answers(result.messages)["t1"]
        assert answer.usage == spent
        assert answer.metadata["subagents"]["usage"]["input_tokens"] == 70
        assert (result.usage.input_tokens, result.usage.output_tokens) == (270, 50)
        # a background task's usage counts in the run that started it, under start_task
        later = main.invoke("again", thread_id="m")
        assert middleware.wait_for_tasks("m", timeout=20)
        ledger = keep.ledgers[-1]
        assert ledger.nested == {("s1",): spent}
        assert ledger.total == own + own + spent
        assert later.usage.input_tokens in (200, 270)  # whether it ended before the task
        main.model.responses += ["ok"]  # type: ignore[attr-defined]
        main.invoke("news?", thread_id="m")
        # delivered before the first model call after the remote answered: in the run
        # that started it (if it answered before that run's second call) or in this one
        [delivered] = [
            m
            for m in main.get_state("m")["messages"]
            if isinstance(m, plait.HumanMessage) and "subagents" in m.metadata
        ]
        assert delivered.metadata["subagents"]["usage"]["output_tokens"] == 30
    finally:
        served.stop()


class KeepLedger(Middleware):
    """Keeps the ledger of each run, to read it once the run has ended."""

    def __init__(self) -> None:
        self.ledgers: list[RunUsage] = []

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        self.ledgers.append(request.usage)
        return handler(request)


def test_a_streamed_remote_task_counts_its_usage_as_a_waited_one(make_agent: Any) -> None:
    spent = plait.Usage(input_tokens=70, output_tokens=30)
    priced = plait.create_agent(
        plait.ScriptedChatModel([plait.AIMessage("Done remotely.", usage=spent)]),
        name="priced",
        checkpointer="memory",
    )
    served = Served(plait_serve.app(priced, keys=[KEY]))
    try:
        own = plait.Usage(input_tokens=100, output_tokens=10)
        main = make_agent(
            [ai("", task("t1", "Do it."), usage=own), plait.AIMessage("Done.", usage=own)],
            middleware=[SubAgentMiddleware(subagents=[remote(served.url, "priced")])],
        )
        stream = main.stream("go", thread_id="m", mode="messages")
        text = "".join(e.data.content for e in stream if e.path == ("t1",))
        assert text == "Done remotely."
        assert stream.result is not None
        assert tool_answers(stream.result.messages)["t1"].usage == spent
        assert stream.result.usage == own + own + spent
    finally:
        served.stop()


def test_task_of_a_remote_that_uses_tools(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    gate.set()
    _, served = billing
    main = make_agent(
        [ai("", task("t1", "ledger: ann")), "ok"],
        middleware=[SubAgentMiddleware(subagents=[remote(served.url)])],
    )
    result = main.invoke("ask billing", thread_id="m")
    assert tool_answers(result.messages)["t1"].text == "Billing: ann owes 12 EUR."


def test_an_interrupt_of_the_remote_pauses_the_main_run_and_its_answer_resumes_it(
    make_agent: Any, support: tuple[plait.Agent, Served]
) -> None:
    agent_s, served = support
    main = make_agent(
        [ai("", task("t1", "Refund order 1042, please.")), "The refund went through."],
        middleware=[SubAgentMiddleware(subagents=[remote(served.url, agent_s.name)])],
    )
    paused = main.invoke("refund 1042", thread_id="m")
    [pending] = paused.interrupts
    request = pending.value["action_requests"][0]
    assert request["name"] == "issue_refund"
    assert request["args"] == {"order_id": "1042", "amount": 25.0}
    [thread] = remote_threads(agent_s)
    assert [i.value for i in agent_s.get_interrupts(thread)] == [pending.value]

    done = main.invoke(plait.Command(resume={"decisions": [{"type": "approve"}]}), thread_id="m")
    assert tool_answers(done.messages)["t1"].text.startswith(REFUND)
    assert done.text == "The refund went through."
    assert agent_s.get_interrupts(thread) == []
    assert remote_threads(agent_s) == [thread]  # the same remote thread, resumed


@plait.tool
def audit(customer: str, runtime: plait.ToolRuntime) -> str:
    """Audit a customer's account, reporting progress.

    Args:
        customer: who.
    """
    runtime.stream_writer({"audited": customer})
    return f"{customer} is in order"


@pytest.fixture
def auditor() -> Iterator[Served]:
    """A served agent that calls ``audit`` (which writes a custom event), then answers."""
    agent = plait.create_agent(
        plait.ScriptedChatModel(
            [ai("", call("audit", customer="ann")), "Audit: ann is in order."] * 4
        ),
        [audit],
        name="auditor",
        checkpointer="memory",
    )
    served = Served(plait_serve.app(agent, keys=[KEY]))
    yield served
    served.stop()


def test_a_streamed_main_run_shows_the_remote_run_below_the_task_call(
    make_agent: Any, auditor: Served
) -> None:
    main = make_agent(
        [ai("", task("t1", "Audit ann.")), "Ann is fine."] * 2,
        middleware=[SubAgentMiddleware(subagents=[remote(auditor.url, "auditor")])],
    )
    stream = main.stream("audit ann", thread_id="m", mode=["messages", "updates", "custom"])
    events = list(stream)
    below = [e for e in events if e.path == ("t1",)]
    assert {e.path for e in events} == {(), ("t1",)}
    text = [e.data.content for e in below if e.mode == "messages" and e.source == "model"]
    assert "".join(text) == "Audit: ann is in order."
    # the remote's tool call streams as its server sends it: named first, then the
    # arguments fragment by fragment, adding up to the call the remote's tool got
    called = [
        part
        for e in below
        if e.mode == "messages" and e.source == "model"
        for part in e.data.tool_call_chunks
    ]
    assert [part.name for part in called if part.name] == ["audit"]
    assert json.loads("".join(part.args for part in called)) == {"customer": "ann"}
    [tool_said] = [e.data for e in below if e.mode == "messages" and e.source == "audit"]
    assert (tool_said.type, tool_said.text) == ("tool", "ann is in order")
    assert [e.data for e in below if e.mode == "custom"] == [{"audited": "ann"}]
    updates = [e for e in below if e.mode == "updates"]
    assert [next(iter(e.data)) for e in updates][:2] == ["model", "tools"]
    assert updates[0].data["model"]["messages"][0].tool_calls[0].name == "audit"
    # the outcome is as an unstreamed run's: the remote's answer, then the main's
    assert stream.result is not None
    assert tool_answers(stream.result.messages)["t1"].text == "Audit: ann is in order."
    assert stream.result.text == "Ann is fine."

    async def scenario() -> list[plait.StreamEvent]:
        return [e async for e in main.astream("again", thread_id="m2", mode="messages")]

    again = [e for e in asyncio.run(scenario()) if e.path == ("t1",) and e.source == "model"]
    assert "".join(e.data.content for e in again) == "Audit: ann is in order."


def test_a_streamed_remote_interrupt_pauses_the_main_run_as_an_unstreamed_one(
    make_agent: Any, support: tuple[plait.Agent, Served]
) -> None:
    agent_s, served = support
    main = make_agent(
        [ai("", task("t1", "Refund order 1042, please.")), "The refund went through."],
        middleware=[SubAgentMiddleware(subagents=[remote(served.url, agent_s.name)])],
    )
    stream = main.stream("refund 1042", thread_id="m", mode="updates")
    events = list(stream)
    assert stream.result is not None
    [pending] = stream.result.interrupts
    assert pending.value["action_requests"][0]["name"] == "issue_refund"
    [relayed] = [e.data for e in events if e.path == ("t1",) and "__interrupt__" in e.data]
    assert relayed["__interrupt__"][0]["value"] == pending.value
    resumed = main.stream(APPROVE_COMMAND, thread_id="m", mode="messages")
    list(resumed)
    assert resumed.result is not None
    assert tool_answers(resumed.result.messages)["t1"].text.startswith(REFUND)
    assert resumed.result.text == "The refund went through."


@plait.tool
def transfer(amount: int) -> str:
    """Move money, asking twice.

    Args:
        amount: euros.
    """
    first = plait.interrupt(f"Move {amount} EUR?")
    second = plait.interrupt("Really?")
    return f"moved {amount} EUR ({first}, {second})"


def test_a_remote_pausing_twice_gets_each_answer_once(make_agent: Any) -> None:
    desk = plait.create_agent(
        plait.ScriptedChatModel(
            [ai("", call("transfer", amount=5)), lambda messages, tools: messages[-1].text]
        ),
        [transfer],
        name="desk",
        checkpointer="memory",
    )
    served = Served(plait_serve.app(desk, keys=[KEY]))
    try:
        main = make_agent(
            [ai("", task("t1", "Move 5 EUR.")), "Moved."],
            middleware=[SubAgentMiddleware(subagents=[remote(served.url, "desk")])],
        )
        first = main.invoke("move 5", thread_id="m")
        assert [i.value for i in first.interrupts] == ["Move 5 EUR?"]
        second = main.invoke(plait.Command(resume="yes"), thread_id="m")
        assert [i.value for i in second.interrupts] == ["Really?"]
        done = main.invoke(plait.Command(resume="sure"), thread_id="m")
        assert tool_answers(done.messages)["t1"].text == "moved 5 EUR (yes, sure)"
        [thread] = desk.list_threads()
        assert transcript(desk.get_state(thread)["messages"])[-2:] == [
            ("tool", "moved 5 EUR (yes, sure)"),
            ("ai", "moved 5 EUR (yes, sure)"),
        ]
    finally:
        served.stop()


def test_a_remote_run_that_fails_is_a_tool_error_and_a_failed_background_task(
    make_agent: Any,
) -> None:
    broken = plait.create_agent(
        plait.ScriptedChatModel([RuntimeError("overloaded")] * 4),
        name="broken",
        checkpointer="memory",
    )
    served = Served(plait_serve.app(broken, keys=[KEY]))
    try:
        middleware = SubAgentMiddleware(subagents=[remote(served.url, "broken")], background=True)
        main = make_agent(
            [ai("", task("t1", "hi"), start("s1", "hi")), "It failed."],
            middleware=[middleware],
        )
        result = main.invoke("go", thread_id="m")
        answer = tool_answers(result.messages)["t1"]
        assert answer.status == "error"
        assert answer.text.startswith(
            f"Error: remote sub-agent 'billing' failed: its run on the server at {served.url} "
            "failed ("
        )
        assert middleware.wait_for_tasks("m", timeout=20)
        [task_id] = result.state[BACKGROUND_KEY]
        main.model.responses += [ai("", call("check_task", "c1", task_id=task_id)), "ok"]  # type: ignore[attr-defined]
        checked = tool_answers(main.invoke("news?", thread_id="m").messages)["c1"].text
        assert checked.startswith(
            f"Task {task_id} (billing) failed. Result:\nits run on the server at {served.url} "
            "failed ("
        )
    finally:
        served.stop()


def test_a_wrong_key_an_unknown_assistant_and_a_dead_server_are_tool_errors(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    _, served = billing
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    specs = [
        remote(served.url, api_key_env="WRONG_KEY") | {"name": "wrong_key"},
        remote(served.url, "accounting") | {"name": "unknown"},
        remote(dead, timeout=5) | {"name": "dead"},
    ]
    calls = [call("task", s["name"], description="hi", subagent_type=s["name"]) for s in specs]
    main = make_agent(
        [ai("", *calls), "Billing is out of reach."],
        middleware=[SubAgentMiddleware(subagents=specs)],
    )
    result = main.invoke("ask", thread_id="m")
    answers = tool_answers(result.messages)
    assert all(answers[s["name"]].status == "error" for s in specs)
    wrong = answers["wrong_key"].text
    assert wrong.startswith(
        f"Error: remote sub-agent 'wrong_key' failed: the server at {served.url} (option "
        "'subagents[0].url') refused the request (HTTP 401"
    )
    assert "check the key in WRONG_KEY (option 'subagents[0].api_key_env')" in wrong
    assert "not-a-key" not in wrong
    unknown = answers["unknown"].text
    assert "answered 404" in unknown and "assistant 'accounting' not found" in unknown
    assert "check option 'subagents[1].assistant_id' ('accounting')" in unknown
    assert answers["dead"].text.startswith(
        f"Error: remote sub-agent 'dead' failed: the server at {dead} (option "
        "'subagents[2].url') could not be reached (ConnectError"
    )
    assert result.text == "Billing is out of reach."


def test_headers_reach_the_server_and_no_key_is_sent_unasked(
    make_agent: Any, billing: tuple[plait.Agent, Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, served = billing
    monkeypatch.setenv("LANGSMITH_API_KEY", KEY)  # the SDK's own lookup would send it
    by_header = remote(served.url, headers={"Authorization": f"Bearer {KEY}"})
    by_header.pop("api_key_env")
    keyless = remote(served.url) | {"name": "keyless"}
    keyless.pop("api_key_env")
    main = make_agent(
        [
            ai(
                "",
                task("t1", "hi"),
                call("task", "t2", description="hi", subagent_type="keyless"),
            ),
            "ok",
        ],
        middleware=[SubAgentMiddleware(subagents=[by_header, keyless])],
    )
    answers = tool_answers(main.invoke("ask", thread_id="m").messages)
    assert answers["t1"].text == "Billing answers: hi"
    assert answers["t2"].status == "error"
    assert "refused the request (HTTP 401" in answers["t2"].text
    assert "it needs an API key: set option 'subagents[1].api_key_env'" in answers["t2"].text


def test_a_remote_interrupt_without_a_main_thread_to_pause_is_a_tool_error(
    make_agent: Any, support: tuple[plait.Agent, Served]
) -> None:
    agent_s, served = support
    main = make_agent(
        [ai("", task("t1", "Refund order 1042, please.")), "No refund."],
        middleware=[SubAgentMiddleware(subagents=[remote(served.url, agent_s.name)])],
        checkpointer=None,
    )
    answer = tool_answers(main.invoke("refund 1042").messages)["t1"]
    assert answer.status == "error"
    assert answer.text.startswith(
        "Error: remote sub-agent 'billing' failed: it paused at an interrupt, which this run "
        "cannot wait for: invoke the main agent with a thread_id and a checkpointer."
    )


def test_a_key_unset_after_create_agent_is_a_tool_error(
    make_agent: Any, billing: tuple[plait.Agent, Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, served = billing
    main = make_agent(
        [ai("", task("t1", "hi")), "ok"],
        middleware=[SubAgentMiddleware(subagents=[remote(served.url)])],
    )
    monkeypatch.delenv("BILLING_KEY")
    answer = tool_answers(main.invoke("ask", thread_id="m").messages)["t1"]
    assert answer.status == "error"
    assert "the environment variable BILLING_KEY (option 'subagents[0].api_key_env') " in (
        answer.text
    )


# -- background tasks ------------------------------------------------------------------------


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def one_thread(agent: plait.Agent) -> str:
    """The remote agent's one thread, once its first run has saved it."""
    wait_for(lambda: len(remote_threads(agent)) == 1, "the remote thread")
    [thread] = remote_threads(agent)
    return thread


def test_a_background_task_is_a_remote_run_checked_updated_and_delivered(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    agent_b, served = billing
    middleware = SubAgentMiddleware(subagents=[remote(served.url)], background=True)
    main = make_agent([ai("", start("s1", "ledger: ann")), "Started."], middleware=[middleware])
    first = main.invoke("ledger of ann", thread_id="m")
    [task_id] = first.state[BACKGROUND_KEY]
    assert tool_answers(first.messages)["s1"].text.startswith(f"Started background task {task_id}")
    thread = one_thread(agent_b)
    wait_for(lambda: agent_b.get_state(thread)["messages"][-1].type == "ai", "the ledger call")

    main.model.responses += [  # type: ignore[attr-defined]
        ai(
            "",
            call("check_task", "c1", task_id=task_id),
            call("update_task", "u1", task_id=task_id, message="And what does Bob owe?"),
        ),
        "Still going.",
    ]
    running = main.invoke("done yet?", thread_id="m")
    answers = tool_answers(running.messages)
    assert answers["c1"].text == f"Task {task_id} (billing) is still running."
    assert answers["u1"].text == (
        f"Task {task_id} will read your instructions once its current work is done."
    )

    gate.set()
    assert middleware.wait_for_tasks("m", timeout=20)
    # the update was a second run on the same remote thread
    assert transcript(agent_b.get_state(thread)["messages"])[-2:] == [
        ("human", "And what does Bob owe?"),
        ("ai", "Billing answers: And what does Bob owe?"),
    ]
    assert remote_threads(agent_b) == [thread]
    main.model.responses += ["Billing says Bob's question is answered."]  # type: ignore[attr-defined]
    later = main.invoke("news?", thread_id="m")
    assert transcript(main.model.requests[-1].messages)[-1] == (  # type: ignore[attr-defined]
        "human",
        f"[Background task {task_id} (billing) completed]\nTask: ledger: ann\n"
        "Result:\nBilling answers: And what does Bob owe?",
    )
    assert later.state[BACKGROUND_KEY][task_id]["status"] == "completed"


def test_a_remote_background_task_streams_into_the_streamed_run_that_started_it(
    make_agent: Any,
) -> None:
    """While the starting run's stream is open the remote run streams into it below the
    start_task call, as a task call's does; its reported usage counts in that run."""
    spent = plait.Usage(input_tokens=70, output_tokens=30)
    audited = plait.create_agent(
        plait.ScriptedChatModel(
            [
                ai("", call("audit", customer="ann"), usage=spent),
                plait.AIMessage("Audit: ann is in order.", usage=spent),
            ]
        ),
        [audit],
        name="auditor",
        checkpointer="memory",
    )
    served = Served(plait_serve.app(audited, keys=[KEY]))
    middleware = SubAgentMiddleware(subagents=[remote(served.url, "auditor")], background=True)

    def wait(runtime: plait.ToolRuntime) -> str:
        """Wait for the background tasks."""
        assert middleware.wait_for_tasks(str(runtime.runtime.thread_id), timeout=20)
        return "all done"

    own = plait.Usage(input_tokens=100, output_tokens=10)
    try:
        main = make_agent(
            [
                ai("", start("s1", "Audit ann."), usage=own),
                ai("", call("wait", "w1"), usage=own),
                plait.AIMessage("Ann is fine.", usage=own),
            ],
            tools=[wait],
            middleware=[middleware],
        )
        stream = main.stream("audit ann", thread_id="m", mode=["messages", "custom"])
        below = [e for e in stream if e.path == ("s1",)]
        text = [e.data.content for e in below if e.mode == "messages" and e.source == "model"]
        assert "".join(text) == "Audit: ann is in order."
        [tool_said] = [e.data for e in below if e.mode == "messages" and e.source == "audit"]
        assert (tool_said.type, tool_said.text) == ("tool", "ann is in order")
        assert [e.data for e in below if e.mode == "custom"] == [{"audited": "ann"}]
        assert stream.result is not None and stream.result.text == "Ann is fine."
        assert stream.result.usage == own + own + own + spent + spent
    finally:
        served.stop()


def test_a_remote_background_task_outlives_the_stream_that_started_it(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    """Once the starting run's stream has ended, the remote run's events are dropped and
    the task goes on to its outcome."""
    _, served = billing
    middleware = SubAgentMiddleware(subagents=[remote(served.url)], background=True)
    main = make_agent([ai("", start("s1", "ledger: ann")), "Started."], middleware=[middleware])
    events = list(main.stream("ledger of ann", thread_id="m", mode="messages"))
    gate.set()  # the remote's answer comes once the stream has ended
    assert "Billing: ann owes 12 EUR." not in [getattr(e.data, "content", None) for e in events]
    assert middleware.wait_for_tasks("m", timeout=20)
    main.model.responses += ["Noted."]  # type: ignore[attr-defined]
    delivered = main.invoke("news?", thread_id="m").messages[-2]
    assert delivered.text.endswith("Result:\nBilling: ann owes 12 EUR.")


def test_update_task_of_a_finished_remote_task_runs_it_again_on_its_thread(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    agent_b, served = billing
    middleware = SubAgentMiddleware(subagents=[remote(served.url)], background=True)
    main = make_agent([ai("", start("s1", "Hello billing")), "Started."], middleware=[middleware])
    first = main.invoke("go", thread_id="m")
    [task_id] = first.state[BACKGROUND_KEY]
    assert middleware.wait_for_tasks("m", timeout=20)
    main.model.responses += [  # type: ignore[attr-defined]
        ai("", call("update_task", "u1", task_id=task_id, message="And Bob?")),
        "Asked again.",
    ]
    again = main.invoke("ask about Bob too", thread_id="m")
    assert tool_answers(again.messages)["u1"].text == (
        f"Task {task_id} runs again on its remote thread with your message."
    )
    assert middleware.wait_for_tasks("m", timeout=20)
    thread = one_thread(agent_b)
    assert transcript(agent_b.get_state(thread)["messages"]) == [
        ("human", "Hello billing"),
        ("ai", "Billing answers: Hello billing"),
        ("human", "And Bob?"),
        ("ai", "Billing answers: And Bob?"),
    ]
    main.model.responses += ["ok"]  # type: ignore[attr-defined]
    later = main.invoke("news?", thread_id="m")
    # The rerun's outcome lands before the main run's next model call: in the run that
    # asked for it if the remote answers before that run's second call, else in this one.
    lines = transcript(later.messages)
    delivered = (
        "human",
        f"[Background task {task_id} (billing) completed]\nTask: Hello billing\n"
        "Result:\nBilling answers: And Bob?",
    )
    assert lines.count(delivered) == 1
    assert lines.index(delivered) > lines.index(("human", "ask about Bob too"))


def test_cancel_task_cancels_the_remote_run_and_list_tasks_lists_it(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    agent_b, served = billing
    middleware = SubAgentMiddleware(subagents=[remote(served.url)], background=True)
    main = make_agent([ai("", start("s1", "ledger: ann")), "Started."], middleware=[middleware])
    first = main.invoke("ledger of ann", thread_id="m")
    [task_id] = first.state[BACKGROUND_KEY]
    thread = one_thread(agent_b)
    wait_for(lambda: agent_b.get_state(thread)["messages"][-1].type == "ai", "the ledger call")
    main.model.responses += [  # type: ignore[attr-defined]
        ai("", call("cancel_task", "x1", task_id=task_id)),
        ai("", call("list_tasks", "l1")),
        "Cancelled.",
    ]
    result = main.invoke("stop it", thread_id="m")
    answers = tool_answers(result.messages)
    assert answers["x1"].text == f"Cancelled task {task_id}."
    assert answers["l1"].text == f"- {task_id} (billing): cancelled: ledger: ann"

    import langgraph_sdk

    client = langgraph_sdk.get_sync_client(url=served.url, api_key=KEY)
    wait_for(lambda: client.runs.list(thread)[0]["status"] == "interrupted", "the remote cancel")
    gate.set()


def test_remote_tasks_of_a_process_that_ended_are_followed_on_their_server(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    agent_b, served = billing
    saver = MemoryCheckpointer()
    first = make_agent(
        [
            ai("", *(start(f"s{n}", f"ledger: {n}") for n in ("ann", "bob", "cid"))),
            "Started all three.",
        ],
        middleware=[SubAgentMiddleware(subagents=[remote(served.url)], background=True)],
        checkpointer=saver,
    )
    started = first.invoke("ledgers of ann, bob and cid", thread_id="m")
    ann, bob, cid = started.state[BACKGROUND_KEY]
    where = {task: started.state[BACKGROUND_KEY][task]["remote"] for task in (ann, bob, cid)}
    assert {w["url"] for w in where.values()} == {served.url}
    wait_for(lambda: len(agent_b.list_threads()) == 3, "the three remote threads")
    first.close()  # the process that started them ends; the remote runs go on

    # another process, the same thread: the tasks are followed on their server
    again = SubAgentMiddleware(subagents=[remote(served.url)], background=True)
    later = make_agent(
        [
            ai(
                "",
                call("check_task", "c1", task_id=ann),
                call("cancel_task", "x1", task_id=bob),
                call("update_task", "u1", task_id=cid, message="What about Dan?"),
            ),
            "Ann's still going, Bob's stopped, Cid has a follow-up.",
        ],
        middleware=[again],
        checkpointer=saver,
    )
    answers = tool_answers(later.invoke("how are they doing?", thread_id="m").messages)
    assert answers["c1"].text == f"Task {ann} (billing) is still running."
    assert answers["x1"].text == f"Cancelled task {bob}."
    assert answers["u1"].text == (
        f"Task {cid} will read your instructions once its current work is done."
    )
    import langgraph_sdk

    client = langgraph_sdk.get_sync_client(url=served.url, api_key=KEY)

    def status(task: str) -> str:
        return str(client.runs.list(where[task]["thread_id"])[0]["status"])

    wait_for(lambda: status(bob) == "interrupted", "bob's run cancelled")
    gate.set()
    wait_for(lambda: status(ann) == "success", "ann's run")
    assert again.wait_for_tasks("m", timeout=20)  # cid: its follow-up, sent by a watcher
    later.model.responses += [ai("", call("check_task", "c2", task_id=ann)), "Done."]  # type: ignore[attr-defined]
    done = later.invoke("and now?", thread_id="m")
    assert tool_answers(done.messages)["c2"].text == (
        f"Task {ann} (billing) completed. Result:\nBilling: ann owes 12 EUR."
    )
    assert (
        "human",
        f"[Background task {cid} (billing) completed]\nTask: ledger: cid\n"
        "Result:\nBilling answers: What about Dan?",
    ) in transcript(done.messages)
    statuses = {task: done.state[BACKGROUND_KEY][task]["status"] for task in (ann, bob, cid)}
    assert statuses == {ann: "completed", bob: "cancelled", cid: "completed"}


def test_an_interrupted_remote_task_is_answered_with_update_task(
    make_agent: Any, support: tuple[plait.Agent, Served]
) -> None:
    agent_s, served = support
    middleware = SubAgentMiddleware(subagents=[remote(served.url, agent_s.name)], background=True)
    main = make_agent(
        [ai("", start("s1", "Refund order 1042, please.")), "Started."], middleware=[middleware]
    )
    first = main.invoke("refund 1042", thread_id="m")
    [task_id] = first.state[BACKGROUND_KEY]
    assert middleware.wait_for_tasks("m", timeout=20)
    main.model.responses += [  # type: ignore[attr-defined]
        ai("", call("check_task", "c1", task_id=task_id)),
        ai("", call("update_task", "u1", task_id=task_id, message=APPROVE)),
        "Approved.",
    ]
    second = main.invoke("how is it going?", thread_id="m")
    answers = tool_answers(second.messages)
    checked = answers["c1"].text
    assert checked.startswith(
        f"Task {task_id} (billing) interrupted. Result:\nThe sub-agent paused at an "
        'interrupt and waits for an answer: {"action_requests": [{"name": "issue_refund", '
        '"args": {"order_id": "1042", "amount": 25.0}'
    )
    assert checked.endswith(
        "Answer it with update_task (your message is sent as the resume value, as JSON if it "
        "is JSON) or stop it with cancel_task."
    )
    assert answers["u1"].text == f"Task {task_id} goes on with your answer."
    assert middleware.wait_for_tasks("m", timeout=20)
    main.model.responses += [ai("", call("check_task", "c2", task_id=task_id)), "Done."]  # type: ignore[attr-defined]
    third = main.invoke("and now?", thread_id="m")
    assert tool_answers(third.messages)["c2"].text.startswith(
        f"Task {task_id} (billing) completed. Result:\n{REFUND}"
    )
    assert third.state[BACKGROUND_KEY][task_id]["status"] == "completed"


def test_start_task_on_a_server_refusing_the_key_is_a_tool_error(
    make_agent: Any, billing: tuple[plait.Agent, Served]
) -> None:
    agent_b, served = billing
    middleware = SubAgentMiddleware(
        subagents=[remote(served.url, api_key_env="WRONG_KEY")], background=True
    )
    main = make_agent([ai("", start("s1", "hi")), "Could not start."], middleware=[middleware])
    result = main.invoke("go", thread_id="m")
    answer = tool_answers(result.messages)["s1"]
    assert answer.status == "error"
    assert answer.text.startswith(
        "Error: remote sub-agent 'billing' was not started: the server at "
        f"{served.url} (option 'subagents[0].url') refused the request (HTTP 401"
    )
    assert result.state.get(BACKGROUND_KEY) in (None, {})
    assert remote_threads(agent_b) == []


# -- create_agent errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"url": "localhost:8000"},
            "plugin 'subagents': option 'subagents[0].url': expected an http(s) URL of an "
            "Agent Protocol server, such as 'http://127.0.0.1:8000', got 'localhost:8000'",
        ),
        (
            {"url": "ftp://example.com"},
            "option 'subagents[0].url': expected an http(s) URL",
        ),
        (
            {"assistant_id": None},
            "option 'subagents[0].assistant_id': expected a non-empty string, got None "
            "(sub-agent 'billing' is remote: name the assistant or graph to run)",
        ),
        (
            {"system_prompt": "Be billing."},
            "sub-agent 'billing' is remote: its server brings its own system_prompt",
        ),
        (
            {"api_key_env": "NO_SUCH_KEY_VAR"},
            "plugin 'subagents': option 'subagents[0].api_key_env': expected the name of a "
            "set environment variable holding the API key of http://127.0.0.1:9, got "
            "'NO_SUCH_KEY_VAR' (it is not set)",
        ),
        (
            {"api_key_env": "not a name"},
            "option 'subagents[0].api_key_env': expected the name of an environment "
            "variable holding the API key, got 'not a name'",
        ),
        (
            {"headers": {"X-Team": 7}},
            """option "subagents[0].headers['X-Team']": expected a string, got 7""",
        ),
        (
            {"timeout": 0},
            "option 'subagents[0].timeout': expected a number > 0, got 0",
        ),
        (
            {"url": None, "system_prompt": "p"},
            "option 'subagents[0].url': expected the URL of an Agent Protocol server, got "
            "None (sub-agent 'billing' gives assistant_id, api_key_env or headers, which only "
            "a remote sub-agent takes)",
        ),
    ],
)
def test_a_bad_remote_spec_fails_at_create_agent(
    make_agent: Any, spec: dict[str, Any], message: str
) -> None:
    options = {"subagents": [remote("http://127.0.0.1:9") | spec]}
    with pytest.raises(ConfigError) as raised:
        make_agent([], middleware=[("subagents", options)])
    assert message in str(raised.value)
