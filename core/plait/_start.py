"""How a call to ``invoke``/``stream`` becomes a ``Run``, and how a run ends as an
``AgentResult``.

A run either continues the thread's unfinished one (a resume with answers to its
interrupts, or ``None`` input after a crash) or starts anew: the input is applied to the
thread, run-scoped state is reset, and tool calls left without answers are cancelled.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plait import _ids
from plait._compiled import CompiledAgent
from plait._convert import expected
from plait._loop import Run, RunInfo, shown_interrupts
from plait._state import RUN_KEY, ThreadState
from plait._stream import EventSink, in_tool_call, nested_sink, saved
from plait.errors import PlaitError, ThreadBusyError
from plait.messages import HumanMessage, Message, ToolMessage, is_role_pair
from plait.types import AgentResult, Command, Runtime
from plait.usage import RunUsage

if TYPE_CHECKING:
    from plait._interrupt import Interrupt


def start_run(
    agent: CompiledAgent,
    thread: ThreadState,
    thread_id: str | None,
    input: Any,
    *,
    context: Any,
    recursion_limit: int,
    sink: EventSink | None,
) -> Run:
    """The run ``input`` asks for on ``thread`` (already loaded and held by the caller)."""
    info, resumed = _run_info(thread, thread_id, input)
    # A run started inside a tool call of another run (a sub-agent) nests in it: its
    # usage counts in the outer run's ledger too, its events reach the outer stream.
    call = in_tool_call.get()
    usage = RunUsage.start(
        base=info.usage, base_calls=info.calls, path=call.path if call is not None else ()
    )
    sink = nested_sink(sink)
    runtime = Runtime(
        thread_id=thread_id,
        run_id=info.run_id,
        context=context,
        store=agent.store,
        model=agent.model,
        tools=agent.tools,
        stream_writer=sink.writer() if sink is not None else _discard,
        agent_name=agent.name,
    )
    return Run(
        agent,
        thread,
        info,
        runtime,
        recursion_limit=recursion_limit,
        sink=sink,
        resumed=resumed,
        input=input,
        usage=usage,
    )


def run_result(agent: CompiledAgent, run: Run) -> AgentResult:
    info = run.info
    return AgentResult(
        messages=list(run.thread.messages),
        state=run.thread.public(),
        interrupts=(
            shown_interrupts(agent, info.interrupts, run.thread.view)
            if info.status == "interrupted"
            else []
        ),
        structured_response=agent.structured.load(info.structured_response),
        usage=run.usage.total,
        thread_id=run.runtime.thread_id,
        run_id=info.run_id,
        model_calls=run.usage.calls,
    )


def record_failure(agent: CompiledAgent, run: Run) -> None:
    """Mark the thread's stored run as failed after it raised or was interrupted (Ctrl-C,
    a cancelled task), so that new input from another process need not wait out the
    run's lease. Only the run record changes: what the failed step did in memory is not
    saved, and ``invoke(None, thread_id=...)`` may still continue the run. Best effort:
    if the write fails (another run wrote first, the database is down) the lease
    protects the thread."""
    thread_id = run.runtime.thread_id
    if agent.checkpointer is None or thread_id is None:
        return
    try:
        state = ThreadState(agent.fields, agent.checkpointer.load(thread_id))
        stored = state.values.get(RUN_KEY)
        if not stored:
            return
        info = RunInfo.load(stored)
        if info.status != "running" or info.owner != run.owner:
            return
        info.status = "failed"
        state.set(RUN_KEY, info.dump())
        state.writer = (info.run_id, "failed")
        delta = state.take_delta()
        agent.checkpointer.save(thread_id, delta)
    except Exception:  # the run's own error is what the caller must see
        return
    saved(run.sink, "failed", delta.step)  # the run's last step, for its run log


def abandon_run(agent: CompiledAgent, thread_id: str) -> bool:
    """Mark the thread's stored run failed when the process running it is known to be
    dead (its heartbeat lease, ``checkpoint.RunLeases``, ran out), so new input need not
    wait out ``RUN_LEASE``. As ``record_failure``, only the run record changes and
    ``invoke(None, thread_id=...)`` may still continue the run. ``False`` if there was
    no running run of another process to mark; ``ThreadBusyError`` if the thread was
    saved meanwhile (the run was alive after all)."""
    if agent.checkpointer is None:
        return False
    state = ThreadState(agent.fields, agent.checkpointer.load(thread_id))
    stored = state.values.get(RUN_KEY)
    if not stored:
        return False
    info = RunInfo.load(stored)
    if info.status != "running" or info.of_this_process():
        return False
    info.status = "failed"
    state.set(RUN_KEY, info.dump())
    state.writer = (info.run_id, "failed")
    agent.checkpointer.save(thread_id, state.take_delta())
    return True


def _discard(_data: Any) -> None:
    """``runtime.stream_writer`` when nobody streams."""


def _run_info(thread: ThreadState, thread_id: str | None, input: Any) -> tuple[RunInfo, bool]:
    """Continue the thread's unfinished run (resume, or ``None`` input) or start one;
    says which (``True`` for continuing)."""
    previous = thread.values.get(RUN_KEY)
    info = RunInfo.load(previous) if previous else None
    if isinstance(input, Command) and input.resume is not None:
        if info is None or info.status != "interrupted":
            raise PlaitError(
                f"thread {thread_id!r} has no run paused at an interrupt, so there is "
                "nothing to resume"
            )
        info.resume.update(_resume_values(input.resume, info.interrupts))
        info.status, info.interrupts = "running", []
        if input.update:
            thread.update(input.update, "input")
    elif input is None and info is not None and info.status != "done":
        info.status = "running"
    else:
        if input is None and not thread.messages:
            raise PlaitError(_nothing_to_run(thread_id))
        if input is None and info is not None and thread.messages[-1].type == "ai":
            # The last run ended on the model's answer: a new run on None would only ask
            # the model again for an answer it gave (a paid call, a second answer). Input
            # added since (``update_state``) is still run, as LangGraph does.
            raise PlaitError(_finished(thread_id))
        if info is not None and info.live_elsewhere(_run_lease()):
            raise _busy(thread_id, info, "invoke(None, thread_id=...)")
        if info is not None and info.status != "done":
            _cancel_unanswered(thread, info, input)
        info = RunInfo(run_id=_ids.new_id())
        thread.reset_run_fields()
        _apply_input(thread, input)
        return info, False
    return info, True


def _nothing_to_run(thread_id: str | None) -> str:
    if thread_id is None:
        return "input is None and there is no thread to continue: pass a prompt or messages"
    return (
        f"thread {thread_id!r} does not exist (nothing was saved under that id), so "
        "input None has no run to continue: pass a prompt or messages to start one"
    )


def _finished(thread_id: str | None) -> str:
    return (
        f"thread {thread_id!r} has no unfinished run (its last run ended with the model's "
        "answer), so input None has nothing to continue: pass a prompt or messages to "
        "start a new run"
    )


def _busy(thread_id: str | None, info: RunInfo, continue_with: str) -> ThreadBusyError:
    """The refusal of new input for a thread another run holds."""
    if info.of_this_process():
        return ThreadBusyError(
            f"thread {thread_id!r} has a run in progress in this process (run "
            f"{info.run_id}, by another Agent object); send new input when it ends",
            live_run=info.run_id,
        )
    reason = (
        f"thread {thread_id!r} has a run in progress in another process (run {info.run_id}, "
        f"last step saved {time.time() - info.saved_at:.1f} s ago); send new input when "
        "it ends"
    )
    return ThreadBusyError(
        f"{reason}. {dead_process_hint(continue_with)}", live_run=info.run_id, reason=reason
    )


def _run_lease() -> float:
    """``plait.checkpoint.RUN_LEASE``, imported when a saved run asks: an agent without a
    checkpointer never does, and does without importing ``plait.checkpoint``."""
    from plait.checkpoint import RUN_LEASE

    return RUN_LEASE


def dead_process_hint(continue_with: str) -> str:
    """What to do when the process running a thread's run died: ``continue_with`` names
    how the caller continues a run (``invoke(None, ...)``, a CLI command)."""
    return (
        f"If that process died, continue its run with {continue_with}, or wait "
        f"{_run_lease():g} s (plait.checkpoint.RUN_LEASE)"
    )


def _apply_input(thread: ThreadState, input: Any) -> None:
    if input is None:
        return
    if isinstance(input, Command):
        if input.update:
            thread.update(input.update, "input")
        return
    if isinstance(input, str):
        input = [HumanMessage(input)]
    elif isinstance(input, Message):
        input = [input]
    elif isinstance(input, Mapping):
        thread.update(input, "input")
        return
    elif is_role_pair(input):
        input = [input]
    elif isinstance(input, Sequence):
        input = [HumanMessage(m) if isinstance(m, str) else m for m in input]
    else:
        wanted = "a string, a message, a list of messages, a dict update, a Command or None"
        raise TypeError(f"input: {expected(wanted, input)}")
    thread.add_messages(input, "input")


def _cancel_unanswered(thread: ThreadState, info: RunInfo, input: Any) -> None:
    """New input on a thread whose run did not finish (paused at an interrupt, or stopped
    between steps) starts a new run: the old run's tool calls that have no answer get an
    error ToolMessage first, so the model is never sent calls without results (which
    providers reject)."""
    given = input if isinstance(input, Sequence) and not isinstance(input, str) else [input]
    answered = {m.tool_call_id for m in given if isinstance(m, ToolMessage)}
    why = "waiting for a human's answer" if info.status == "interrupted" else "not finished"
    _cancel_calls(thread, answered, f"{why} when new input arrived")


def _cancel_calls(thread: ThreadState, answered: set[str], when: str) -> list[ToolMessage]:
    """An error ToolMessage added for each of the last AI message's calls without an
    answer (but those in ``answered``), saying the call was ``when``, so it was not run."""
    cancelled = [
        ToolMessage.error(
            call,
            f"Not run: this call was {when}, so it was cancelled.",
            metadata={"plait": {"cancelled": True}},
        )
        for call in thread.last_calls()[1]
        if call.id not in answered
    ]
    thread.add_messages(list(cancelled), "input")
    return cancelled


def cancel_paused(thread: ThreadState) -> list[ToolMessage] | None:
    """End the thread's run paused at an interrupt without answering it: each tool call
    it holds back gets an error ToolMessage, and the run is over (``done``), so the
    thread takes new input as after a finished run, and ``None`` input runs the model on
    those results. ``None`` if the thread's run is not paused."""
    stored = thread.values.get(RUN_KEY)
    info = RunInfo.load(stored) if stored else None
    if info is None or info.status != "interrupted":
        return None
    cancelled = _cancel_calls(
        thread, set(), "waiting for a human's answer when its run was cancelled"
    )
    info.status, info.interrupts = "done", []
    thread.set(RUN_KEY, info.dump())
    thread.writer = (info.run_id, "cancelled")
    return cancelled


def _resume_values(resume: Any, pending: list[Interrupt]) -> dict[str, Any]:
    ids = [i.id for i in pending]
    if isinstance(resume, Mapping) and resume and set(resume) <= set(ids):
        return dict(resume)
    if len(ids) == 1:
        return {ids[0]: resume}
    raise PlaitError(
        f"{len(ids)} interrupts are pending ({', '.join(ids)}); resume with "
        "Command(resume={interrupt_id: value, ...})"
    )
