"""A server over streamable HTTP on loopback: headers, concurrent calls from threads and
event loops over one session, a server that restarts or dies mid-call, progress as
``custom`` stream events and elicitation as a ``plait.interrupt``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from mcp_servers import HTTPServer, demo_stdio

import plait
from plait import Command
from plait.testing import ai, call, scripted, tool_answers


@pytest.fixture(scope="module")
def http_server() -> Iterator[HTTPServer]:
    server = HTTPServer()
    yield server
    server.stop()


def web(server: HTTPServer, **extra: Any) -> dict[str, Any]:
    return {"name": "web", "url": server.url, **extra}


def make(model: plait.ScriptedChatModel, *servers: dict[str, Any], **kw: Any) -> plait.Agent:
    return plait.create_agent(model=model, middleware=[("mcp", {"servers": list(servers)})], **kw)


def texts(result: plait.AgentResult) -> dict[str, tuple[str, str]]:
    return {k: (m.status, m.text) for k, m in tool_answers(result.messages).items()}


def test_headers_are_sent_with_every_request(http_server: HTTPServer) -> None:
    model = scripted(ai("", call("header", id="h1", name="X-Team")), "ok")
    with make(model, web(http_server, headers={"X-Team": "blue"})) as agent:
        assert texts(agent.invoke("x"))["h1"] == ("success", "blue")


def echo_back(messages: list[Any], tools: object) -> plait.AIMessage:
    last = messages[-1]
    if isinstance(last, plait.ToolMessage):
        return ai(last.text)
    return ai("", call("echo", text=last.text), call("slow", seconds=0.2))


def test_concurrent_calls_from_threads_and_event_loops_share_the_session(
    http_server: HTTPServer,
) -> None:
    model = plait.ScriptedChatModel([echo_back] * 40)
    prompts = [f"message {i}" for i in range(12)]
    with make(model, web(http_server)) as agent:
        with ThreadPoolExecutor(6) as pool:
            threaded = list(pool.map(lambda p: agent.invoke(p), prompts[:6]))

        async def gathered() -> list[plait.AgentResult]:
            return list(await asyncio.gather(*(agent.ainvoke(p) for p in prompts[6:])))

        awaited = asyncio.run(gathered())
    for prompt, result in zip(prompts, threaded + awaited, strict=True):
        answers = sorted(m.text for m in tool_answers(result.messages).values())
        assert answers == [prompt, "slept 0.2"]


def test_a_restarted_server_is_reconnected(http_server: HTTPServer) -> None:
    model = scripted(ai("", call("pid", id="p1")), "ok", ai("", call("pid", id="p2")), "ok")
    with make(model, web(http_server)) as agent:
        first = texts(agent.invoke("x"))["p1"]
        http_server.restart()
        second = texts(agent.invoke("y"))["p2"]
    assert first[0] == second[0] == "success"
    assert first[1] != second[1]


def test_a_server_dying_mid_call_then_coming_back(http_server: HTTPServer) -> None:
    model = scripted(
        ai("", call("crash", id="c1")),
        ai("", call("echo", id="e1", text="anyone?")),
        "gone",
        ai("", call("echo", id="e2", text="back")),
        "back",
    )
    with make(model, web(http_server, connect_timeout=5)) as agent:
        down = texts(agent.invoke("x"))
        http_server.restart()
        up = texts(agent.invoke("y"))
    assert down["c1"][0] == "error"
    assert "MCP server 'web'" in down["c1"][1]
    assert down["e1"][0] == "error"
    assert "MCP server 'web' cannot be reached" in down["e1"][1]
    assert up["e2"] == ("success", "back")


def test_timeout_over_http(http_server: HTTPServer) -> None:
    model = scripted(ai("", call("slow", id="s1", seconds=20)), "ok")
    with make(model, web(http_server, timeout=0.3)) as agent:
        answer = texts(agent.invoke("x"))["s1"]
    assert answer == (
        "error",
        "Error: MCP tool 'slow' of server 'web' did not answer within its timeout of 0.3 s; "
        "the call was cancelled.",
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_progress_notifications_are_custom_stream_events(
    http_server: HTTPServer, transport: str
) -> None:
    server = demo_stdio() if transport == "stdio" else web(http_server)
    model = scripted(ai("", call("progress", id="g1", steps=3)), "ok")
    with make(model, server) as agent:
        events = list(agent.stream("go", mode="custom"))
    name = server["name"]
    assert [e.data for e in events] == [
        {
            "type": "mcp_progress",
            "server": name,
            "tool": "progress",
            "tool_call_id": "g1",
            "progress": float(step),
            "total": 3.0,
            "message": f"step {step}",
        }
        for step in (1, 2, 3)
    ]
    assert all(e.mode == "custom" for e in events)


def test_elicitation_pauses_the_run_and_the_answer_resumes_it(http_server: HTTPServer) -> None:
    model = scripted(ai("", call("reserve", id="r1", show="Hamlet")), "reserved")
    with make(model, web(http_server), checkpointer="memory") as agent:
        paused = agent.invoke("two seats please", thread_id="t")
        [pending] = paused.interrupts
        assert pending.value == {
            "type": "mcp_elicitation",
            "server": "web",
            "tool": "reserve",
            "message": "How many seats?",
            "mode": "form",
            "schema": {
                "properties": {"seats": {"title": "Seats", "type": "integer"}},
                "required": ["seats"],
                "type": "object",
            },
        }
        assert "r1" not in tool_answers(paused.messages)
        done = agent.invoke(Command(resume={"seats": 2}), thread_id="t")
    assert texts(done)["r1"] == ("success", "reserved 2 seats for Hamlet")
    assert done.text == "reserved"


def test_a_declined_elicitation_reaches_the_server(http_server: HTTPServer) -> None:
    model = scripted(ai("", call("reserve", id="r1", show="Lear")), "fine")
    with make(model, web(http_server), checkpointer="memory") as agent:
        agent.invoke("seats?", thread_id="t")
        done = agent.invoke(Command(resume="decline"), thread_id="t")
    assert texts(done)["r1"] == ("success", "no reservation for Lear (decline)")


def test_elicitation_on_the_async_path(http_server: HTTPServer) -> None:
    model = scripted(ai("", call("reserve", id="r1", show="Faust")), "ok")

    async def run() -> plait.AgentResult:
        agent = make(model, web(http_server), checkpointer="memory")
        try:
            paused = await agent.ainvoke("seats?", thread_id="t")
            assert paused.interrupts
            answer = {"action": "accept", "content": {"seats": 7}}
            return await agent.ainvoke(Command(resume=answer), thread_id="t")
        finally:
            await agent.aclose()

    assert texts(asyncio.run(run()))["r1"] == ("success", "reserved 7 seats for Faust")
