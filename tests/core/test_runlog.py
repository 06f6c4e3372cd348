"""``plait.runlog``: a run records its events into its thread's run log, a run made again
after its process died logs each finished step once (and marks the step it restarted),
and a middleware's ``submit_run`` takes over running a run."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

import plait
from plait import effects
from plait.checkpoint import MemoryCheckpointer
from plait.errors import PlaitError, ThreadBusyError
from plait.messages import AIMessage, HumanMessage, ToolCall, Usage
from plait.runlog import (
    LogWriter,
    RunHandle,
    RunJob,
    arecord_run,
    cancel_paused_run,
    logged_usage,
    record_run,
    start_run,
)
from plait.types import Command


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _script(words: str = "the sum is three") -> list[Any]:
    call = ToolCall("add", {"a": 1, "b": 2}, id="call-1")
    return [AIMessage("", tool_calls=[call], id="ai-1"), AIMessage(words, id="ai-2")]


def _agent(checkpointer: Any, words: str = "the sum is three", **kwargs: Any) -> plait.Agent:
    return plait.create_agent(
        model=plait.ScriptedChatModel(_script(words)),
        tools=[add],
        checkpointer=checkpointer,
        **kwargs,
    )


def _events(words: str) -> list[dict[str, Any]]:
    """One run's events, its ids as a durable run's are on every replay (from a seed)."""
    counter = itertools.count()
    events: list[dict[str, Any]] = []
    with effects.id_source(lambda: f"id-{next(counter)}"):
        record_run(
            _agent(MemoryCheckpointer(), words),
            "add",
            thread_id="t",
            run_id="r1",
            emit=events.append,
        )
    return events


def _begin(log: MemoryCheckpointer, thread: str, run_id: str) -> int:
    return log.append_events(thread, [{"type": "run_started", "run_id": run_id}], after=0)


def _kinds(log: MemoryCheckpointer, thread: str) -> list[str]:
    return [event["type"] for _, event in log.read_events(thread)]


def test_start_run_records_the_run_into_the_checkpointers_log() -> None:
    log = MemoryCheckpointer()
    agent = _agent(log)
    start = _begin(log, "t", "r1")

    async def main() -> None:
        handle = await start_run(agent, RunJob("t", "add 1 and 2", "r1", start))
        await handle.wait()

    asyncio.run(main())
    events = [event for _, event in log.read_events("t")]
    assert [e["type"] for e in events] == [
        "run_started",
        "state_snapshot",
        "step",
        "tool_call_start",
        "tool_args",
        "tool_args",
        "tool_call",
        "step",
        "tool_result",
        "step",
        "message_start",
        "text",
        "text",
        "text",
        "text",
        "message_end",
        "step",
        "step",
        "run_finished",
    ]
    # each step the run saved, numbered as the thread's history reads it back: the
    # input's (saved before the first model call), each node's, the run's end
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert steps == [1, 2, 3, 4, 5]
    history = {info.step: info.node for info in log.history("t")}
    assert [history[step] for step in steps] == [
        "input",
        "model",
        "tools",
        "model",
        "after_agent",
    ]
    assert [m.text for m in agent.get_state("t", 1)["messages"]] == ["add 1 and 2"]
    assert agent.get_state("t", 3)["messages"][-1].text == "3"
    # the call's arguments as the model streams them (in two halves), then the call whole
    assert events[3] == {
        "type": "tool_call_start",
        "message_id": "ai-1",
        "tool_call_id": "call-1",
        "name": "add",
        "index": 0,
    }
    fragments = [e["delta"] for e in events[4:6]]
    assert all(fragments) and "".join(fragments) == '{"a": 1, "b": 2}'
    assert {e["tool_call_id"] for e in events[4:6]} == {"call-1"}
    assert events[6] | {} == {
        "type": "tool_call",
        "message_id": "ai-1",
        "tool_call_id": "call-1",
        "name": "add",
        "args": {"a": 1, "b": 2},
        "streamed": True,
    }
    assert events[8]["content"] == "3"
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "the sum is three"
    assert events[-1]["status"] == "success"
    assert events[-1]["run_id"] == "r1"
    assert events[-1]["text"] == "the sum is three"


def test_the_input_saved_before_the_first_model_call_is_a_step_of_the_log() -> None:
    """The run's input, saved as a step of its own (history node ``input``), is streamed
    as the ``values`` after it, as LangGraph's values stream starts, and marked in the
    run log, in a later run on the thread too. Without a checkpointer nothing is saved
    and the values stream starts at the model's step, as before."""
    log = MemoryCheckpointer()
    agent = _agent(log)
    values = [e for e in agent.stream("add 1 and 2", mode="values", thread_id="t")]
    assert [(e.source, e.step) for e in values][:2] == [("input", 1), ("model", 2)]
    assert [m.text for m in values[0].data["messages"]] == ["add 1 and 2"]
    assert [m.text for m in agent.get_state("t", 1)["messages"]] == ["add 1 and 2"]

    events: list[dict[str, Any]] = []
    record_run(_agent(log), "again", thread_id="t", run_id="r2", emit=events.append)
    first_step = next(e for e in events if e["type"] == "step")
    assert events.index(first_step) == 1  # right after the state snapshot
    assert {i.step: i.node for i in log.history("t")}[first_step["step"]] == "input"
    assert [m.text for m in agent.get_state("t", first_step["step"])["messages"]][-1] == "again"

    unsaved = [e for e in _agent(None).stream("add 1 and 2", mode="values")]
    assert [(e.source, e.step) for e in unsaved][:2] == [("model", None), ("tools", None)]


