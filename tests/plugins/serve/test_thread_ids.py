"""Each key has its own thread ids: on a server with several keys, the thread a key names
``x`` is another thread than another key's ``x``, on every protocol (the Agent
Protocol through langgraph-sdk, AG-UI, the OpenAI-compatible API through openai, A2A
through a2a-sdk, plait's own routes). A key is answered about another key's id exactly
as about an id nobody used — it can make its own thread there, and never reads, lists,
runs on or deletes the other's — and every answer names the thread by the id its
client gave. A server with one key or none stores the ids as they are, and a server
given a second key still finds the threads made before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError
from serve_helpers import Served, parse_sse, post_sse, run_input

import plait
from plait.testing import ai, call
from plait_serve import scoped_thread_id

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef"


def echo_agent(**options: Any) -> plait.Agent:
    """Answers ``<key's word>: <what it was asked first on the thread>``."""

    def brain(messages: list[Any], tools: Any) -> plait.AIMessage:
        humans = [m.text for m in messages if m.type == "human"]
        return ai(f"first: {humans[0]}; now: {humans[-1]}")

    return plait.create_agent(
        plait.ScriptedChatModel([brain] * 100), checkpointer="memory", name="echo", **options
    )


def test_two_keys_make_and_keep_their_own_thread_under_one_id_with_langgraph_sdk(
    serve: Callable[..., Served],
) -> None:
    agent = echo_agent()
    served = serve(agent, keys=[ALICE, BOB])
    alice = get_sync_client(url=served.url, api_key=ALICE)
    bob = get_sync_client(url=served.url, api_key=BOB)
    made = alice.threads.create(thread_id="shared", metadata={"owner": "alice"})
    assert made["thread_id"] == "shared"
    alice.runs.wait("shared", "echo", input={"messages": [("user", "Alice's question")]})
    # Bob is told nothing about Alice's "shared": reading it is a 404 like any unused id.
    with pytest.raises(NotFoundError, match="thread 'shared' not found"):
        bob.threads.get("shared")
    with pytest.raises(NotFoundError, match="thread 'shared' not found"):
        bob.threads.get_state("shared")
    # ... and making it is not a 409: it is a thread of his own.
    theirs = bob.threads.create(thread_id="shared", metadata={"owner": "bob"})
    assert theirs["thread_id"] == "shared" and theirs["metadata"] == {"owner": "bob"}
    with pytest.raises(ConflictError, match="thread 'shared' already exists"):
        bob.threads.create(thread_id="shared")  # his own id, taken by himself
    bob.runs.wait("shared", "echo", input={"messages": [("user", "Bob's question")]})
    answer = alice.runs.wait("shared", "echo", input={"messages": [("user", "Again")]})
    assert answer["messages"][-1]["content"] == "first: Alice's question; now: Again"  # type: ignore[index, call-overload]
    # Each key reads its own thread under the id, every answer naming it "shared".
    state = bob.threads.get_state("shared")
    assert [m["content"] for m in state["values"]["messages"]] == [  # type: ignore[index, call-overload]
        "Bob's question",
        "first: Bob's question; now: Bob's question",
    ]
    assert state["checkpoint"]["thread_id"] == "shared"
    assert bob.threads.get("shared")["metadata"] == {"owner": "bob"}
    history = bob.threads.get_history("shared")
    assert history and {h["checkpoint"]["thread_id"] for h in history} == {"shared"}
    (run,) = bob.runs.list("shared")
    assert run["thread_id"] == "shared" and bob.runs.get("shared", run["run_id"]) == run
    assert len(alice.runs.list("shared")) == 2
    parts = list(
        bob.runs.stream(
            "shared", "echo", input={"messages": ["Once more"]}, stream_mode="messages-tuple"
        )
    )
    metas = [p.data[1] for p in parts if p.event == "messages"]
    assert metas and {m["thread_id"] for m in metas} == {"shared"}
    assert [t["thread_id"] for t in bob.threads.search()] == ["shared"]
    assert [t["metadata"] for t in alice.threads.search(ids=["shared"])] == [{"owner": "alice"}]
    # Deleting his own leaves hers as it was.
    bob.threads.delete("shared")
    with pytest.raises(NotFoundError, match="thread 'shared' not found"):
        bob.threads.get("shared")
    assert len(alice.threads.get_state("shared")["values"]["messages"]) == 4  # type: ignore[call-overload]
    assert agent.list_threads() == [scoped_thread_id(ALICE, "shared")]


