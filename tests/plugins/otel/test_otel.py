"""``otel``: the spans and attributes of runs, model calls and tool calls, on every path,
and the metrics."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import plait
from plait.errors import ConfigError, ProviderError
from plait.messages import AIMessage, Usage
from plait.testing import ai, call, scripted
from plait.types import ModelRequest, ModelResponse
from plait_handoff import HandoffMiddleware
from plait_model_fallback import ModelFallbackMiddleware
from plait_otel import OtelMiddleware
from plait_subagents import SubAgent, SubAgentMiddleware

from .conftest import Telemetry

META = {"model": "gpt-x-2025", "response_id": "resp_1", "finish_reason": "tool_calls"}


@plait.tool
def ping(host: str) -> str:
    """Ping a host."""
    return f"pong from {host}"


@plait.tool
def broken() -> str:
    """Always fails."""
    raise ValueError("disk on fire")


@plait.tool
def ask(question: str) -> str:
    """Ask the user."""
    return str(plait.interrupt({"question": question}))


def answers() -> list[Any]:
    return [
        ai(
            "",
            call("ping", id="call_1", host="a"),
            usage=Usage(10, 5, cache_read_tokens=4),
            response_metadata=META,
        ),
        ai(
            "done",
            usage=Usage(20, 7, reasoning_tokens=3),
            response_metadata={"model": "gpt-x-2025"},
        ),
    ]


@plait.wrap_model_call
def settings(request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
    return handler(
        request.override(model_settings={"temperature": 0.2, "max_tokens": 100, "stop": ["END"]})
    )


def check_run(otel: Telemetry, *, streaming: bool = False) -> None:
    run, first, tool, second = otel.spans()
    assert run.name == "invoke_agent helper" and run.kind == SpanKind.INTERNAL
    assert run.parent is None
    assert {k: run.attributes[k] for k in ("gen_ai.operation.name", "gen_ai.agent.name")} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "helper",
    }
    assert run.attributes["gen_ai.conversation.id"] == "t1"
    assert run.attributes["gen_ai.provider.name"] == "scripted"
    assert run.attributes["gen_ai.request.model"] == "mini"
    assert run.attributes["plait.run.status"] == "completed"
    assert run.attributes["plait.run.streaming"] is streaming
    assert run.attributes["gen_ai.usage.input_tokens"] == 30
    assert run.attributes["gen_ai.usage.output_tokens"] == 12
    assert run.status.status_code == StatusCode.UNSET

    for span in (first, tool, second):
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
    assert [first.name, tool.name, second.name] == ["chat mini", "execute_tool ping", "chat mini"]
    assert first.kind == SpanKind.CLIENT and tool.kind == SpanKind.INTERNAL
    assert dict(first.attributes) | {"gen_ai.response.time_to_first_chunk": 0} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "mini",
        "gen_ai.agent.name": "helper",
        "gen_ai.conversation.id": "t1",
        "gen_ai.request.stream": streaming,
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 100,
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.response.id": "resp_1",
        "gen_ai.response.model": "gpt-x-2025",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 4,
        "gen_ai.response.time_to_first_chunk": 0,
    }
    if streaming:
        assert first.attributes["gen_ai.response.time_to_first_chunk"] >= 0
    else:
        assert "gen_ai.response.time_to_first_chunk" not in first.attributes
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)  # derived
    assert second.attributes["gen_ai.usage.reasoning.output_tokens"] == 3
    assert "gen_ai.usage.reasoning.output_tokens" not in first.attributes
    assert "gen_ai.response.id" not in second.attributes
    assert dict(tool.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "ping",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Ping a host.",
        "gen_ai.agent.name": "helper",
        "gen_ai.conversation.id": "t1",
    }
    # content is off by default
    assert not any("messages" in key for span in otel.spans() for key in span.attributes)


def build(otel: Telemetry, make_agent: Any, **options: Any) -> Any:
    return make_agent(
        scripted(*answers(), name="mini"),
        tools=[ping],
        middleware=[otel.middleware(**options), settings],
        name="helper",
    )


def test_sync_run_model_and_tool_spans(otel: Telemetry, make_agent: Any) -> None:
    assert build(otel, make_agent).invoke("go", thread_id="t1").text == "done"
    check_run(otel)


def test_async_run(otel: Telemetry, make_agent: Any) -> None:
    assert asyncio.run(build(otel, make_agent).ainvoke("go", thread_id="t1")).text == "done"
    check_run(otel)


def test_streaming_runs_record_time_to_first_chunk(otel: Telemetry, make_agent: Any) -> None:
    list(build(otel, make_agent).stream("go", mode="messages", thread_id="t1"))
    check_run(otel, streaming=True)
    otel.exporter.clear()

    async def drain() -> None:
        async for _ in build(otel, make_agent).astream("go", mode="messages", thread_id="t1"):
            pass

    asyncio.run(drain())
    check_run(otel, streaming=True)


def test_metrics_duration_and_tokens(otel: Telemetry, make_agent: Any) -> None:
    build(otel, make_agent).invoke("go", thread_id="t1")
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 2
    assert dict(duration.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "mini",
        "gen_ai.response.model": "gpt-x-2025",
    }
    tokens = {
        p.attributes["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")
    }
    assert (tokens["input"].sum, tokens["input"].count) == (30, 2)
    assert (tokens["output"].sum, tokens["output"].count) == (12, 2)


def test_capture_content_records_messages_as_the_conventions_say(
    otel: Telemetry, make_agent: Any
) -> None:
    agent = build(otel, make_agent, capture_content=True)
    agent.invoke("go", thread_id="t1")
    _, first, tool, second = otel.spans()
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    ]
    assert json.loads(first.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_1", "name": "ping", "arguments": {"host": "a"}}
            ],
            "finish_reason": "tool_calls",
        }
    ]
    assert json.loads(first.attributes["gen_ai.tool.definitions"]) == [
        {"type": "function", "name": "ping", "description": "Ping a host."}
    ]
    assert json.loads(second.attributes["gen_ai.input.messages"])[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": "pong from a"}],
    }
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"host": "a"}
    assert tool.attributes["gen_ai.tool.call.result"] == "pong from a"


def test_system_instructions_with_capture_content(otel: Telemetry, make_agent: Any) -> None:
    agent = make_agent(
        ["hi"], middleware=[otel.middleware(capture_content=True)], system_prompt="Be brief."
    )
    agent.invoke("go")
    chat = otel.named("chat scripted")[0]
    assert json.loads(chat.attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Be brief."}
    ]


# -- failures -------------------------------------------------------------------------------


def test_a_failing_model_call_marks_chat_and_run_spans(otel: Telemetry, make_agent: Any) -> None:
    agent = make_agent(
        [ProviderError("overloaded", status_code=529)], middleware=[otel.middleware()]
    )
    with pytest.raises(ProviderError):
        agent.invoke("go")
    run, chat = otel.spans()
    for span in (run, chat):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == "ProviderError"
        assert span.events[0].name == "exception"
    assert run.attributes["plait.run.status"] == "error"
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "ProviderError"


def test_a_failing_tool_marks_its_span_and_the_run_goes_on(
    otel: Telemetry, make_agent: Any
) -> None:
    agent = make_agent(
        [ai("", call("broken"), call("nope")), "sorry"],
        tools=[broken],
        middleware=[otel.middleware()],
    )
    assert agent.invoke("go").text == "sorry"
    (failed,) = otel.named("execute_tool broken")
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "ValueError"
    assert failed.status.description == "ValueError"  # the text is content: not captured
    (unknown,) = otel.named("execute_tool _OTHER")  # a name the model made up is content
    assert unknown.attributes["error.type"] == "tool_error"
    assert unknown.status.description == "tool_error"
    (run,) = otel.named("invoke_agent agent")
    assert run.status.status_code == StatusCode.UNSET


def test_fallback_attempts_are_one_chat_span_each(otel: Telemetry, make_agent: Any) -> None:
    backup = scripted("from backup", name="backup")
    agent = make_agent(
        scripted(ProviderError("down", status_code=503), name="primary"),
        middleware=[otel.middleware(), ModelFallbackMiddleware(backup)],
    )
    assert agent.invoke("go").text == "from backup"
    run, primary, second = otel.spans()
    assert [primary.name, second.name] == ["chat primary", "chat backup"]
    assert primary.attributes["error.type"] == "ProviderError"
    assert second.status.status_code == StatusCode.UNSET
    assert primary.parent.span_id == second.parent.span_id == run.context.span_id


# -- pause and resume -----------------------------------------------------------------------


def test_a_paused_run_ends_paused_and_the_resume_links_to_it(
    otel: Telemetry, make_agent: Any
) -> None:
    agent = make_agent(
        [ai("", call("ask", question="name?")), ai("", call("ask", question="age?")), "hi Ann"],
        tools=[ask],
        middleware=[otel.middleware()],
    )
    first = agent.invoke("hello", thread_id="t")
    assert first.interrupts
    (paused,) = otel.spans()[:1]
    assert paused.attributes["plait.run.status"] == "paused"
    assert paused.status.status_code == StatusCode.UNSET
    (asked,) = otel.named("execute_tool ask")
    assert asked.attributes["plait.tool.interrupted"] is True
    assert asked.status.status_code == StatusCode.UNSET

    second = agent.invoke(plait.Command(resume="Ann"), thread_id="t")
    assert second.interrupts
    third = agent.invoke(plait.Command(resume="41"), thread_id="t")
    assert third.text == "hi Ann"
    runs = otel.named("invoke_agent agent")
    assert [r.attributes["plait.run.status"] for r in runs] == ["paused", "paused", "completed"]
    assert [r.attributes["plait.run.resumed"] for r in runs] == [False, True, True]
    assert len({r.attributes["plait.run.id"] for r in runs}) == 1
    assert runs[0].links == ()
    assert [link.context.span_id for link in runs[1].links] == [runs[0].context.span_id]
    assert [link.context.span_id for link in runs[2].links] == [
        runs[0].context.span_id,
        runs[1].context.span_id,
    ]
    # a new span, in a new trace: each call of invoke is its own trace
    assert runs[1].context.trace_id != runs[0].context.trace_id


def test_a_resume_in_a_new_agent_links_through_the_checkpoint(
    otel: Telemetry, checkpointer: Any
) -> None:
    def make(*responses: Any) -> Any:
        return plait.create_agent(
            scripted(*responses), [ask], middleware=[otel.middleware()], checkpointer=checkpointer
        )

    make(ai("", call("ask", question="name?"))).invoke("hello", thread_id="t")
    make("hi Ann").invoke(plait.Command(resume="Ann"), thread_id="t")
    paused, resumed = otel.named("invoke_agent agent")
    assert [link.context.span_id for link in resumed.links] == [paused.context.span_id]


# -- sub-agents -----------------------------------------------------------------------------


def test_sub_agent_runs_nest_under_the_task_tool_span(otel: Telemetry, make_agent: Any) -> None:
    main = scripted(
        ai("", call("task", id="task_0", description="look", subagent_type="researcher")), "done"
    )
    sub = scripted("found it", name="sub")
    spec = SubAgent(
        name="researcher",
        description="Finds facts.",
        system_prompt="You research.",
        model=sub,
        middleware=[otel.middleware()],
    )
    agent = make_agent(main, middleware=[otel.middleware(), SubAgentMiddleware(subagents=[spec])])
    assert agent.invoke("go").text == "done"
    (task,) = otel.named("execute_tool task")
    (inner,) = otel.named("invoke_agent researcher")
    assert inner.parent is not None and inner.parent.span_id == task.context.span_id
    (sub_chat,) = otel.named("chat sub")
    assert sub_chat.parent.span_id == inner.context.span_id  # one span, from the sub-agent's own
    assert len(otel.named("chat scripted")) == 2


def test_a_sub_agent_inherits_the_main_agents_tracing(otel: Telemetry, make_agent: Any) -> None:
    main = scripted(
        ai("", call("task", id="task_0", description="look", subagent_type="researcher")), "done"
    )
    spec = SubAgent(
        name="researcher",
        description="Finds.",
        system_prompt="Go.",
        model=scripted("ok", name="sub"),
    )
    agent = make_agent(main, middleware=[otel.middleware(), SubAgentMiddleware(subagents=[spec])])
    asyncio.run(agent.ainvoke("go"))
    (task,) = otel.named("execute_tool task")
    (inner,) = otel.named("invoke_agent researcher")
    assert inner.parent is not None and inner.parent.span_id == task.context.span_id
    (sub_chat,) = otel.named("chat sub")
    assert sub_chat.parent.span_id == inner.context.span_id


def test_a_sub_agent_that_opts_out_still_traces_its_calls_under_the_task(
    otel: Telemetry, make_agent: Any
) -> None:
    main = scripted(
        ai("", call("task", id="task_0", description="look", subagent_type="researcher")), "done"
    )
    spec = SubAgent(
        name="researcher",
        description="Finds.",
        system_prompt="Go.",
        model=scripted("ok", name="sub"),
        inherit=[],
    )
    agent = make_agent(main, middleware=[otel.middleware(), SubAgentMiddleware(subagents=[spec])])
    asyncio.run(agent.ainvoke("go"))
    (task,) = otel.named("execute_tool task")
    (sub_chat,) = otel.named("chat sub")
    assert sub_chat.parent.span_id == task.context.span_id
    assert otel.named("invoke_agent researcher") == []


def test_a_handoffs_receiver_is_traced_under_the_main_run(otel: Telemetry, make_agent: Any) -> None:
    receiver = plait.create_agent(
        scripted(ai("", call("ping", host="a")), "up", name="billing-model"),
        tools=[ping],
        name="billing",
    )
    agent = make_agent(
        scripted(ai("", call("transfer_to_billing", "t1"))),
        middleware=[otel.middleware(), HandoffMiddleware(agents=[receiver])],
    )
    assert asyncio.run(agent.ainvoke("go")).text == "up"
    (run,) = otel.named("invoke_agent agent")
    chats = otel.named("chat billing-model")
    (tool,) = otel.named("execute_tool ping")
    assert len(chats) == 2
    assert {span.parent.span_id for span in [*chats, tool]} == {run.context.span_id}


def test_a_receiver_with_its_own_otel_nests_its_run_span(otel: Telemetry, make_agent: Any) -> None:
    receiver = plait.create_agent(
        scripted("up", name="billing-model"), name="billing", middleware=[otel.middleware()]
    )
    agent = make_agent(
        scripted(ai("", call("transfer_to_billing", "t1"))),
        middleware=[otel.middleware(), HandoffMiddleware(agents=[receiver])],
    )
    assert agent.invoke("go").text == "up"
    (run,) = otel.named("invoke_agent agent")
    (inner,) = otel.named("invoke_agent billing")
    (chat,) = otel.named("chat billing-model")
    assert inner.parent is not None and inner.parent.span_id == run.context.span_id
    assert chat.parent.span_id == inner.context.span_id


def test_a_background_task_is_traced_in_a_trace_of_its_own(
    otel: Telemetry, make_agent: Any
) -> None:
    spec = SubAgent(
        name="researcher", description="Finds.", system_prompt="Go.", model=scripted("ok")
    )
    middleware = SubAgentMiddleware(subagents=[spec], background=True)
    start = call("start_task", "s1", description="look", subagent_type="researcher")
    agent = make_agent(
        scripted(ai("", start), "started"), middleware=[otel.middleware(), middleware]
    )
    assert agent.invoke("go", thread_id="t").text == "started"
    assert middleware.wait_for_tasks("t", timeout=10)
    (run,) = otel.named("invoke_agent agent")
    (task,) = otel.named("invoke_agent researcher")  # the main agent's otel, inherited
    assert task.parent is None and task.context.trace_id != run.context.trace_id
    (chat,) = [
        s for s in otel.named("chat scripted") if s.context.trace_id == task.context.trace_id
    ]
    assert chat.parent.span_id == task.context.span_id


# -- without an SDK, and options -------------------------------------------------------------


_WITHOUT_AN_SDK = """
import plait
from plait import effects
from plait.testing import ai, call