def test_a_replayed_run_logs_each_event_once() -> None:
    """A process died after logging part of a run; the run made again (the same events,
    as a workflow replays its recorded steps) adds only what was missing."""
    log = MemoryCheckpointer()
    start = _begin(log, "t", "r1")
    whole = MemoryCheckpointer()
    record_run(_agent(whole), "add", thread_id="t", run_id="r1", emit=lambda e: None)
    first = LogWriter(log, "t", start=start)
    seen: list[dict[str, Any]] = []
    record_run(_agent(MemoryCheckpointer()), "add", thread_id="t", run_id="r1", emit=seen.append)
    for event in seen[:7]:  # died as the answer's text began
        first.emit(event)
    first.flush()
    assert log.last_event("t") == 8

    again = LogWriter(log, "t", start=start)
    for event in seen:  # the replay: the same events from the start
        again.emit(event)
    again.flush()
    assert again.skipped == 7
    logged = [event for _, event in log.read_events("t", after=start)]
    assert logged == seen  # every event once, in order, no marker
    assert _kinds(log, "t").count("run_finished") == 1


def test_a_step_made_again_differently_is_marked_restarted() -> None:
    """The model call in flight when the process died is made again and says something
    else: the dead attempt's text is voided by a ``step_restarted`` event naming it,
    and the finished steps before it stay logged once."""
    log = MemoryCheckpointer()
    start = _begin(log, "t", "r1")
    dead = _events("an old answer")
    writer = LogWriter(log, "t", start=start)
    for event in dead[:12]:  # snapshot, input step, tool call streamed and whole, result, text
        writer.emit(event)
    writer.flush()
    assert [e["type"] for e in dead[:12]][-3:] == ["message_start", "text", "text"]

    replay = _events("a new answer")
    again = LogWriter(log, "t", start=start)
    for event in replay:
        again.emit(event)
    again.flush()
    logged = [event for _, event in log.read_events("t", after=start)]
    # snapshot, the input's step, tool_call, tool_result, their steps, message_start
    # match; the first text differs
    assert again.skipped == 10
    marker = logged[12]
    assert marker == {
        "type": "step_restarted",
        "void_after": start + 10,
        "voided": 2,
        "message_id": "ai-2",
        "open": True,
    }
    assert logged[:12] == dead[:12]
    # the message starts over (its start had matched), then the step made again
    assert logged[13] == {"type": "message_start", "message_id": "ai-2"}
    assert logged[14:] == replay[10:]
    assert "".join(e["delta"] for e in logged[14:] if e["type"] == "text") == "a new answer"
    assert sum(e["type"] == "tool_result" for e in logged) == 1