def test_every_protocol_gives_each_key_its_own_thread_under_one_id(
    serve: Callable[..., Served],
) -> None:
    agent = echo_agent()
    served = serve(agent, keys=[ALICE, BOB])
    with served.client(ALICE) as alice, served.client(BOB) as bob:
        # AG-UI: the same threadId (and runId) runs on two threads, each named "t".
        for http, who in ((alice, "Alice"), (bob, "Bob")):
            events = post_sse(http, "/ag-ui", run_input("t", "r1", f"{who} on AG-UI"))
            assert events[0][1]["threadId"] == "t" and events[-1][1]["threadId"] == "t"
            assert events[-1][1]["result"] == f"first: {who} on AG-UI; now: {who} on AG-UI"
        # plait's routes: each key follows and forks its own "t".
        log = bob.get("/plait/threads/t/events").text
        assert [e["text"] for _, e in parse_sse(log) if e["type"] == "run_finished"] == [
            "first: Bob on AG-UI; now: Bob on AG-UI"
        ]
        forked = bob.post("/plait/threads/t/fork", json={"checkpoint_id": 1, "thread_id": "f"})
        assert forked.json() == {"thread_id": "f", "forked_from": "t", "checkpoint_id": "1"}
        # ...and Alice may fork onto "f" too: Bob's "f" is not hers.
        mine = alice.post("/plait/threads/t/fork", json={"checkpoint_id": 1, "thread_id": "f"})
        assert mine.status_code == 200, mine.text
        assert bob.post("/plait/threads/t/cancel").json()["error"]["message"] == (
            "thread 't' has no run going on to cancel"
        )
        reconnect = alice.get("/ag-ui/threads/t/stream?since=0").text
        assert {e["threadId"] for _, e in parse_sse(reconnect) if "threadId" in e} == {"t"}

    # The OpenAI-compatible API: X-Plait-Thread "t" continues each key's own thread.
    for key, who in ((ALICE, "Alice"), (BOB, "Bob")):
        api = openai.OpenAI(base_url=served.url + "/v1", api_key=key, max_retries=0)
        raw = api.chat.completions.with_raw_response.create(
            model="echo",
            messages=[{"role": "user", "content": f"{who} on OpenAI"}],
            extra_headers={"X-Plait-Thread": "t"},
        )
        assert raw.headers["X-Plait-Thread"] == "t"
        completion = raw.parse()
        assert completion.choices[0].message.content == (
            f"first: {who} on AG-UI; now: {who} on OpenAI"
        )
        assert completion.model_extra is not None
        assert completion.model_extra["plait"]["thread_id"] == "t"
        first = api.responses.create(
            model="echo", input="Responses", extra_headers={"X-Plait-Thread": "t"}
        )
        follow = api.responses.create(model="echo", input="Follow", previous_response_id=first.id)
        assert follow.output_text == f"first: {who} on AG-UI; now: Follow"
        assert follow.model_extra is not None and follow.model_extra["plait"]["thread_id"] == "t"

    # A2A: contextId "t" is each key's own context; a task id names it as given.
    async def a2a_task(key: str, who: str) -> Any:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
            config = ClientConfig(httpx_client=http, streaming=False)
            client = await create_client(served.url, client_config=config)
            ask = Message(
                role=Role.ROLE_USER, message_id=f"m-{who}", context_id="t", parts=[Part(text=who)]
            )
            (response,) = [r async for r in client.send_message(SendMessageRequest(message=ask))]
            return response.task

    alices = asyncio.run(a2a_task(ALICE, "Alice"))
    bobs = asyncio.run(a2a_task(BOB, "Bob"))
    for task, who in ((alices, "Alice"), (bobs, "Bob")):
        assert task.context_id == "t" and task.id.startswith("t#")
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == f"first: {who} on AG-UI; now: {who}"

    async def get_task(key: str, task_id: str) -> Any:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
            config = ClientConfig(httpx_client=http, streaming=False)
            client = await create_client(served.url, client_config=config)
            return await client.get_task(GetTaskRequest(id=task_id))

    assert asyncio.run(get_task(BOB, bobs.id)).context_id == "t"
    with pytest.raises(Exception, match="not found"):
        asyncio.run(get_task(ALICE, bobs.id))  # Alice's "t" holds no such task
    stored = {scoped_thread_id(key, name) for key in (ALICE, BOB) for name in ("t", "f")}
    assert set(agent.list_threads()) == stored