seen = []

@plait.tool
def probe() -> str:
    \"\"\"Look around.\"\"\"
    seen.append(effects.active())
    return "ok"

model = plait.ScriptedChatModel([ai("", call("probe")), "done"])
agent = plait.create_agent(model, tools=[probe], middleware=["otel"])
assert agent.invoke("go").text == "done"
print(seen)
"""


def test_without_an_sdk_nothing_is_installed() -> None:
    # A fresh interpreter: a global SDK provider, once set by any test, cannot be unset.
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_AN_SDK], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[False]"  # the global provider is the API's no-op one: no performer


def test_options_by_name(make_agent: Any) -> None:
    (middleware,) = make_agent([], middleware=[("otel", {"capture_content": True})]).middleware
    assert isinstance(middleware, OtelMiddleware) and middleware.capture_content
    with pytest.raises(ConfigError, match="otel"):
        make_agent([], middleware=[("otel", {"capture_content": "yes"})])


def test_an_answer_without_usage_records_no_tokens(otel: Telemetry, make_agent: Any) -> None:
    make_agent([AIMessage("hi")], middleware=[otel.middleware()]).invoke("go")
    (chat,) = otel.named("chat scripted")
    assert "gen_ai.usage.input_tokens" not in chat.attributes
    assert otel.points("gen_ai.client.token.usage") == []


def test_one_instance_in_agent_and_sub_agent_traces_each_call_once(
    otel: Telemetry, make_agent: Any
) -> None:
    tracing = otel.middleware()
    main = scripted(
        ai("", call("task", id="task_0", description="look", subagent_type="researcher")), "done"
    )
    spec = SubAgent(
        name="researcher",
        description="Finds.",
        system_prompt="Go.",
        model=scripted("ok", name="sub"),
        middleware=[tracing],
    )
    agent = make_agent(main, middleware=[tracing, SubAgentMiddleware(subagents=[spec])])
    asyncio.run(agent.ainvoke("go"))
    names = [s.name for s in otel.spans()]
    assert sorted(names) == sorted(
        [
            "invoke_agent agent",
            "chat scripted",
            "execute_tool task",
            "invoke_agent researcher",
            "chat sub",
            "chat scripted",
        ]
    )
    (inner,) = otel.named("invoke_agent researcher")
    (sub_chat,) = otel.named("chat sub")
    assert sub_chat.parent.span_id == inner.context.span_id