def test_a_message_that_diverges_midway_starts_over_with_its_text_so_far() -> None:
    log = MemoryCheckpointer()
    start = _begin(log, "t", "r1")
    dead, replay = _events("the old answer"), _events("the new answer")
    writer = LogWriter(log, "t", start=start)
    for event in dead[:13]:  # ... message_start, "the ", "old "
        writer.emit(event)
    writer.flush()
    again = LogWriter(log, "t", start=start)
    for event in replay:
        again.emit(event)
    again.flush()
    logged = [event for _, event in log.read_events("t", after=start)]
    assert again.skipped == 11
    assert logged[13:16] == [
        {
            "type": "step_restarted",
            "void_after": start + 11,
            "voided": 2,
            "message_id": "ai-2",
            "open": True,
        },
        {"type": "message_start", "message_id": "ai-2"},
        {"type": "text", "message_id": "ai-2", "delta": "the "},
    ]
    assert logged[16:] == replay[11:]
    after_marker = "".join(e["delta"] for e in logged[14:] if e["type"] == "text")
    assert after_marker == "the new answer"


def test_a_run_logged_before_arguments_streamed_is_not_restarted_by_a_newer_writer() -> None:
    """A run a worker recorded before plait streamed tool-call arguments (each call
    whole, nothing streamed), made again by a newer worker from its start: its log
    stands as it was, none of its finished steps voided, and the rest follows once."""
    log = MemoryCheckpointer()
    start = _begin(log, "t", "r1")
    replay = _events("an answer")
    older = [
        {k: v for k, v in event.items() if k != "streamed"}
        for event in replay
        if event["type"] not in ("tool_call_start", "tool_args")
    ]
    assert len(older) == len(replay) - 3
    writer = LogWriter(log, "t", start=start)
    for event in older[:8]:  # up to the last model call's text, begun
        writer.emit(event)
    writer.flush()
    assert [e["type"] for e in older[:8]][-2:] == ["message_start", "text"]
    again = LogWriter(log, "t", start=start)
    for event in replay:
        again.emit(event)
    again.flush()
    logged = [event for _, event in log.read_events("t", after=start)]
    assert logged == older
    assert again.skipped == 11  # the eight logged, and the call's start and arguments


def test_a_call_streaming_when_its_step_diverged_is_named_open_and_begun_again() -> None:
    """The dead attempt streamed the start and a first fragment of a call's arguments;
    the step made again streams other arguments: the marker names the call it left
    open (a client ends and drops it), the call starts again, and its arguments after
    the marker are the new attempt's, whole."""
    log = MemoryCheckpointer()
    start = _begin(log, "t", "r1")
    dead = _events("an answer")
    assert [e["type"] for e in dead[2:4]] == ["tool_call_start", "tool_args"]
    writer = LogWriter(log, "t", start=start)
    for event in dead[:4]:
        writer.emit(event)
    writer.flush()
    replay = [*dead[:3], {**dead[3], "delta": '{"a": 5, '}, {**dead[4], "delta": '"b": 6}'}]
    again = LogWriter(log, "t", start=start)
    for event in replay:
        again.emit(event)
    again.flush()
    logged = [event for _, event in log.read_events("t", after=start)]
    assert logged[:4] == dead[:4]
    assert logged[4] == {
        "type": "step_restarted",
        "void_after": start + 3,
        "voided": 1,
        "message_id": None,
        "open": False,
        "open_calls": ["call-1"],
    }
    assert logged[5] == dead[2]  # the call begun again
    assert logged[6:] == replay[3:]
    assert "".join(e["delta"] for e in logged[5:] if e["type"] == "tool_args") == (
        '{"a": 5, "b": 6}'
    )


def test_a_writer_refuses_to_interleave_with_another() -> None:
    log = MemoryCheckpointer()
    start = _begin(log, "t", "r1")
    writer = LogWriter(log, "t", start=start)
    log.append_events("t", [{"type": "custom", "value": 1}], after=start)
    with pytest.raises(ThreadBusyError):
        writer.emit({"type": "state", "values": {}})


def test_a_failed_run_ends_its_log_with_run_error() -> None:
    log = MemoryCheckpointer()
    agent = plait.create_agent(
        model=plait.ScriptedChatModel([PlaitError("the model is down")]), checkpointer=log
    )
    events: list[dict[str, Any]] = []
    assert record_run(agent, "hi", thread_id="t", run_id="r", emit=events.append) is None
    assert events[-1] == {
        "type": "run_error",
        "run_id": "r",
        "message": "the model is down",
        "code": "PlaitError",
    }