def test_one_key_or_none_keeps_ids_as_they_are_and_a_second_key_finds_them(
    serve: Callable[..., Served],
) -> None:
    """Threads made while a server had one key (or none) keep their ids in storage; given
    a second key, the first key still finds, runs on and lists them, and the second
    key's thread of the same id is its own."""
    agent = echo_agent()
    with serve(agent).client() as local:
        post_sse(local, "/ag-ui", run_input("keyless", "r1", "Nobody's question"))
    one = serve(agent, keys=[ALICE])
    with one.client(ALICE) as alice:
        post_sse(alice, "/ag-ui", run_input("old", "r1", "Alice's old question"))
    assert agent.list_threads() == ["keyless", "old"]

    two = serve(agent, keys=[ALICE, BOB])
    lg_alice = get_sync_client(url=two.url, api_key=ALICE)
    lg_bob = get_sync_client(url=two.url, api_key=BOB)
    assert [t["thread_id"] for t in lg_alice.threads.search()] == ["old"]
    with two.client(ALICE) as alice, two.client(BOB) as bob:
        again = post_sse(alice, "/ag-ui", run_input("old", "r2", "Alice again"))
        assert again[-1][1]["result"] == "first: Alice's old question; now: Alice again"
        assert bob.get("/threads/old").status_code == 404
        mine = post_sse(bob, "/ag-ui", run_input("old", "r1", "Bob's question"))
        assert mine[-1][1]["result"] == "first: Bob's question; now: Bob's question"
        assert alice.get("/threads/keyless").status_code == 404  # made without keys
    assert [t["thread_id"] for t in lg_bob.threads.search()] == ["old"]
    assert sorted(agent.list_threads()) == sorted(["keyless", "old", scoped_thread_id(BOB, "old")])
    assert len(agent.get_state("old")["messages"]) == 4
    # Back to one key: the threads it made under two keys are still its own.
    back = serve(agent, keys=[BOB])
    with back.client(BOB) as bob:
        state = bob.get("/threads/old/state").json()
        assert state["values"]["messages"][0]["content"] == "Bob's question"
        assert state["checkpoint"]["thread_id"] == "old"


def test_a_tool_call_in_a_thread_of_another_key_is_not_reachable_by_its_id(
    serve: Callable[..., Served],
) -> None:
    """A paused thread of Alice's cannot be resumed or cancelled by Bob naming its id:
    his "paused" is a thread he never made."""

    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    model = plait.ScriptedChatModel([ai("", call("refund", order="7")), "done"])
    agent = plait.create_agent(
        model,
        tools=[refund],
        checkpointer="memory",
        middleware=[("human_in_the_loop", {"interrupt_on": {"refund": True}})],
    )
    served = serve(agent, keys=[ALICE, BOB])
    alice = get_sync_client(url=served.url, api_key=ALICE)
    bob = get_sync_client(url=served.url, api_key=BOB)
    alice.threads.create(thread_id="paused")
    paused = alice.runs.wait("paused", agent.name, input={"messages": ["refund 7"]})
    assert paused["__interrupt__"]  # type: ignore[call-overload]
    resume = {"resume": {"decisions": [{"type": "approve"}]}}
    with pytest.raises(NotFoundError, match="thread 'paused' not found"):
        bob.runs.create("paused", agent.name, command=resume)
    with httpx.Client(base_url=served.url, headers={"X-Api-Key": BOB}) as http:
        refused = http.post(
            "/threads/paused/runs/wait",
            json={"command": resume, "if_not_exists": "create"},
        )
    assert refused.status_code == 409
    assert refused.json()["error"]["message"] == (
        "thread 'paused' has no pending interrupt to resume"
    )
    stored = scoped_thread_id(ALICE, "paused")
    assert len(agent.get_interrupts(stored)) == 1
    assert model.calls == 1


