"""With several keys, a thread's stored id (``plait_serve.scoped_thread_id``) never
reaches a client, however it got into the thread: a tool result, a state key or a paused
call's arguments that hold it read with the client's id everywhere the thread's state
leaves the server — the Agent Protocol's state, history, thread, search, wait, join and
``values`` / ``updates`` streams (langgraph-sdk), the OpenAI-compatible answer and its
pending interrupts (openai), A2A's task and its input-required interrupt (a2a-sdk) —
and no answer to one key holds the other key's ids. One key or none: ids as stored."""

from __future__ import annotations

import asyncio
import json
import operator
from collections.abc import Callable
from typing import Annotated, Any

import httpx
import openai
from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from google.protobuf import json_format, struct_pb2
from langgraph_sdk import get_sync_client
from serve_helpers import Served

import plait
from plait.testing import ai, call
from plait_serve import scoped_thread_id

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef"
APPROVE = {"decisions": [{"type": "approve"}]}


class Seen(plait.AgentState):
    seen: Annotated[list[str], operator.add]


@plait.before_model
def note_thread(state: Any, runtime: plait.Runtime) -> dict[str, Any]:
    """Writes the (stored) thread id into the state, before each model call."""
    return {"seen": [f"on {runtime.thread_id}"]}


def where(runtime: plait.ToolRuntime) -> str:
    """Which thread this is."""
    return f"thread {runtime.runtime.thread_id}"


def remember(note: str) -> str:
    """Remember a note (reviewed first)."""
    return f"remembered {note}"


def brain(messages: list[Any], tools: Any) -> plait.AIMessage:
    """Asks ``where``, has ``remember`` keep its answer (paused for review), then says it."""
    last = messages[-1]
    if last.type != "tool":
        return ai("", call("where"))
    if last.name == "where":
        return ai(f"I am on {last.text}", call("remember", note=last.text))
    return ai(f"Done: {last.text}")


def agent() -> plait.Agent:
    return plait.create_agent(
        plait.ScriptedChatModel([brain] * 200),
        tools=[where, remember],
        middleware=[note_thread, ("human_in_the_loop", {"interrupt_on": {"remember": True}})],
        state_schema=Seen,
        checkpointer="memory",
        name="where",
    )