def test_a_cancelled_local_run_ends_its_log_cancelled() -> None:
    log = MemoryCheckpointer()
    gate = asyncio.Event()

    async def slow(messages: Any, tools: Any) -> str:
        raise AssertionError  # pragma: no cover

    async def main() -> None:
        async def wait_tool() -> str:
            """Wait."""
            await gate.wait()
            return "never"

        agent = plait.create_agent(
            model=plait.ScriptedChatModel(
                [AIMessage("", tool_calls=[ToolCall("wait_tool", {}, id="c")])]
            ),
            tools=[wait_tool],
            checkpointer=log,
        )
        handle = await start_run(agent, RunJob("t", "go", "r", _begin(log, "t", "r")))
        for _ in range(200):
            if "tool_call" in _kinds(log, "t"):
                break
            await asyncio.sleep(0.01)
        await handle.cancel()
        await handle.wait()

    asyncio.run(main())
    _, last = log.read_events("t")[-1]
    assert last == {"type": "run_finished", "run_id": "r", "status": "cancelled"}


class _Queued:
    def __init__(self, job: RunJob) -> None:
        self.job = job
        self.cancelled = False

    async def wait(self) -> None:
        return None

    async def cancel(self) -> None:
        self.cancelled = True


class Elsewhere(plait.Middleware):
    """Runs every recorded run elsewhere (here: keeps the job)."""

    def __init__(self) -> None:
        self.jobs: list[RunJob] = []

    def submit_run(self, job: RunJob, agent: plait.Agent) -> RunHandle | None:
        self.jobs.append(job)
        return _Queued(job)


class Declines(plait.Middleware):
    async def submit_run(self, job: RunJob) -> None:
        return None


class Wrong(plait.Middleware):
    def submit_run(self, job: RunJob) -> object:
        return "a workflow id"


def test_a_middleware_takes_over_running_the_run() -> None:
    log = MemoryCheckpointer()
    elsewhere = Elsewhere()
    agent = _agent(log, middleware=[Declines(), elsewhere])
    job = RunJob("t", [HumanMessage("add", id="m1")], "r1", _begin(log, "t", "r1"))

    async def main() -> RunHandle:
        handle = await start_run(agent, job)
        await handle.cancel()
        return handle

    handle = asyncio.run(main())
    assert isinstance(handle, _Queued) and handle.cancelled
    assert elsewhere.jobs == [job]
    assert _kinds(log, "t") == ["run_started"]  # nothing ran here


def test_a_submit_run_hook_must_return_a_handle() -> None:
    agent = _agent(MemoryCheckpointer(), middleware=[Wrong()])
    with pytest.raises(PlaitError) as caught:
        asyncio.run(start_run(agent, RunJob("t", "hi", "r", 1)))
    assert str(caught.value) == (
        "middleware 'Wrong': submit_run: expected a run handle (wait() and cancel()) or "
        "None, got str"
    )


@pytest.mark.parametrize(
    "value",
    ["hi", None, [HumanMessage("hello", id="m1")], Command(resume={"decisions": []})],
)
def test_a_job_travels_as_json(value: Any) -> None:
    job = RunJob("t", value, "r", 3)
    assert RunJob.from_json(job.to_json()) == job


def test_run_finished_logs_the_runs_whole_usage_and_its_model_calls() -> None:
    first = Usage(input_tokens=10, output_tokens=2, cache_read_tokens=6, cost=0.5)
    second = Usage(input_tokens=14, output_tokens=5, reasoning_tokens=3, cost=0.25)
    call = ToolCall("add", {"a": 1, "b": 2}, id="call-1")
    agent = plait.create_agent(
        model=plait.ScriptedChatModel(
            [
                AIMessage("", tool_calls=[call], id="ai-1", usage=first),
                AIMessage("3", id="ai-2", usage=second),
            ]
        ),
        tools=[add],
        checkpointer=MemoryCheckpointer(),
    )
    events: list[dict[str, Any]] = []
    result = record_run(agent, "add", thread_id="t", run_id="r", emit=events.append)
    assert result is not None and result.model_calls == 2
    end = events[-1]
    assert end["usage"] == {
        "input_tokens": 24,
        "output_tokens": 7,
        "cache_read_tokens": 6,
        "reasoning_tokens": 3,
        "cost": 0.75,
    }
    assert end["model_calls"] == 2
    assert logged_usage(end) == (first + second, 2)


def test_logged_usage_reads_a_log_that_has_only_the_two_token_counts() -> None:
    old = {
        "type": "run_finished",
        "run_id": "r",
        "status": "success",
        "text": "hi",
        "usage": {"input_tokens": 7, "output_tokens": 3},
    }
    assert logged_usage(old) == (Usage(input_tokens=7, output_tokens=3), 0)
    cancelled = {"type": "run_finished", "run_id": "r", "status": "cancelled"}
    assert logged_usage(cancelled) == (Usage(), 0)


