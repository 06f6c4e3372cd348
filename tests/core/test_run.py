"""Runs end to end: tools, errors the model can read, limits, usage, sync/async parity."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

import plait
from plait.errors import RecursionLimitError
from plait.messages import ToolCall, Usage
from plait.testing import ai, call, scripted, transcript


@plait.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


@plait.tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def test_tool_result_goes_back_to_the_model(make_agent: Any) -> None:
    agent = make_agent([ai("", call("add", a=2, b=3)), "it is 5"], tools=[add])
    result = agent.invoke("2+3?")

    assert transcript(result.messages) == [
        ("human", "2+3?"),
        ("ai", ""),
        ("tool", "5"),
        ("ai", "it is 5"),
    ]
    second = agent.model.requests[1]
    assert second.messages[-1].tool_call_id == result.messages[1].tool_calls[0].id
    assert second.tool_names == ["add"]


def test_bad_argument_becomes_an_error_message_and_the_model_recovers(make_agent: Any) -> None:
    agent = make_agent([ai("", call("add", a="two")), ai("", call("add", a=2)), "3"], tools=[add])
    result = agent.invoke("2+1?")

    first_reply = result.messages[2]
    assert first_reply.status == "error"
    assert "invalid arguments for tool 'add'" in first_reply.text
    assert "a" in first_reply.text
    assert result.messages[4].text == "3"
    assert result.text == "3"


def test_a_raising_tool_becomes_an_error_message(make_agent: Any) -> None:
    agent = make_agent([ai("", call("explode", reason="disk full")), "sorry"], tools=[explode])
    result = agent.invoke("go")

    reply = result.messages[2]
    assert reply.status == "error"
    assert "RuntimeError: disk full" in reply.text
    assert result.text == "sorry"


def test_unknown_tool_lists_the_available_ones(make_agent: Any) -> None:
    agent = make_agent([ai("", call("subtract", a=1)), "ok"], tools=[add])
    reply = agent.invoke("go").messages[2]

    assert reply.status == "error"
    assert "no tool named 'subtract'" in reply.text
    assert "add" in reply.text


def test_malformed_arguments_are_answered_without_running(make_agent: Any) -> None:
    broken = ToolCall("add", {}, "c1", error="the arguments are not valid JSON")
    agent = make_agent([plait.AIMessage("", tool_calls=[broken]), "ok"], tools=[add])
    reply = agent.invoke("go").messages[2]

    assert reply.status == "error"
    assert "not valid JSON" in reply.text


def test_recursion_limit_stops_a_looping_agent(make_agent: Any) -> None:
    loop = [ai("", call("add", a=1)) for _ in range(5)]
    agent = make_agent(loop, tools=[add])

    with pytest.raises(RecursionLimitError, match="recursion limit of 3 model calls"):
        agent.invoke("forever", recursion_limit=3)
    assert agent.model.calls == 3


def test_usage_is_summed_over_the_run(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("add", a=1), usage=Usage(10, 2)), ai("2", usage=Usage(15, 3, 5))],
        tools=[add],
    )
    assert agent.invoke("go").usage == Usage(25, 5, 5, 0)


def test_usage_reported_by_a_tool_is_added_to_the_run(make_agent: Any) -> None:
    @plait.tool
    def delegate(runtime: plait.ToolRuntime) -> plait.messages.ToolMessage:
        """Answer as if a sub-agent had spent tokens on it."""
        return plait.messages.ToolMessage(
            "done", tool_call_id=runtime.tool_call_id, usage=Usage(100, 7)
        )

    agent = make_agent(
        [ai("", call("delegate"), usage=Usage(10, 2)), ai("ok", usage=Usage(1, 1))],
        tools=[delegate],
    )
    result = agent.invoke("go")
    assert result.usage == Usage(111, 10)
    assert result.messages[2].usage == Usage(100, 7)


def test_tool_runtime_is_injected_and_hidden(make_agent: Any) -> None:
    @plait.tool
    def whoami(runtime: plait.ToolRuntime) -> str:
        """Report the thread."""
        return f"{runtime.runtime.thread_id}/{runtime.context['user']}/{runtime.tool_call_id}"

    agent = make_agent([ai("", call("whoami", id="c9")), "ok"], tools=[whoami])
    result = agent.invoke("who?", thread_id="t1", context={"user": "ada"})

    assert "runtime" not in whoami.parameters.get("properties", {})
    assert result.messages[2].text == "t1/ada/c9"


def test_tool_returning_a_command_updates_state(make_agent: Any) -> None:
    @attrs.frozen
    class Notes(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {"notes": plait.StateField(default=[])}

    @plait.tool
    def note(text: str, runtime: plait.ToolRuntime) -> plait.Command:
        """Keep a note."""
        return plait.Command(
            update={
                "notes": [*runtime.state["notes"], text],
                "messages": [plait.ToolMessage("noted", tool_call_id=runtime.tool_call_id)],
            }
        )

    agent = make_agent(
        [ai("", call("note", text="milk")), "ok"], tools=[note], middleware=[Notes()]
    )
    result = agent.invoke("remember milk")

    assert result.state["notes"] == ["milk"]
    assert result.messages[2].text == "noted"


def test_sync_and_async_paths_produce_the_same_conversation(make_agent: Any) -> None:
    script = [ai("", call("add", a=1, b=2), call("explode", reason="no")), "done"]
    sync_result = make_agent(list(script), tools=[add, explode]).invoke("go")
    async_result = asyncio.run(make_agent(list(script), tools=[add, explode]).ainvoke("go"))

    assert transcript(sync_result.messages) == transcript(async_result.messages)
    assert [m.id for m in sync_result.messages[1:3]] != []


def test_async_tools_of_one_message_run_concurrently(make_agent: Any) -> None:
    spans: dict[str, tuple[float, float]] = {}

    @plait.tool
    async def slow(name: str) -> str:
        """Wait a little."""
        start = time.perf_counter()
        await asyncio.sleep(0.2)
        spans[name] = (start, time.perf_counter())
        return name

    calls = [call("slow", name=n) for n in ("a", "b", "c")]
    agent = make_agent([ai("", *calls), "ok"], tools=[slow])
    asyncio.run(agent.ainvoke("go"))

    latest_start = max(start for start, _ in spans.values())
    earliest_end = min(end for _, end in spans.values())
    assert latest_start < earliest_end  # all three were running at the same moment


def test_sync_tools_run_off_the_event_loop(make_agent: Any) -> None:
    loop_threads: list[bool] = []

    @plait.tool
    def blocking() -> str:
        """Blocks."""
        try:
            asyncio.get_running_loop()
            loop_threads.append(True)
        except RuntimeError:
            loop_threads.append(False)
        return "ok"

    agent = make_agent([ai("", call("blocking")), "done"], tools=[blocking])
    asyncio.run(agent.ainvoke("go"))
    assert loop_threads == [False]


def test_async_hooks_and_tools_work_on_the_sync_path(make_agent: Any) -> None:
    @plait.tool
    async def aecho(text: str) -> str:
        """Echo."""
        await asyncio.sleep(0)
        return text

    @plait.wrap_model_call
    async def tag(request: plait.ModelRequest, handler: Any) -> Any:
        response = await handler(request)
        return attrs.evolve(response.message, content=response.message.text + "!")

    agent = make_agent([ai("", call("aecho", text="hi")), "done"], tools=[aecho], middleware=[tag])
    result = agent.invoke("go")

    assert transcript(result.messages)[-2:] == [("tool", "hi"), ("ai", "done!")]


def test_sync_wrap_hook_works_on_the_async_path(make_agent: Any) -> None:
    @plait.wrap_tool_call
    def count(request: plait.ToolCallRequest, handler: Any) -> Any:
        message = handler(request)
        return attrs.evolve(message, content=f"[{message.text}]")

    agent = make_agent([ai("", call("add", a=1)), "done"], tools=[add], middleware=[count])
    result = asyncio.run(agent.ainvoke("go"))
    assert result.messages[2].text == "[2]"


def test_structured_response_native(make_agent: Any) -> None:
    @attrs.frozen
    class Weather:
        city: str
        celsius: int

    agent = make_agent(['{"city": "Paris", "celsius": 21}'], response_format=Weather)
    result = agent.invoke("weather?")

    assert result.structured_response == Weather("Paris", 21)
    assert agent.model.requests[0].response_format["properties"]["celsius"]["type"] == "integer"


def test_structured_response_through_a_final_answer_tool(make_agent: Any) -> None:
    @attrs.frozen
    class Weather:
        city: str
        celsius: int

    model = scripted(
        ai("", call("Weather", city="Paris", celsius="hot")),
        ai("", call("Weather", city="Paris", celsius=21)),
        native_structured_output=False,
    )
    agent = make_agent(model, response_format=Weather)
    result = agent.invoke("weather?")

    assert result.structured_response == Weather("Paris", 21)
    assert result.messages[2].status == "error"
    assert model.requests[0].tool_names == ["Weather"]
    assert model.requests[0].response_format is None


def test_stream_modes(make_agent: Any) -> None:
    @plait.tool
    def progress(runtime: plait.ToolRuntime) -> str:
        """Report progress."""
        runtime.stream_writer({"step": 1})
        return "done"

    agent = make_agent([ai("", call("progress")), "all good"], tools=[progress])
    events = list(agent.stream("go", mode=["updates", "custom", "messages"]))

    modes = [e.mode for e in events]
    assert {"updates", "custom", "messages"} <= set(modes)
    assert [e.data for e in events if e.mode == "custom"] == [{"step": 1}]
    chunks = [e.data.content for e in events if e.mode == "messages" and e.source == "model"]
    assert "".join(chunks) == "all good"
    assert [e.source for e in events if e.mode == "updates"] == [
        "input",
        "model",
        "progress",
        "model",
    ][1:]


def test_astream_yields_the_same_updates(make_agent: Any) -> None:
    agent = make_agent([ai("", call("add", a=1)), "ok"], tools=[add])

    async def collect() -> list[str]:
        return [e.source async for e in agent.astream("go", mode="updates")]

    assert asyncio.run(collect()) == ["model", "add", "model"]


def test_structured_response_with_a_json_schema(make_agent: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    agent = make_agent(['{"city": "Oslo"}'], response_format=schema)
    assert agent.invoke("where?").structured_response == {"city": "Oslo"}

    bad = make_agent(['{"town": "Oslo"}', '{"town": "Bergen"}'], response_format=schema)
    with pytest.raises(plait.errors.StructuredOutputError, match="city"):
        bad.invoke("where?")


def test_transform_model_stream_rewrites_chunks_and_the_final_message(make_agent: Any) -> None:
    @plait.transform_model_stream
    def upper(chunks: Any, request: Any) -> Any:
        for chunk in chunks:
            yield attrs.evolve(chunk, content=chunk.content.upper())

    agent = make_agent(["quiet words here"], middleware=[upper])
    events = list(agent.stream("hi", mode="messages", thread_id="t"))

    assert [e.data.content for e in events if e.data.content] == ["QUIET ", "WORDS ", "HERE"]
    assert agent.get_state("t")["messages"][-1].text == "QUIET WORDS HERE"


def test_async_stream_transform_on_both_paths(make_agent: Any) -> None:
    @plait.transform_model_stream
    async def drop_spaces(chunks: Any, request: Any) -> Any:
        async for chunk in chunks:
            yield attrs.evolve(chunk, content=chunk.content.replace(" ", "_"))

    sync_agent = make_agent(["a b c"], middleware=[drop_spaces])
    sync_text = [e.data.content for e in sync_agent.stream("hi", mode="messages")]

    async def collect() -> list[str]:
        agent = make_agent(["a b c"], middleware=[drop_spaces])
        return [e.data.content async for e in agent.astream("hi", mode="messages")]

    assert "".join(sync_text) == "a_b_c" == "".join(asyncio.run(collect()))
    assert len([t for t in sync_text if t]) == 3


def test_stream_result_is_the_run_result_once_events_are_exhausted(make_agent: Any) -> None:
    agent = make_agent([ai("", call("add", a=1)), "it is 2"], tools=[add])
    events = agent.stream("go", mode="updates")
    assert events.result is None

    sources = [e.source for e in events]

    assert sources == ["model", "add", "model"]
    assert events.result is not None and events.result.text == "it is 2"


def test_astream_result_and_interrupt_event(make_agent: Any) -> None:
    @plait.after_model
    def review(state: Any) -> None:
        plait.interrupt({"check": state["messages"][-1].text})

    agent = make_agent(["draft"], middleware=[review])

    async def collect() -> tuple[list[Any], Any]:
        events = agent.astream("write", mode="updates", thread_id="t")
        return [e async for e in events], events.result

    events, result = asyncio.run(collect())

    assert events[-1].source == "interrupt"
    (pending,) = events[-1].data["__interrupt__"]
    assert pending.value == {"check": "draft"}
    assert result.interrupts == [pending]
    assert agent.get_interrupts("t") == [pending]
    agent.invoke(plait.Command(resume="fine"), thread_id="t")
    assert agent.get_interrupts("t") == []


def test_thread_id_without_a_checkpointer_is_refused() -> None:
    from plait.errors import CheckpointerRequiredError

    agent = plait.create_agent(plait.ScriptedChatModel(["never"]))
    with pytest.raises(CheckpointerRequiredError, match=r"thread_id='x' needs a checkpointer"):
        agent.invoke("hi", thread_id="x")
    assert agent.invoke("hi").text == "never"  # the refused call used no answer


@pytest.mark.parametrize(
    ("url", "forms"),
    [
        ("sqlite:/agent.db", "sqlite:///relative.db, sqlite:////absolute/path.db"),
        ("sqlite:///a.db?sync=1", "synchronous=full or synchronous=normal"),
    ],
)
def test_malformed_persistence_url_is_a_config_error_naming_it(url: str, forms: str) -> None:
    from plait.errors import ConfigError, StoreError

    for key in ("checkpointer", "store"):
        with pytest.raises(ConfigError) as info:
            plait.create_agent(plait.ScriptedChatModel(["x"]), **{key: url})
        assert isinstance(info.value, StoreError)  # what it was before, still
        assert repr(url) in str(info.value) and forms in str(info.value)


def test_unknown_persistence_scheme_names_the_url() -> None:
    from plait.errors import ConfigError

    with pytest.raises(ConfigError, match=r"checkpointer URL 'sqlit:///a.db': unknown "):
        plait.create_agent(plait.ScriptedChatModel(["x"]), checkpointer="sqlit:///a.db")


def test_a_failed_create_agent_leaves_no_database_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    for middleware in (["no_such_middleware"], [("tool_call_limit", {"run_limit": "two"})]):
        with pytest.raises(ConfigError):
            plait.create_agent(
                plait.ScriptedChatModel(["x"]),
                middleware=middleware,
                checkpointer="sqlite:///agent.db",
                store="sqlite:///store.db",
            )
    assert list(tmp_path.iterdir()) == []


class _RefusesEverySetup(plait.Middleware):
    def validate_agent(self, agent_config: Any) -> None:
        raise plait.errors.ConfigError("middleware 'picky': this setup is refused")


class _AddsAnAdd(plait.Middleware):
    def agent_tools(self, agent_config: Any) -> list[Any]:
        return [add]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"store": "nosuch:///store.db"}, "store URL 'nosuch:///store.db'"),
        ({"middleware": [_RefusesEverySetup()]}, "this setup is refused"),
        ({"middleware": [_AddsAnAdd()], "tools": [add]}, "two tools are named 'add'"),
        ({"response_format": 42}, "response_format"),
    ],
)
def test_an_agent_failing_after_its_urls_are_read_leaves_no_database_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], says: str
) -> None:
    """The checkpointer and store are built before the agent's tools, response format
    and validate_agent hooks are checked: a missing file is created on first use only."""
    from plait.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    settings: dict[str, Any] = {"checkpointer": "sqlite:///agent.db", "store": "sqlite:///s.db"}
    with pytest.raises(ConfigError, match=re.escape(says)):
        plait.create_agent(plait.ScriptedChatModel(["x"]), **{**settings, **kwargs})
    assert list(tmp_path.iterdir()) == []
    # The same agent without the mistake creates its files when it first runs.
    agent = plait.create_agent(plait.ScriptedChatModel(["x"]), **settings)
    assert list(tmp_path.iterdir()) == []
    assert agent.invoke("hi", thread_id="t").text == "x"
    assert (tmp_path / "agent.db").is_file()


def test_the_thread_cache_is_bounded_and_an_evicted_thread_loads_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import plait.agent

    monkeypatch.setattr(plait.agent, "THREAD_CACHE_SIZE", 3)
    answers = [f"answer {n}" for n in range(12)]
    agent = plait.create_agent(scripted(*answers), checkpointer="memory")
    for n in range(10):
        agent.invoke(f"question {n}", thread_id=f"t{n}")
    assert list(agent._cache) == ["t7", "t8", "t9"]  # the least recently served went first
    again = agent.invoke("and again?", thread_id="t0")  # evicted: loaded from the checkpointer
    assert transcript(again.messages) == [
        ("human", "question 0"),
        ("ai", "answer 0"),
        ("human", "and again?"),
        ("ai", "answer 10"),
    ]
    assert list(agent._cache) == ["t8", "t9", "t0"]
