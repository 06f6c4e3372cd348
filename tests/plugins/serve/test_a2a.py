"""a2a-sdk's own client against a plait server: the agent card names the agent and its
tools as skills; ``message/stream`` and ``message/send`` run examples/support.toml, whose
refund pauses the task at ``input-required`` with the call under review; a follow-up
message on the same task carrying plait's decisions payload resumes it to ``completed``
— a decision the interrupt does not allow is refused and changes nothing; ``tasks/get``
and ``tasks/cancel``; another key's task is not found."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from google.protobuf import json_format, struct_pb2
from langgraph_sdk import get_sync_client
from serve_helpers import Served, parse_sse

import plait
from plait.testing import ai, call
from plait_serve import scoped_thread_id

KEY = "a2a-client-key-0123456789"
OTHER = "another-a2a-key-0123456789"
REFUND = "Refunded 25.00 EUR for order 1042."


def text(value: str, **fields: Any) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=f"m-{value[:8]}", parts=[Part(text=value)])
    return SendMessageRequest(message=message, **fields)


def decisions(task: Any, *decided: dict[str, Any]) -> SendMessageRequest:
    data = json_format.ParseDict({"decisions": list(decided)}, struct_pb2.Value())
    message = Message(
        role=Role.ROLE_USER,
        message_id="m-decision",
        task_id=task.id,
        context_id=task.context_id,
        parts=[Part(data=data)],
    )
    return SendMessageRequest(message=message)


async def responses(client: Any, request: SendMessageRequest) -> list[Any]:
    return [response async for response in client.send_message(request)]


def run(
    served: Served, body: Callable[[Any], Any], *, key: str = KEY, streaming: bool = True
) -> Any:
    async def main() -> Any:
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(headers=headers, timeout=20) as http:
            config = ClientConfig(httpx_client=http, streaming=streaming)
            client = await create_client(served.url, client_config=config)
            return await body(client)

    return asyncio.run(main())


def interrupt_data(status: Any) -> dict[str, Any]:
    (data,) = [p.data for p in status.message.parts if p.HasField("data")]
    return dict(json_format.MessageToDict(data))


def test_the_agent_card_names_the_agent_and_its_tools_as_skills(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[KEY])

    async def main() -> Any:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http:
            return await A2ACardResolver(http, served.url).get_agent_card()

    card = asyncio.run(main())
    assert card.name == support.name
    assert card.description.startswith("You are Acme's support agent.")
    assert [s.id for s in card.skills] == ["lookup_order", "issue_refund"]
    assert card.capabilities.streaming
    (interface,) = card.supported_interfaces
    assert interface.url == served.url + "/a2a" and interface.protocol_binding == "JSONRPC"
    assert "bearer" in card.security_schemes
    with served.client() as anonymous:
        assert anonymous.get("/.well-known/agent-card.json").status_code == 401


def test_a_streamed_task_pauses_for_input_and_a_decisions_message_completes_it(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[KEY])

    async def body(client: Any) -> Any:
        first = await responses(client, text("Refund order 1042, please."))
        task = first[0].task
        assert task.status.state == TaskState.TASK_STATE_WORKING
        calls = [
            json_format.MessageToDict(p.data)
            for r in first
            if r.HasField("status_update") and r.status_update.status.HasField("message")
            for p in r.status_update.status.message.parts
            if p.HasField("data")
        ]
        calls = [c for c in calls if c.get("type") == "tool_call"]
        assert [c["name"] for c in calls] == ["lookup_order", "issue_refund"]
        paused = first[-1].status_update
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        (pending,) = interrupt_data(paused.status)["interrupts"]
        assert pending["id"] == support.get_interrupts(task.context_id)[0].id
        (review,) = pending["tool_calls"]
        assert review["name"] == "issue_refund"
        assert review["allowed_decisions"] == ["approve", "edit", "reject"]
        assert review["id"] == calls[-1]["tool_call_id"]

        second = await responses(
            client, decisions(task, {"type": "approve", "tool_call_id": review["id"]})
        )
        artifacts = [r.artifact_update.artifact for r in second if r.HasField("artifact_update")]
        assert [a.parts[0].text for a in artifacts] == [REFUND]
        done = second[-1].status_update
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert done.task_id == task.id
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == TaskState.TASK_STATE_COMPLETED
        assert got.artifacts[0].parts[0].text == REFUND

    run(served, body)


def test_a_decision_the_interrupt_does_not_allow_is_refused_and_changes_nothing(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[KEY, OTHER])

    async def body(client: Any) -> Any:
        (response,) = await responses(client, text("Refund order 1042."))
        task = response.task
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        stored = scoped_thread_id(KEY, task.context_id)  # with two keys, each has its ids
        before = support.get_state(stored)
        assert len(support.get_interrupts(stored)) == 1
        for bad in ({"type": "maybe"}, {"type": "approve", "tool_call_id": "call_forged"}):
            with pytest.raises(Exception, match="decision 0") as raised:
                await responses(client, decisions(task, bad))
            assert "issue_refund" in str(raised.value)
        assert support.get_state(stored) == before
        assert len(support.get_interrupts(stored)) == 1
        (rejected,) = await responses(
            client, decisions(task, {"type": "reject", "message": "Not this order."})
        )
        assert rejected.task.status.state == TaskState.TASK_STATE_COMPLETED
        return task

    task = run(served, body, streaming=False)

    async def other(client: Any) -> Any:
        with pytest.raises(Exception, match="not found"):
            await client.get_task(GetTaskRequest(id=task.id))
        with pytest.raises(Exception, match="not found"):
            await responses(client, decisions(task, {"type": "approve"}))

    run(served, other, key=OTHER)


def test_tasks_cancel_cancels_a_running_task(serve: Callable[..., Served]) -> None:
    release = threading.Event()

    def slow() -> str:
        """Waits."""
        release.wait(10)
        return "late"

    agent = plait.create_agent(
        plait.ScriptedChatModel([ai("", call("slow")), ai("done")]),
        tools=[slow],
        checkpointer="memory",
        name="slowpoke",
    )
    served = serve(agent, keys=[KEY])

    async def body(client: Any) -> Any:
        request = text("go", configuration=SendMessageConfiguration(return_immediately=True))
        (response,) = await responses(client, request)
        task = response.task
        assert task.status.state == TaskState.TASK_STATE_WORKING
        cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        release.set()
        with pytest.raises(Exception, match="not running"):
            await client.cancel_task(CancelTaskRequest(id=task.id))

    run(served, body, streaming=False)


def test_tasks_cancel_abandons_a_task_waiting_for_input_and_the_context_goes_on(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[KEY])

    async def body(client: Any) -> Any:
        (response,) = await responses(client, text("Refund order 1042."))
        task = response.task
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        context = task.context_id
        cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == TaskState.TASK_STATE_CANCELED
        # the refund was not run: its call has an error result, nothing is paused
        assert support.get_interrupts(context) == []
        last = support.get_state(context)["messages"][-1]
        assert last.type == "tool" and last.name == "issue_refund" and last.status == "error"
        assert "its run was cancelled" in last.text
        with pytest.raises(Exception, match="not running"):
            await client.cancel_task(CancelTaskRequest(id=task.id))
        with pytest.raises(Exception, match="not waiting for input"):
            await responses(client, decisions(task, {"type": "approve"}))

        # a new task on the same context starts at once, on the consistent thread
        again = text("Where is order 9999?")
        again.message.context_id = context
        (response,) = await responses(client, again)
        assert response.task.context_id == context and response.task.id != task.id
        assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
        answer = response.task.artifacts[0].parts[0].text
        assert answer.startswith("Sorry, I could not find that order.")
        assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == (
            TaskState.TASK_STATE_CANCELED
        )
        return context

    context = run(served, body, streaming=False)
    assert not any("Refunded" in m.text for m in support.get_state(context)["messages"])


def test_a_canceled_input_required_task_is_its_own_run_cancelled_on_the_agent_protocol(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    """The paused run a canceled task ends reads, through langgraph-sdk, as that run
    cancelled — ``interrupted``, as LangGraph names a run cancelled — not as the paused
    run plus another run; the thread is idle, and a later task is one more run."""
    served = serve(support, keys=[KEY])

    async def body(client: Any) -> Any:
        (response,) = await responses(client, text("Refund order 1042."))
        task = response.task
        await client.cancel_task(CancelTaskRequest(id=task.id))
        return task

    task = run(served, body, streaming=False)
    context, run_id = task.id.rsplit("#", 1)
    lg = get_sync_client(url=served.url, api_key=KEY)
    (listed,) = lg.runs.list(context)
    assert listed["run_id"] == run_id and listed["status"] == "interrupted"
    assert lg.runs.get(context, run_id)["status"] == "interrupted"
    assert lg.threads.get(context)["status"] == "idle"
    replay = parse_sse(
        httpx.get(
            f"{served.url}/plait/threads/{context}/events",
            headers={"Authorization": f"Bearer {KEY}"},
        ).text
    )
    started = [e["run_id"] for _, e in replay if e["type"] == "run_started"]
    ended = [(e["run_id"], e["status"]) for _, e in replay if e["type"] == "run_finished"]
    assert set(started) == {run_id}
    assert ended == [(run_id, "interrupted"), (run_id, "cancelled")]

    async def again(client: Any) -> Any:
        ask = text("Where is order 9999?")
        ask.message.context_id = context
        (response,) = await responses(client, ask)
        return response.task

    later = run(served, again, streaming=False)
    runs = lg.runs.list(context)
    assert [(r["run_id"], r["status"]) for r in runs] == [
        (later.id.rsplit("#", 1)[1], "success"),
        (run_id, "interrupted"),
    ]


def test_message_send_on_a_database_log_answers_with_the_tasks_real_state(
    serve: Callable[..., Served], tmp_path: Any
) -> None:
    """With SQLite the run log is written in batches behind the run: a blocking
    ``message/send`` still answers ``completed`` with the answer, and one that returns
    at once answers the task ``working`` (not "not found")."""
    agent = plait.create_agent(
        plait.ScriptedChatModel([lambda messages, tools: ai(f"Hi, {messages[-1].text}.")] * 20),
        checkpointer=f"sqlite:///{tmp_path / 'a2a.db'}",
        name="greeter",
    )
    served = serve(agent, keys=[KEY])

    async def body(client: Any) -> Any:
        for n in range(5):
            (response,) = await responses(client, text(f"guest {n}"))
            assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
            assert response.task.artifacts[0].parts[0].text == f"Hi, guest {n}."
        quick = SendMessageConfiguration(return_immediately=True)
        for n in range(5):
            (response,) = await responses(client, text(f"later {n}", configuration=quick))
            assert response.task.status.state in (
                TaskState.TASK_STATE_WORKING,
                TaskState.TASK_STATE_COMPLETED,
            )

    run(served, body, streaming=False)


def test_malformed_json_rpc_calls_get_one_clear_error_each_and_change_nothing(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[KEY, OTHER], max_body=20_000)
    mine = {"Authorization": f"Bearer {KEY}"}
    theirs = {"Authorization": f"Bearer {OTHER}"}

    def rpc(http: httpx.Client, method: str, params: Any, headers: dict[str, str]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return http.post("/a2a", json=body, headers=headers)

    def user(text: str, **extra: Any) -> dict[str, Any]:
        message = {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": text}]}
        return {"message": {**message, **extra}}

    with httpx.Client(base_url=served.url, timeout=20) as http:
        paused = rpc(http, "message/send", user("Refund order 1042."), mine).json()["result"]
        assert paused["status"]["state"] == "input-required"
        task, context = paused["id"], paused["contextId"]
        stored = scoped_thread_id(KEY, context)
        before = support.get_state(stored)
        forged = {
            "kind": "data",
            "data": {"decisions": [{"type": "approve", "approved": True}] * 2},
        }
        calls: list[tuple[str, Any, dict[str, str], int, str]] = [
            ("message/send", {}, mine, -32602, "params.message"),
            ("message/send", {"message": {"role": "user"}}, mine, -32602, "params.message"),
            ("message/send", user(""), mine, -32602, "text part"),
            ("message/send", user("Hi", contextId=context), mine, -32602, "paused"),
            ("message/send", user("ok", taskId=task), theirs, -32001, "not found"),
            ("message/send", user("ok", taskId="no-such-task"), mine, -32001, "not found"),
            (
                "message/send",
                {"message": {"role": "user", "messageId": "m", "taskId": task, "parts": [forged]}},
                mine,
                -32602,
                "expected 1 decision",
            ),
            ("tasks/get", {"id": task}, theirs, -32001, "not found"),
            ("tasks/get", {"id": f"{context}#nope"}, mine, -32001, "not found"),
            ("tasks/get", {}, mine, -32602, "params.id"),
            ("tasks/cancel", {"id": task}, theirs, -32001, "not found"),
            ("tasks/resubscribe", {"id": task}, mine, -32601, "not served"),
        ]
        for method, params, headers, code, text in calls:
            response = rpc(http, method, params, headers)
            assert response.status_code == 200
            error = response.json()["error"]
            assert error["code"] == code and text in error["message"], (method, params, error)
            assert "key-" not in error["message"]  # ids as the client names them
        not_rpc = http.post("/a2a", json={"method": "tasks/get"}, headers=mine).json()
        assert not_rpc["error"]["code"] == -32600
        assert http.post("/a2a", content=b"{", headers=mine).status_code == 400
        assert http.post("/a2a", json={}, headers={}).status_code == 401
        assert support.get_state(stored) == before
        assert len(support.get_interrupts(stored)) == 1
        got = rpc(http, "tasks/get", {"id": task}, mine).json()["result"]
        assert got["status"]["state"] == "input-required"


def test_a_context_id_past_the_id_bound_is_refused_before_any_run(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    """Ids are at most 256 characters on every protocol: A2A's ``contextId`` too — one
    clear error, and no thread made for it."""
    served = serve(support, keys=[KEY])
    long = "c" * 300
    message = {
        "role": "user",
        "messageId": "m-long",
        "contextId": long,
        "parts": [{"kind": "text", "text": "Where is order 2077?"}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    with served.client(KEY) as http:
        error = http.post("/a2a", json=body).json()["error"]
    assert error == {
        "code": -32602,
        "message": "contextId: expected a non-empty string of at most 256 characters, "
        "got 'a string of 300 characters'",
    }
    assert long not in support.list_threads()


def test_a_message_id_past_the_id_bound_is_refused_before_any_run(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    """A2A's ``messageId`` becomes the stored user message's id: past the 256-character
    bound of every id it is a JSON-RPC invalid params error naming the bound, on a new
    task and on a follow-up alike, and nothing runs."""
    served = serve(support, keys=[KEY])
    long = "m" * 300

    async def body(client: Any) -> Any:
        ask = Message(role=Role.ROLE_USER, message_id=long, parts=[Part(text="Where is 2077?")])
        with pytest.raises(Exception, match="at most 256 characters") as refused:
            await responses(client, SendMessageRequest(message=ask))
        return refused.value

    refused = run(served, body, streaming=False)
    assert "messageId" in str(refused)
    assert support.list_threads() == []

    def rpc(http: httpx.Client, message: dict[str, Any]) -> Any:
        request = {"jsonrpc": "2.0", "id": 7, "method": "message/send"}
        return http.post("/a2a", json={**request, "params": {"message": message}}).json()

    with served.client(KEY) as http:
        ask = {"role": "user", "messageId": "1", "parts": [{"kind": "text", "text": "Refund 1042"}]}
        paused = rpc(http, ask)["result"]
        assert paused["status"]["state"] == "input-required"
        before = support.get_state(paused["contextId"])
        for message in (
            {"role": "user", "messageId": long, "parts": [{"kind": "text", "text": "Hi"}]},
            {
                "role": "user",
                "messageId": long,
                "taskId": paused["id"],
                "parts": [{"kind": "data", "data": {"decisions": [{"type": "approve"}]}}],
            },
        ):
            assert rpc(http, message) == {
                "jsonrpc": "2.0",
                "id": 7,
                "error": {
                    "code": -32602,
                    "message": "messageId: expected a non-empty string of at most 256 "
                    "characters, got 'a string of 300 characters'",
                },
            }
        assert support.get_state(paused["contextId"]) == before
        assert len(support.list_threads()) == 1