def leaks(value: Any, *others: str) -> list[str]:
    """What in ``value`` (as JSON) is a stored id: a key's scope, or another's ids."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return [bad for bad in ("key-", *others) if bad in text]


def test_the_agent_protocol_shows_a_thread_stored_id_as_its_clients_everywhere(
    serve: Callable[..., Served],
) -> None:
    served = serve(agent(), keys=[ALICE, BOB])
    bob_ids = [scoped_thread_id(BOB, "t"), scoped_thread_id(BOB, "")]
    for key in (BOB, ALICE):  # Bob's thread "t" exists too while Alice reads hers
        lg = get_sync_client(url=served.url, api_key=key)
        lg.threads.create(thread_id="t")
        paused = lg.runs.wait("t", "where", input={"messages": ["where am I?"]})
        [interrupt] = paused["__interrupt__"]  # type: ignore[call-overload]
        [request] = interrupt["value"]["action_requests"]
        assert request["args"] == {"note": "thread t"}
        assert paused["seen"] == ["on t", "on t"]  # type: ignore[call-overload]
    lg = get_sync_client(url=served.url, api_key=ALICE)
    read: list[Any] = [paused]
    read.append(lg.threads.get_state("t"))
    assert read[-1]["values"]["__interrupt__"] == [interrupt]
    assert read[-1]["tasks"][0]["interrupts"] == [interrupt]
    assert [m["content"] for m in read[-1]["values"]["messages"] if m["type"] == "tool"] == [
        "thread t"
    ]
    read.append(lg.threads.get("t"))
    assert read[-1]["values"]["seen"] == ["on t", "on t"]
    assert read[-1]["interrupts"] == {"tools": [interrupt]}
    parts = list(
        lg.runs.stream(
            "t",
            "where",
            command={"resume": APPROVE},
            stream_mode=["values", "updates", "messages-tuple"],
        )
    )
    read.extend(part.data for part in parts)
    values = [p.data for p in parts if p.event == "values"]
    assert values[-1]["messages"][-1]["content"] == "Done: remembered thread t"
    assert values[-1]["seen"] == ["on t", "on t", "on t"]
    history = lg.threads.get_history("t", limit=50)
    read.append(history)
    assert {h["values"]["seen"][0] for h in history if h["values"].get("seen")} == {"on t"}
    told = [h for h in history if any(m["type"] == "tool" for m in h["values"]["messages"])]
    step = told[-1]["checkpoint"]["checkpoint_id"]  # the step that saved where's answer
    read.append(lg.threads.get_state("t", checkpoint_id=step))
    assert read[-1]["values"]["messages"][-1]["content"] == "thread t"
    read.append(lg.threads.search(ids=["t"]))
    run_id = lg.runs.list("t")[0]["run_id"]
    read.append(lg.runs.join("t", run_id))
    read.append(lg.threads.update_state("t", {"seen": ["by hand"]}))
    # A stateless run's thread ("stateless-…", scoped) reads as its client's too.
    read.append(lg.runs.wait(None, "where", input={"messages": ["where?"]}))
    note = read[-1]["__interrupt__"][0]["value"]["action_requests"][0]["args"]["note"]
    assert note.startswith("thread stateless-")
    assert all(not leaks(value, *bob_ids) for value in read), [leaks(v) for v in read]
    # The state itself holds the stored ids: they were named back, not lost.
    stored = served.app.state.server.agent.get_state(scoped_thread_id(ALICE, "t"))
    assert stored["seen"][0] == f"on {scoped_thread_id(ALICE, 't')}"


def test_openai_and_a2a_show_a_stored_thread_id_as_their_clients(
    serve: Callable[..., Served],
) -> None:
    served = serve(agent(), keys=[ALICE, BOB])
    bob_ids = [scoped_thread_id(BOB, "o"), scoped_thread_id(BOB, "a")]
    with httpx.Client(base_url=served.url, headers={"X-Api-Key": BOB}) as http:
        for thread in ("o", "a"):  # Bob's own "o" and "a", paused
            http.post("/threads", json={"thread_id": thread})
            http.post(f"/threads/{thread}/runs/wait", json={"input": {"messages": ["where?"]}})
    api = openai.OpenAI(base_url=served.url + "/v1", api_key=ALICE, max_retries=0)
    header = {"X-Plait-Thread": "o"}
    paused = api.chat.completions.create(
        model="where", messages=[{"role": "user", "content": "where?"}], extra_headers=header
    )
    assert paused.model_extra is not None
    [pending] = paused.model_extra["plait"]["interrupts"]
    assert pending["tool_calls"][0]["args"] == {"note": "thread o"}
    assert "I am on thread o" in (paused.choices[0].message.content or "")
    done = api.chat.completions.create(
        model="where",
        messages=[{"role": "user", "content": "go on"}],
        extra_headers=header,
        extra_body={"resume": APPROVE},
    )
    assert done.choices[0].message.content == "Done: remembered thread o"
    streamed = "".join(
        chunk.model_dump_json()
        for chunk in api.chat.completions.create(
            model="where",
            messages=[{"role": "user", "content": "again"}],
            extra_headers={"X-Plait-Thread": "o2"},
            stream=True,
        )
    )
    assert "thread o2" in streamed
    answer = api.responses.create(model="where", input="where?")
    assert answer.model_extra is not None
    assert answer.model_extra["plait"]["interrupts"][0]["tool_calls"][0]["args"]["note"] == (
        f"thread {answer.model_extra['plait']['thread_id']}"
    )
    for value in (paused.model_dump(), done.model_dump(), streamed, answer.model_dump()):
        assert not leaks(value, *bob_ids), value

    async def a2a_task() -> list[Any]:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}) as http:
            client = await create_client(served.url, client_config=ClientConfig(httpx_client=http))
            ask = Message(
                role=Role.ROLE_USER, message_id="m1", context_id="a", parts=[Part(text="?")]
            )
            got = [r async for r in client.send_message(SendMessageRequest(message=ask))]
            paused = got[-1].status_update
            assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            data = json_format.ParseDict(APPROVE, struct_pb2.Value())
            answer = Message(
                role=Role.ROLE_USER,
                message_id="m2",
                task_id=paused.task_id,
                context_id="a",
                parts=[Part(data=data)],
            )
            got += [r async for r in client.send_message(SendMessageRequest(message=answer))]
            got.append(await client.get_task(GetTaskRequest(id=paused.task_id)))
            return [json_format.MessageToDict(r) for r in got]

    read = asyncio.run(a2a_task())
    text = json.dumps(read)
    assert '"note": "thread a"' in text and '"content": "thread a"' in text
    assert "Done: remembered thread a" in text
    assert not leaks(text, *bob_ids), text


def test_an_id_that_looks_scoped_is_shown_as_its_client_gave_it(
    serve: Callable[..., Served],
) -> None:
    """The scope is taken off once: a thread a client names like a stored id (here its
    own scope and ``x``) reads as it named it, without keys (stored as given) and with
    several (stored under a second scope) — in its checkpoint and in the state that
    holds it."""
    odd = scoped_thread_id(ALICE, "x")
    for keys in ([], [ALICE, BOB]):
        served = serve(agent(), keys=keys)
        lg = get_sync_client(url=served.url, api_key=keys[0] if keys else None)
        assert lg.threads.create(thread_id=odd)["thread_id"] == odd
        paused = lg.runs.wait(odd, "where", input={"messages": ["where?"]})
        assert paused["seen"] == [f"on {odd}"] * 2  # type: ignore[call-overload]
        state = lg.threads.get_state(odd)
        assert state["checkpoint"]["thread_id"] == odd
        assert state["values"]["messages"][2]["content"] == f"thread {odd}"  # type: ignore[call-overload]
    stored = served.app.state.server.agent.list_threads()
    assert stored == [scoped_thread_id(ALICE, odd)]