def test_cancel_paused_run_answers_the_held_calls_and_ends_the_run() -> None:
    def risky(x: int) -> str:
        """Asks a human first."""
        return f"ran with {plait.interrupt({'question': 'run risky?'})}"

    held = ToolCall("risky", {"x": 1}, id="call-r")
    model = plait.ScriptedChatModel(
        [AIMessage("", tool_calls=[held], id="ai-1"), AIMessage("ok then", id="ai-2")]
    )
    agent = plait.create_agent(model=model, tools=[risky], checkpointer="memory")
    assert agent.invoke("go", thread_id="t").interrupts
    assert cancel_paused_run(agent, "unknown", "r0") is None

    events = cancel_paused_run(agent, "t", "r-cancel")

    assert events is not None
    assert [e["type"] for e in events] == ["tool_result", "step", "run_finished"]
    assert events[0]["tool_call_id"] == "call-r" and events[0]["status"] == "error"
    assert "its run was cancelled" in events[0]["content"]
    assert events[1]["step"] == agent.get_state_history("t")[0].step
    assert events[2] == {"type": "run_finished", "run_id": "r-cancel", "status": "cancelled"}
    assert agent.get_interrupts("t") == []
    assert cancel_paused_run(agent, "t", "r-again") is None  # nothing paused any more
    with pytest.raises(PlaitError, match="nothing to resume"):
        agent.invoke(Command(resume="yes"), thread_id="t")
    result = agent.invoke("never mind", thread_id="t")
    assert [(m.type, m.text) for m in result.messages] == [
        ("human", "go"),
        ("ai", ""),
        ("tool", events[0]["content"]),
        ("human", "never mind"),
        ("ai", "ok then"),
    ]
    assert model.calls == 2  # the cancel itself called no model


# -- every step a run saves has its step event ------------------------------------------------


def _recorded_steps(
    agent: plait.Agent, log: MemoryCheckpointer, input: Any, run_id: str
) -> tuple[list[tuple[int, str]], list[tuple[int, str]], list[dict[str, Any]]]:
    """Run ``input`` on thread ``t`` into a run log: the steps its ``step`` events name and
    the steps history shows the run saved (each with its history node), and the events."""
    before = log.history("t")[0].step if log.history("t") else 0
    events: list[dict[str, Any]] = []
    record_run(agent, input, thread_id="t", run_id=run_id, emit=events.append)
    nodes = {info.step: info.node for info in log.history("t")}
    logged = [(e["step"], nodes.get(e["step"], "?")) for e in events if e["type"] == "step"]
    saved = [(step, node) for step, node in sorted(nodes.items()) if step > before]
    return logged, saved, events


def test_each_step_a_run_saves_has_one_step_event_the_last_one_too() -> None:
    """The run's last step (``after_agent``, saved on its own when no hook ran there) is
    logged as the others are: the state the thread ends in is a step a client reads."""
    log = MemoryCheckpointer()
    logged, saved, events = _recorded_steps(_agent(log), log, "add 1 and 2", "r1")
    assert logged == saved
    assert [node for _, node in logged] == ["input", "model", "tools", "model", "after_agent"]
    assert [e["type"] for e in events][-2:] == ["step", "run_finished"]
    last = logged[-1][0]
    assert agent_state_text(log, last) == "the sum is three"


def agent_state_text(log: MemoryCheckpointer, step: int) -> str:
    return str(_agent(log).get_state("t", step)["messages"][-1].text)


def test_an_after_agent_hook_and_a_jump_to_end_log_each_step_once() -> None:
    class After(plait.Middleware):
        def after_agent(self, state: Any) -> dict[str, Any]:
            return {"messages": [AIMessage("signed off", id="ai-3")]}

    class Closed(plait.Middleware):
        @plait.can_jump_to("end")
        def before_model(self, state: Any) -> Command:
            return Command(update={"messages": [AIMessage("closed", id="ai-c")]}, jump_to="end")

    log = MemoryCheckpointer()
    logged, saved, _ = _recorded_steps(_agent(log, middleware=[After()]), log, "add", "r1")
    assert logged == saved
    assert logged[-1][1] == "after_agent"
    assert agent_state_text(log, logged[-1][0]) == "signed off"

    log = MemoryCheckpointer()
    logged, saved, _ = _recorded_steps(_agent(log, middleware=[Closed()]), log, "add", "r1")
    assert logged == saved
    assert [node for _, node in logged] == ["input", "before_model", "after_agent"]
    assert agent_state_text(log, logged[-1][0]) == "closed"


