"""Leaving a sync ``agent.stream`` early, as with LangGraph's stream generator: the reader
sets the pace, so a reader who leaves between events (``break``, ``close()``) has left
before any later step starts — no tool the model asked for runs, the model is not called
again. The model call in flight is cancelled (a stream closed at the next chunk, an
unstreamed answer dropped: nothing saved), and so is an async tool in flight; a sync tool
in flight ends and is saved (it cannot be interrupted). The thread takes new input at
once and a later run continues from the last saved step. ``astream`` is paced alike;
its ``aclose()`` cancels the step in flight."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.errors import ThreadBusyError
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCall
from plait.testing import ScriptedChatModel, transcript


def _agent(
    runs: list[str], checkpointer: str = "memory", first: str = ""
) -> tuple[plait.Agent, ScriptedChatModel]:
    def act(x: str, runtime: plait.ToolRuntime) -> str:
        """Do something with a side effect."""
        runtime.stream_writer({"acting": x})
        runs.append(x)
        return f"did {x}"

    model = ScriptedChatModel(
        [AIMessage(first, tool_calls=[ToolCall("act", {"x": "first"}, "c1")]), "second answer"]
    )
    return plait.create_agent(model, tools=[act], checkpointer=checkpointer), model


def test_breaking_after_the_model_update_runs_no_tool_and_no_second_model_call() -> None:
    """The race that sank the first attempt (the worker starting the tools step before the
    reader's ``break`` reached it): 60 runs, the reader lingering a little before leaving,
    not one tool run or second model call."""
    for attempt in range(60):
        runs: list[str] = []
        agent, model = _agent(runs)
        for update in agent.stream("first", thread_id="t", stream_mode="updates"):
            assert list(update) == ["model"]
            time.sleep(0.002)  # the reader's own work: a racing run would act meanwhile
            break
        assert (attempt, runs, model.calls) == (attempt, [], 1)
        assert transcript(agent.get_state("t")["messages"]) == [("human", "first"), ("ai", "")]


def test_after_a_break_the_thread_takes_new_input_at_once(tmp_path: Path) -> None:
    runs: list[str] = []
    agent, model = _agent(runs, f"sqlite:///{tmp_path / 'a.db'}")
    for _ in agent.stream("first", thread_id="t"):
        break
    assert agent.invoke("second", thread_id="t").text == "second answer"
    assert runs == []
    assert model.calls == 2
    messages = agent.get_state("t")["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "human", "ai"]
    assert messages[2].text.startswith("Not run:")


def test_invoke_none_after_a_break_continues_from_the_last_saved_step(tmp_path: Path) -> None:
    runs: list[str] = []
    agent, model = _agent(runs, f"sqlite:///{tmp_path / 'a.db'}")
    for _ in agent.stream("first", thread_id="t"):
        break
    assert agent.invoke(None, thread_id="t").text == "second answer"
    assert runs == ["first"]
    assert transcript(agent.get_state("t")["messages"]) == [
        ("human", "first"),
        ("ai", ""),
        ("tool", "did first"),
        ("ai", "second answer"),
    ]
    assert model.calls == 2


class _SlowModel(ScriptedChatModel):
    """Streams its scripted answer one word every 20 ms and records the words it produced
    and whether its stream was closed: a model that is not an HTTP provider, so the call
    is stopped at the chunk after the reader left."""

    def __init__(self, answers: list[Any]) -> None:
        super().__init__(answers)
        self.produced: list[str] = []
        self.closed = False

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        try:
            for chunk in super().stream(messages, **options):
                self.produced.append(str(chunk.content))
                yield chunk
                time.sleep(0.02)
        finally:
            self.closed = True


def test_breaking_on_a_token_cancels_that_model_call_and_saves_no_partial_answer() -> None:
    """The model's stream is closed at its next chunk, not read to its end (200 words, 4 s),
    and its partial answer is not saved: the thread holds the input, and ``invoke(None)``
    calls the model again."""
    words = " ".join(f"w{i}" for i in range(200))
    model = _SlowModel([words, "again"])
    agent = plait.create_agent(model, checkpointer="memory")
    for token, meta in agent.stream("first", thread_id="t", stream_mode="messages"):
        assert (token.content, meta["langgraph_node"]) == ("w0 ", "model")
        break
    assert model.closed
    assert len(model.produced) < 100
    assert transcript(agent.get_state("t")["messages"]) == [("human", "first")]
    assert agent.invoke(None, thread_id="t").text == "again"
    assert transcript(agent.get_state("t")["messages"]) == [("human", "first"), ("ai", "again")]


def test_breaking_on_a_tools_output_lets_the_tools_step_end_and_calls_no_model() -> None:
    runs: list[str] = []
    agent, model = _agent(runs)
    for mode, data in agent.stream("first", thread_id="t", stream_mode=["custom"]):
        assert (mode, data) == ("custom", {"acting": "first"})
        break
    assert runs == ["first"]  # the tool in flight ended (the break waited for it) ...
    assert model.calls == 1  # ... and nothing began after it
    assert transcript(agent.get_state("t")["messages"])[-1] == ("tool", "did first")
    assert agent.invoke(None, thread_id="t").text == "second answer"
    assert runs == ["first"]


def test_close_on_a_kept_stream_stops_it_and_ends_its_events() -> None:
    runs: list[str] = []
    agent, model = _agent(runs)
    stream = agent.stream("first", thread_id="t")
    assert next(stream).source == "model"
    stream.close()
    assert (runs, model.calls) == ([], 1)
    with pytest.raises(StopIteration):
        next(stream)
    assert stream.result is None
    stream.close()  # again: nothing to do
    assert agent.invoke("second", thread_id="t").text == "second answer"


def test_a_stream_closed_before_it_is_read_never_runs() -> None:
    runs: list[str] = []
    agent, model = _agent(runs)
    stream = agent.stream("first", thread_id="t")
    stream.close()
    assert list(stream) == []
    assert model.calls == 0


def test_a_stream_read_to_its_end_runs_the_whole_run_and_holds_its_result() -> None:
    runs: list[str] = []
    agent, model = _agent(runs, first="on it")
    stream = agent.stream("first", thread_id="t", mode=["messages", "custom"])
    events = list(stream)
    tokens = [e.data.content for e in events if e.mode == "messages" and e.source == "model"]
    assert "".join(tokens) == "on itsecond answer"
    assert [e.data for e in events if e.mode == "custom"] == [{"acting": "first"}]
    assert stream.result is not None
    assert stream.result.text == "second answer"
    assert (runs, model.calls) == (["first"], 2)


def test_a_stream_dropped_in_another_thread_stops_without_waiting_there() -> None:
    """A stream collected in a thread that did not read it (here, one the tool in flight
    waits on) stops its run without waiting for that step, which would wait forever."""
    runs: list[str] = []
    gate = threading.Event()

    def wait(runtime: plait.ToolRuntime) -> str:
        """Wait for the gate."""
        runtime.stream_writer("waiting")
        gate.wait(30)
        runs.append("wait")
        return "waited"

    model = ScriptedChatModel([AIMessage("", tool_calls=[ToolCall("wait", {}, "c1")]), "never"])
    agent = plait.create_agent(model, tools=[wait], checkpointer="memory")
    stream = agent.stream("go", thread_id="t", mode=["updates", "custom"])
    assert next(stream).source == "model"
    assert next(stream).data == "waiting"  # the tool is in flight, waiting on the gate
    holder = [stream]
    del stream
    dropper = threading.Thread(target=holder.clear)
    dropper.start()
    dropper.join(30)
    assert not dropper.is_alive()  # it did not wait for the tool
    assert runs == []
    gate.set()
    deadline = time.monotonic() + 30
    while len(agent.get_state("t")["messages"]) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert transcript(agent.get_state("t")["messages"])[-1] == ("tool", "waited")
    assert model.calls == 1


# -- astream: the same pace; aclose() cancels the step in flight and frees the thread ---


def test_an_async_stream_left_after_the_model_update_runs_no_tool() -> None:
    """As the sync loop above: 60 runs, each left with ``aclose()`` after the first event
    and a little of the reader's own awaiting; ``aclose()`` returns with the thread free
    and the model's step saved."""

    async def scenario() -> None:
        for attempt in range(60):
            runs: list[str] = []
            agent, model = _agent(runs)
            stream = agent.astream("first", thread_id="t", stream_mode="updates")
            async for update in stream:
                assert list(update) == ["model"]
                await asyncio.sleep(0.002)  # a racing run would start the tool meanwhile
                break
            await stream.aclose()
            assert (attempt, runs, model.calls) == (attempt, [], 1)
            assert (await agent.ainvoke("second", thread_id="t")).text == "second answer"
            assert transcript(agent.get_state("t")["messages"])[:2] == [
                ("human", "first"),
                ("ai", ""),
            ]
            assert runs == []

    asyncio.run(scenario())


def test_an_async_stream_dropped_on_a_token_ends_that_model_call_and_no_more() -> None:
    """Dropped after ``break`` without ``aclose()`` when the model call had given all its
    chunks before the reader took the first (a model that never awaits: the call ran to
    its end on the loop first): that answer is whole and saved, nothing starts after it,
    and the thread is free once the loop has run the run's task to its end. A call still
    streaming is cancelled (``tests/core/models/test_stream_leave_http.py``)."""

    async def scenario() -> None:
        runs: list[str] = []
        agent, model = _agent(runs, first="let me act on it")
        async for token, _ in agent.astream("first", thread_id="t", stream_mode="messages"):
            assert token.content == "let "
            break
        for _ in range(3000):
            try:
                result = await agent.ainvoke(None, thread_id="t")
                break
            except ThreadBusyError:
                await asyncio.sleep(0.01)
        assert result.text == "second answer"
        assert runs == ["first"]  # run by the invoke that continued the run
        assert model.calls == 2
        assert transcript(agent.get_state("t")["messages"]) == [
            ("human", "first"),
            ("ai", "let me act on it"),
            ("tool", "did first"),
            ("ai", "second answer"),
        ]

    asyncio.run(scenario())


def test_an_async_stream_read_to_its_end_runs_the_whole_run() -> None:
    async def scenario() -> None:
        runs: list[str] = []
        agent, model = _agent(runs, first="on it")
        stream = agent.astream("first", thread_id="t", mode=["messages", "custom"])
        events = [e async for e in stream]
        tokens = [e.data.content for e in events if e.mode == "messages" and e.source == "model"]
        assert "".join(tokens) == "on itsecond answer"
        assert [e.data for e in events if e.mode == "custom"] == [{"acting": "first"}]
        assert stream.result is not None and stream.result.text == "second answer"
        assert (runs, model.calls) == (["first"], 2)

    asyncio.run(scenario())


# -- a model call that does not stream: cancelled too, its answer never saved ------------


class _Announce(plait.Middleware):
    """Writes a custom event as the model call starts (a status line a UI shows): the
    reader can leave while the call is in flight."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        request.runtime.stream_writer("calling the model")
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        request.runtime.stream_writer("calling the model")
        return await handler(request)


class _HeldModel(ScriptedChatModel):
    """Answers its first call only once ``release`` is set (a model working, not
    streaming: ``invoke``/``ainvoke``); records whether an async call was cancelled."""

    def __init__(self, answers: list[Any]) -> None:
        super().__init__(answers)
        self.release = threading.Event()
        self.started = threading.Event()
        self.cancelled = False

    def invoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        if not self.started.is_set():
            self.started.set()
            assert self.release.wait(30)
        return super().invoke(messages, **options)

    async def ainvoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        if not self.started.is_set():
            self.started.set()
            try:
                await asyncio.sleep(120)
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return super().invoke(messages, **options)


def test_leaving_during_a_call_that_does_not_stream_saves_no_answer() -> None:
    """Without ``messages`` mode the model is invoked, not streamed; a plain model's call
    cannot be interrupted, so the close waits for it, but its answer arrives after the
    reader left and is dropped as a streamed call's partial answer is: the thread holds
    the input, and ``invoke(None)`` calls the model again."""
    model = _HeldModel(["never read", "again"])
    agent = plait.create_agent(model, checkpointer="memory", middleware=[_Announce()])
    stream = agent.stream("first", thread_id="t", stream_mode=["updates", "custom"])
    for mode, data in stream:
        assert (mode, data) == ("custom", "calling the model")
        assert model.started.wait(10)
        break
    closer = threading.Thread(target=stream.close)
    closer.start()
    model.release.set()  # the call ends after the reader left
    closer.join(30)
    assert not closer.is_alive()
    assert stream.result is None
    assert transcript(agent.get_state("t")["messages"]) == [("human", "first")]
    assert agent.invoke(None, thread_id="t").text == "again"
    assert transcript(agent.get_state("t")["messages"]) == [("human", "first"), ("ai", "again")]
    assert model.calls == 2


def test_an_async_stream_dropped_during_a_call_that_does_not_stream_cancels_it() -> None:
    """``astream`` dropped after ``break`` while the model works on an unstreamed answer:
    the call's task is cancelled (the model sees ``CancelledError``), nothing is saved,
    and the next run calls the model again."""

    async def scenario() -> None:
        model = _HeldModel(["again"])  # the cancelled call took no answer from the script
        agent = plait.create_agent(model, checkpointer="memory", middleware=[_Announce()])
        async for mode, data in agent.astream(
            "first", thread_id="t", stream_mode=["updates", "custom"]
        ):
            assert (mode, data) == ("custom", "calling the model")
            break
        for _ in range(3000):
            try:
                result = await agent.ainvoke(None, thread_id="t")
                break
            except ThreadBusyError:
                await asyncio.sleep(0.01)
        assert model.cancelled
        assert result.text == "again"
        assert transcript(agent.get_state("t")["messages"]) == [
            ("human", "first"),
            ("ai", "again"),
        ]

    asyncio.run(scenario())


# -- an async tool under a sync stream: cancelled on the agent's loop thread ------------


@pytest.mark.parametrize("timeout", [None, 60.0], ids=["no-timeout", "timeout"])
def test_leaving_a_sync_stream_cancels_an_async_tool_in_flight(timeout: float | None) -> None:
    """An async tool runs on the agent's loop thread under a sync ``stream``; the reader
    leaves on the tool's own event while it works (here, waits for two minutes): the
    tool's task is cancelled (it sees ``CancelledError``), the break does not wait for
    it, no tool result is saved, and ``invoke(None)`` runs the call again."""
    seen: list[str] = []
    release = threading.Event()

    @plait.tool(timeout=timeout)
    async def fetch(url: str, runtime: plait.ToolRuntime) -> str:
        """Fetch a page."""
        runtime.stream_writer("fetching")
        if len(seen) == 0:
            seen.append("started")
            try:
                await asyncio.sleep(120)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            finally:
                release.set()
        seen.append("finished")
        return f"page at {url}"

    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[ToolCall("fetch", {"url": "x"}, "c1")]), "done"]
    )
    agent = plait.create_agent(model, tools=[fetch], checkpointer="memory")
    stream = agent.stream("go", thread_id="t", stream_mode=["custom"])
    for mode, data in stream:
        assert (mode, data) == ("custom", "fetching")
        break
    closer = threading.Thread(target=stream.close)
    closer.start()
    closer.join(30)
    assert not closer.is_alive(), "close() waited for the tool"
    assert release.wait(10)
    assert seen == ["started", "cancelled"]
    assert stream.result is None
    # the call was cancelled, not answered: the thread holds the model's request only
    assert transcript(agent.get_state("t")["messages"]) == [("human", "go"), ("ai", "")]
    assert agent.invoke(None, thread_id="t").text == "done"
    assert seen == ["started", "cancelled", "finished"]
    assert transcript(agent.get_state("t")["messages"]) == [
        ("human", "go"),
        ("ai", ""),
        ("tool", "page at x"),
        ("ai", "done"),
    ]
    assert model.calls == 2
    agent.close()