def test_a_run_error_naming_the_stored_thread_reads_with_the_clients_id_everywhere(
    serve: Callable[..., Served],
) -> None:
    """A run's error text written by the kernel names the thread by its stored id (here
    a busy-thread error: the model's own code runs the thread again while the run holds
    it). Every text a client reads names it as the client did: the streamed run log,
    AG-UI's RUN_ERROR (live and replayed), the Agent Protocol's stream and wait, the
    OpenAI-compatible error and A2A's failed task status."""
    holder: list[plait.Agent] = []

    def brain(messages: list[Any], tools: Any) -> plait.AIMessage:
        stored = scoped_thread_id(ALICE, "t")
        holder[0].invoke("again", thread_id=stored)  # refused: the run holds the thread
        return ai("never")

    agent = plait.create_agent(
        plait.ScriptedChatModel([brain] * 20), checkpointer="memory", name="busy"
    )
    holder.append(agent)
    served = serve(agent, keys=[ALICE, BOB])
    said = "thread 't' is being run by another call"
    with served.client(ALICE) as alice:
        events = post_sse(alice, "/ag-ui", run_input("t", "r1", "hello"))
        (error,) = [e for _, e in events if e["type"] == "RUN_ERROR"]
        assert error["message"] == said
        replay = parse_sse(alice.get("/ag-ui/threads/t/stream?since=0").text)
        assert [e["message"] for _, e in replay if e["type"] == "RUN_ERROR"] == [said]
        log = parse_sse(alice.get("/plait/threads/t/events").text)
        assert [e["message"] for _, e in log if e["type"] == "run_error"] == [said]
        assert "key-" not in alice.get("/plait/threads/t/events").text
    lg = get_sync_client(url=served.url, api_key=ALICE)
    with pytest.raises(Exception, match=f"^ThreadBusyError: {said}$"):
        lg.runs.wait("t", "busy", input={"messages": ["again"]})
    parts = list(lg.runs.stream("t", "busy", input={"messages": ["more"]}))
    assert [p.data["message"] for p in parts if p.event == "error"] == [said]
    api = openai.OpenAI(base_url=served.url + "/v1", api_key=ALICE, max_retries=0)
    with pytest.raises(openai.InternalServerError, match=said):
        api.chat.completions.create(
            model="busy",
            messages=[{"role": "user", "content": "once more"}],
            extra_headers={"X-Plait-Thread": "t"},
        )

    async def a2a_task(streaming: bool) -> Any:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}) as http:
            config = ClientConfig(httpx_client=http, streaming=streaming)
            client = await create_client(served.url, client_config=config)
            ask = Message(
                role=Role.ROLE_USER,
                message_id=f"m-{streaming}",
                context_id="t",
                parts=[Part(text="a2a")],
            )
            responses = [r async for r in client.send_message(SendMessageRequest(message=ask))]
            last = responses[-1]
            status = last.task.status if last.HasField("task") else last.status_update.status
            task_id = last.task.id if last.HasField("task") else last.status_update.task_id
            return status, (await client.get_task(GetTaskRequest(id=task_id))).status

    for streaming in (False, True):
        status, got = asyncio.run(a2a_task(streaming))
        assert status.state == got.state == TaskState.TASK_STATE_FAILED
        assert status.message.parts[0].text == got.message.parts[0].text == said