def test_a_paused_run_and_its_resume_log_each_step_they_save() -> None:
    def risky(x: int) -> str:
        """Asks a human first."""
        return f"ran with {plait.interrupt({'question': 'run risky?'})}"

    calls = [ToolCall("risky", {"x": 1}, id="call-r"), ToolCall("add", {"a": 1, "b": 2}, id="c2")]
    log = MemoryCheckpointer()
    agent = plait.create_agent(
        model=plait.ScriptedChatModel(
            [AIMessage("", tool_calls=calls, id="ai-1"), AIMessage("done", id="ai-2")]
        ),
        tools=[risky, add],
        checkpointer=log,
    )
    logged, saved, events = _recorded_steps(agent, log, "go", "r1")
    assert logged == saved
    # the calls' step: add's answer saved as it finished, then the pause
    assert [node for _, node in logged] == ["input", "model", "tools", "tools"]
    assert events[-1]["status"] == "interrupted"
    paused = agent.get_state("t", logged[-1][0])["messages"]
    assert [m.text for m in paused][-1] == "3"  # add's answer, the pause holds it

    logged, saved, events = _recorded_steps(agent, log, Command(resume="yes"), "r2")
    assert logged == saved
    assert [node for _, node in logged] == ["tools", "model", "after_agent"]
    assert events[-1]["status"] == "success"


def test_a_failed_run_logs_the_steps_it_saved_and_its_failure_record() -> None:
    class Limit(plait.Middleware):
        def before_model(self, state: Any) -> None:
            stop = plait.errors.StopRun("over the limit")
            stop.update = {"limited": True}
            raise stop

    log = MemoryCheckpointer()
    down = plait.create_agent(
        model=plait.ScriptedChatModel([PlaitError("the model is down")]), checkpointer=log
    )
    logged, saved, events = _recorded_steps(down, log, "hi", "r1")
    assert logged == saved
    assert [node for _, node in logged] == ["input", "failed"]
    assert events[-1]["type"] == "run_error"

    log = MemoryCheckpointer()
    stopped = _agent(log, middleware=[Limit()])
    logged, saved, events = _recorded_steps(stopped, log, "hi", "r1")
    assert logged == saved
    assert [node for _, node in logged] == ["input", "before_model", "failed"]
    assert stopped.get_state("t", logged[1][0])["limited"] is True
    assert events[-1]["type"] == "run_error"


def test_a_run_recorded_on_the_async_path_logs_each_step_it_saves() -> None:
    """Two calls run at once: each answer, kept as it finished, is a step of its own."""
    calls = [ToolCall("add", {"a": 1, "b": 2}, id="c1"), ToolCall("add", {"a": 2, "b": 2}, id="c2")]
    log = MemoryCheckpointer()
    agent = plait.create_agent(
        model=plait.ScriptedChatModel(
            [AIMessage("", tool_calls=calls, id="ai-1"), AIMessage("3 and 4", id="ai-2")]
        ),
        tools=[add],
        checkpointer=log,
    )
    events: list[dict[str, Any]] = []
    asyncio.run(arecord_run(agent, "add", thread_id="t", run_id="r1", emit=events.append))
    nodes = [(i.step, i.node) for i in reversed(log.history("t"))]
    assert [(e["step"], dict(nodes)[e["step"]]) for e in events if e["type"] == "step"] == nodes
    assert [node for _, node in nodes] == [
        "input",
        "model",
        "tools",
        "tools",
        "tools",
        "model",
        "after_agent",
    ]


def test_a_values_stream_is_not_given_the_steps_that_change_no_state() -> None:
    """``values`` follows the steps that change the state, as LangGraph's does: the run's
    last step, saved on its own, is the run log's only."""
    values = list(_agent(MemoryCheckpointer()).stream("add", mode="values", thread_id="t"))
    assert [e.source for e in values] == ["input", "model", "tools", "model"]
    with pytest.raises(plait.errors.ConfigError, match="unknown stream mode"):
        _agent(None).stream("add", mode="saved")
