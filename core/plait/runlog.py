"""The run log: a run's events as JSON, appended to its thread's ``EventLog``, and the
``submit_run`` hook through which a middleware takes over running a run.

A run asked to record itself (``record_run``/``arecord_run``, or ``start_run``) turns its
``StreamEvent``s into the events below and hands each to a sink: ``LogWriter`` appends them
to the checkpointer's ``plait.checkpoint.EventLog``, numbered per thread, where anyone in
any process can follow them (``plait serve`` streams every protocol from this log).
``start_run`` asks the agent's ``submit_run`` hooks first — the ``dbos`` middleware
queues the run for its workers, which record it into the same log — and otherwise runs it
in this process.

Each event is a JSON object with a ``type``:

- ``thread``: the thread's first event, naming the key that owns it (``plait serve``'s).
- ``run_started`` ``{run_id, metadata}`` (written by whoever starts the run; ``metadata``,
  the client's for the run, only when it gave some), then
  ``state_snapshot`` ``{values}`` (the state keys other than ``messages``).
- ``message_start`` / ``text`` ``{delta}`` / ``message_end``, each with ``message_id``:
  an AI message's text as it streams.
- ``tool_call_start`` ``{message_id, tool_call_id, name, index}`` / ``tool_args``
  ``{message_id, tool_call_id, index, delta}``: a call's arguments as the model streams
  them (``index``: the call's place in the message), as the caller reads them (pii's
  real values); from the fragment that names the call (its id and name) onward.
- ``tool_call`` ``{message_id, tool_call_id, name, args, streamed}``: a call the model
  made, its arguments whole; ``streamed`` (``true``) when its start and arguments were
  logged before.
- ``tool_call_dropped`` ``{message_id, tool_call_id}``: a call whose start was logged
  that the finished message does not hold (a middleware dropped it, or the run stopped
  mid-call): no ``tool_call`` follows.
- ``tool_result`` ``{message_id, tool_call_id, name, content, status}``.
- ``state`` ``{values}``: state keys a step wrote.
- ``custom`` ``{value}``: what a hook or tool wrote with ``runtime.stream_writer``.
- ``step`` ``{step}``: the run saved the thread's step ``step`` (a reader that wants the
  whole state after it reads ``agent.get_state(thread_id, step)``). Every step the run
  saves has one, in the order history lists them: the input's, saved before the first
  model call (history node ``input``), each node's after it (and, in a tools step of
  several calls, each call's answer kept as it finished), and the run's last — the
  one it ends with (``after_agent``, a step of its own when no ``after_agent`` hook
  ran), the one it pauses at, the state a stop left, the record of a failed run
  (``failed``) — so the state a thread ends in is read as any other step's.
- ``step_restarted`` ``{void_after, voided, message_id, open}``: the process running the
  run died in the middle of a step and another one made that step again (a durable
  run's worker died mid model call). The ``voided`` events numbered after
  ``void_after`` (up to this one) belong to the attempt that died, and so does the whole
  text of the message ``message_id`` names (or ``null``); ``open`` says the dead attempt
  left that message without its ``message_end``; ``open_calls`` (when there are any)
  names the streamed tool calls it left open, which a client ends and drops. A client
  drops that text. The events after this one are the step made again; a message they
  stream starts with its own ``message_start`` (the same id again, or a new one), and a
  call its own ``tool_call_start``. Every other event stands: a
  finished step is never logged twice.
- ``run_finished`` ``{run_id, status, text, interrupts, usage, model_calls}``:
  ``status`` is ``success``, ``interrupted`` (``interrupts`` lists each pending interrupt
  with the tool calls it reviews and the decisions each allows) or ``cancelled``;
  ``usage`` is the run's ``plait.messages.Usage`` as persisted messages hold it (its
  ``input_tokens`` and ``output_tokens`` always there, other fields when not zero) and
  ``model_calls`` the model calls it counts (``AgentResult.model_calls``). A log written
  before these had only the two token counts: ``logged_usage`` reads either.
- ``run_error`` ``{run_id, message, code}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plait._jobs import RunHandle, RunJob
from plait._stream import SAVED
from plait.checkpoint import EventLog
from plait.errors import ConfigError, PlaitError
from plait.lazy import frozen
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    ToolCall,
    ToolMessage,
    Usage,
    converter,
    message_text,
    pending_tool_calls,
)
from plait.types import StreamEvent

if TYPE_CHECKING:
    from plait.agent import Agent, AgentResult

__all__ = [
    "END_TYPES",
    "MODES",
    "LogWriter",
    "Pending",
    "Recorder",
    "ReviewedCall",
    "RunHandle",
    "RunJob",
    "abandon_run",
    "arecord_run",
    "cancel_paused_run",
    "describe_error",
    "event_log",
    "guarded_keys",
    "jsonable",
    "logged_usage",
    "pending_interrupts",
    "private_keys",
    "record_run",
    "start_run",
    "submits_runs",
    "submitted",
]

END_TYPES = frozenset({"run_finished", "run_error"})
"""The types that end a run: a stream following one run stops after either."""

MODES = ("messages", "updates", "custom", SAVED)
"""The stream modes a recorded run is streamed with: ``SAVED`` (one event for each step
the run saves, its ``step`` event) rather than ``values``, whose state the log never
holds (a reader reads it back: ``agent.get_state(thread_id, step)``)."""

Emit = Callable[[dict[str, Any]], None]
"""Where a recorded run's events go, one at a time, in order."""

_INTERNAL_KEYS = frozenset({"messages", "__interrupt__"})


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: what JSON cannot hold becomes its ``str``."""
    return json.loads(json.dumps(value, default=str))


def event_log(agent: Agent) -> EventLog:
    """The agent's checkpointer as a run log, or a ``ConfigError`` saying it keeps none."""
    checkpointer = agent.checkpointer
    inner = getattr(checkpointer, "inner", None)  # a wrapper (dbos's) keeps the real one
    for candidate in (checkpointer, inner):
        if candidate is not None and isinstance(candidate, EventLog):
            return candidate
    got = "no checkpointer" if checkpointer is None else type(checkpointer).__name__
    raise ConfigError(
        f"agent {agent.name!r}: checkpointer: expected a checkpointer that keeps a run log "
        "('memory', 'sqlite:///agent.db', 'postgresql://...'), got " + got
    )


# -- from stream events to run-log events ---------------------------------------------------


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "message_id": message.id,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "content": message_text(message.content),
        "status": message.status,
    }


class _StreamingCall:
    """A tool call whose arguments stream: its id and name (as the first fragments give
    them), the arguments held until both are known, whether its start is logged."""

    __slots__ = ("held", "id", "name", "started")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.held = ""
        self.started = False


class Recorder:
    """Turns one run's ``StreamEvent``s (``MODES``) into run-log events. Text and each
    tool call's arguments stream from the model chunks; the finished AI message gives
    each tool call whole (one the chunks did not name, whole only), tool results come
    from the step's update, each step saved is a ``step`` event, all as the caller
    reads them (``StreamEvent.shown``, and the chunks pii restores: its real values)."""

    def __init__(self, private: frozenset[str] = frozenset()) -> None:
        self._open: str | None = None  # the AI message whose text is streaming
        self._seen: set[str] = set()  # AI messages and tool calls already recorded
        self._private = private  # state keys never logged (``private_keys``)
        self._message: str | None = None  # the AI message streaming now (text or calls)
        self._calls: dict[int, _StreamingCall] = {}  # its tool calls streaming, by index

    def translate(self, event: StreamEvent) -> Iterator[dict[str, Any]]:
        if event.mode == "messages":
            if isinstance(event.data, AIMessageChunk):
                yield from self._chunk(event.data)
                if event.data.tool_call_chunks and not event.path:
                    yield from self._call_chunks(event.data)
        elif event.mode == "updates":
            for update in event.data.values():
                if isinstance(update, dict):
                    yield from self._update(update, event.shown)
        elif event.mode == "custom":
            yield {"type": "custom", "value": jsonable(event.data)}
        elif event.mode == SAVED and event.step is not None and not event.path:
            yield {"type": "step", "step": event.step}

    def _chunk(self, chunk: AIMessageChunk) -> Iterator[dict[str, Any]]:
        if not chunk.content:
            return
        message_id = chunk.id or self._open or self._message or f"msg-{len(self._seen)}"
        if self._open != message_id:
            yield from self._close()
            self._open = message_id
            yield {"type": "message_start", "message_id": message_id}
        self._message = message_id
        yield {"type": "text", "message_id": message_id, "delta": chunk.content}

    def _call_chunks(self, chunk: AIMessageChunk) -> Iterator[dict[str, Any]]:
        """A call's start once a fragment names it (its id and name: a client needs
        both to show it), then each fragment of its arguments as it comes."""
        message_id = self._message or chunk.id or f"msg-{len(self._seen)}"
        self._message = message_id
        for part in chunk.tool_call_chunks:
            call = self._calls.get(part.index)
            if call is None:
                call = self._calls[part.index] = _StreamingCall()
            call.id = call.id or part.id
            call.name = call.name or part.name
            call_id = call.id
            if call.started:
                if part.args:
                    yield {
                        "type": "tool_args",
                        "message_id": message_id,
                        "tool_call_id": call_id,
                        "index": part.index,
                        "delta": part.args,
                    }
                continue
            call.held += part.args
            if call_id is None or call.name is None or call_id in self._seen:
                continue
            call.started = True
            yield {
                "type": "tool_call_start",
                "message_id": message_id,
                "tool_call_id": call_id,
                "name": call.name,
                "index": part.index,
            }
            held, call.held = call.held, ""
            if held:
                yield {
                    "type": "tool_args",
                    "message_id": message_id,
                    "tool_call_id": call_id,
                    "index": part.index,
                    "delta": held,
                }

    def _drop_calls(self, kept: frozenset[str] = frozenset()) -> Iterator[dict[str, Any]]:
        """End the started calls of the message streaming now that ``kept`` does not
        name; forget the message."""
        for call in self._calls.values():
            if call.started and call.id not in kept:
                yield {
                    "type": "tool_call_dropped",
                    "message_id": self._message,
                    "tool_call_id": call.id,
                }
        self._calls = {}
        self._message = None

    def _close(self) -> Iterator[dict[str, Any]]:
        if self._open is not None:
            self._seen.add(self._open)
            yield {"type": "message_end", "message_id": self._open}
            self._open = None

    def _update(
        self, update: dict[str, Any], shown: Sequence[Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        # the messages as the caller reads them (``show_messages``: pii's real values)
        messages = (update.get("messages") or ()) if shown is None else shown
        for message in messages:
            if isinstance(message, AIMessage):
                yield from self._ai(message)
            elif isinstance(message, ToolMessage):
                yield from self._close()
                yield _tool_result(message)
        values = {
            k: v for k, v in update.items() if k not in _INTERNAL_KEYS and k not in self._private
        }
        if values:
            yield {"type": "state", "values": jsonable(values)}

    def _ai(self, message: AIMessage) -> Iterator[dict[str, Any]]:
        message_id = message.id
        streamed = {call.id for call in self._calls.values() if call.started}
        if self._message is not None:
            # the streamed text's and calls' id, even if the chunks had none
            message_id = self._message
        if self._open is not None:
            yield from self._close()
        elif message_id not in self._seen and message.text:
            # Not streamed (a hook answered, or a provider without streaming): whole.
            self._seen.add(message_id)
            yield {"type": "message_start", "message_id": message_id}
            yield {"type": "text", "message_id": message_id, "delta": message.text}
            yield {"type": "message_end", "message_id": message_id}
        self._seen.add(message_id)
        yield from self._drop_calls(frozenset(call.id for call in message.tool_calls))
        for call in message.tool_calls:
            if call.id in self._seen:
                continue
            self._seen.add(call.id)
            record = {
                "type": "tool_call",
                "message_id": message_id,
                "tool_call_id": call.id,
                "name": call.name,
                "args": jsonable(call.args),
            }
            if call.id in streamed:
                record["streamed"] = True
            yield record

    def finish(self) -> Iterator[dict[str, Any]]:
        """What closes the run's open text message and streamed calls, before its end
        event."""
        yield from self._close()
        yield from self._drop_calls()


# -- what a paused run waits for --------------------------------------------------------------


@frozen
class ReviewedCall:
    """A tool call an approval interrupt holds back, and the decisions it allows."""

    id: str
    name: str
    args: Mapping[str, Any]
    allowed_decisions: tuple[str, ...]


@frozen
class Pending:
    """One interrupt a paused thread waits for; ``calls`` is empty for a question that
    reviews no tool call (any answer is passed to the run as it is)."""

    id: str
    value: Any
    calls: tuple[ReviewedCall, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "value": self.value,
            "tool_calls": [
                {
                    "id": call.id,
                    "name": call.name,
                    "args": dict(call.args),
                    "allowed_decisions": list(call.allowed_decisions),
                }
                for call in self.calls
            ],
        }


def pending_interrupts(agent: Agent, thread_id: str) -> list[Pending]:
    """The interrupts ``thread_id`` is paused at, each with the tool calls it reviews
    (``[]`` if the thread is not paused). Blocking: call it from a worker thread."""
    stored = agent.get_interrupts(thread_id, shown=False)
    if not stored:
        return []
    # Matched as stored, against the thread's own messages (both hold pii's placeholders);
    # shown to the client as a reviewer reads them (real values).
    shown = agent.get_interrupts(thread_id)
    waiting = pending_tool_calls(agent.get_state(thread_id)["messages"])
    return [
        Pending(seen.id, seen.value, _reviewed(raw.value, waiting, seen.value))
        for raw, seen in zip(stored, shown, strict=True)
    ]


def _reviewed(value: Any, waiting: Sequence[ToolCall], shown: Any) -> tuple[ReviewedCall, ...]:
    """The calls an approval request (``{"action_requests": [...], "review_configs":
    [...]}``, human_in_the_loop's) reviews, matched in order to the calls waiting to run;
    each call's arguments as ``shown`` (the same request as a reviewer reads it) has them."""
    if not isinstance(value, Mapping):
        return ()
    requests, configs = value.get("action_requests"), value.get("review_configs")
    if not isinstance(requests, list) or not isinstance(configs, list):
        return ()
    shown_requests = shown.get("action_requests") if isinstance(shown, Mapping) else None
    calls: list[ReviewedCall] = []
    remaining = list(waiting)
    for index, (request, config) in enumerate(zip(requests, configs, strict=False)):
        if not isinstance(request, Mapping) or not isinstance(config, Mapping):
            return ()
        match = next(
            (
                c
                for c in remaining
                if c.name == request.get("name") and c.args == request.get("args")
            ),
            None,
        )
        if match is None:
            return ()
        remaining.remove(match)
        allowed = tuple(str(d) for d in config.get("allowed_decisions") or ())
        args = match.args
        if isinstance(shown_requests, list) and index < len(shown_requests):
            seen = shown_requests[index]
            if isinstance(seen, Mapping) and isinstance(seen.get("args"), Mapping):
                args = seen["args"]
        calls.append(ReviewedCall(match.id, match.name, args, allowed))
    return tuple(calls)


# -- recording a run ----------------------------------------------------------------------------


def private_keys(agent: Agent) -> frozenset[str]:
    """The state keys a middleware declared ``private`` (``StateField(private=True)``:
    pii's pseudonym table, a secret): checkpointed, but never in a run log, whose events
    a server streams to its clients, nor in a state a server shows them."""
    return frozenset(key for key, field in agent.compiled.fields.items() if field.private)


def guarded_keys(agent: Agent) -> frozenset[str]:
    """The state keys a server's clients cannot write: those declared ``private`` or
    ``internal`` (a limit's counts, pii's table, a review's edits)."""
    return frozenset(
        key for key, field in agent.compiled.fields.items() if field.private or field.internal
    )


def _snapshot(agent: Agent, thread_id: str) -> dict[str, Any]:
    state = agent.get_state(thread_id)
    private = private_keys(agent)
    values = {k: v for k, v in state.items() if k != "messages" and k not in private}
    return {"type": "state_snapshot", "values": jsonable(values)}


def _finished(agent: Agent, thread_id: str, run_id: str, result: AgentResult) -> dict[str, Any]:
    # The two counts stay even at zero: readers of older logs expect them.
    usage = {"input_tokens": 0, "output_tokens": 0} | converter.unstructure(result.usage, Usage)
    end: dict[str, Any] = {
        "type": "run_finished",
        "run_id": run_id,
        "usage": usage,
        "model_calls": result.model_calls,
    }
    if result.interrupts:
        pending = pending_interrupts(agent, thread_id)
        end |= {"status": "interrupted", "interrupts": [p.to_json() for p in pending]}
    else:
        end |= {"status": "success", "text": result.text}
    return dict(jsonable(end))


def logged_usage(end: Mapping[str, Any]) -> tuple[Usage, int]:
    """``(usage, model calls)`` a ``run_finished`` event logged: nothing for another
    event or a cancelled run; a log written before the whole ``Usage`` and the call count
    were logged gives its two token counts and no call."""
    usage, calls = end.get("usage"), end.get("model_calls")
    spent = converter.structure(usage, Usage) if isinstance(usage, Mapping) else Usage()
    return spent, calls if isinstance(calls, int) else 0


def _failed(run_id: str, exc: BaseException, describe: Describe | None) -> dict[str, Any]:
    message, code = (describe or describe_error)(exc)
    return {"type": "run_error", "run_id": run_id, "message": message, "code": code}


Describe = Callable[[BaseException], "tuple[str, str]"]
"""``(message, code)`` of a run's failure as its ``run_error`` event shows it."""


def _secrets() -> list[str]:
    """The values of this process's secret-looking environment variables (API keys,
    tokens, passwords), never to be shown in a run log."""
    marks = ("KEY", "TOKEN", "SECRET", "PASSWORD")
    return [v for k, v in os.environ.items() if any(m in k.upper() for m in marks) and len(v) >= 8]


def describe_error(exc: BaseException) -> tuple[str, str]:
    """``(message, code)`` of a failed run, fit for whoever reads the run log: a plait
    error's own words without any secret of the environment or anything shaped like a
    provider's key; any other exception only by its type's name (its text may hold
    internals), never a traceback."""
    if isinstance(exc, PlaitError):
        from plait.models import openai as _openai  # noqa: F401  (declares OpenAI's key shapes)
        from plait.models.http import redact

        text = redact(" ".join(str(exc).split()), _secrets())
        return text or type(exc).__name__, type(exc).__name__
    return f"the run failed with an internal error ({type(exc).__name__})", "internal_error"


def _cancelled(run_id: str) -> dict[str, Any]:
    return {"type": "run_finished", "run_id": run_id, "status": "cancelled"}


def record_run(
    agent: Agent,
    input: Any,
    *,
    thread_id: str,
    run_id: str,
    emit: Emit,
    cancelled: Callable[[BaseException], bool] | None = None,
    describe: Describe | None = None,
) -> AgentResult | None:
    """Run ``agent`` on ``thread_id`` (sync path) and hand its run-log events to ``emit``:
    ``state_snapshot``, what the run does, and its end (``run_finished`` or
    ``run_error``), all tagged ``run_id`` — the ``run_started`` event is the caller's, as
    the one who knows where the run begins. A failure ``cancelled(exc)`` says is the
    run's cancellation ends the log with a ``cancelled`` ``run_finished`` and is raised
    again; any other ``Exception`` ends it with ``run_error`` (``describe`` words it) and
    returns ``None``; any other ``BaseException`` (a process stopping) writes nothing more
    and propagates."""
    recorder = Recorder(private_keys(agent))
    stream = None
    try:
        emit(_snapshot(agent, thread_id))
        stream = agent._recorded_stream(input, thread_id, frozenset(MODES))
        for event in stream:
            for record in recorder.translate(event):
                emit(record)
        for record in recorder.finish():
            emit(record)
        assert stream.result is not None
        emit(_finished(agent, thread_id, run_id, stream.result))
        return stream.result
    except BaseException as exc:
        if stream is not None:  # left early (``emit`` failed): the run starts no more steps
            stream.close()
        if cancelled is not None and cancelled(exc):
            for record in recorder.finish():
                emit(record)
            emit(_cancelled(run_id))
            raise
        if not isinstance(exc, Exception):
            raise
        emit(_failed(run_id, exc, describe))
        return None


async def arecord_run(
    agent: Agent,
    input: Any,
    *,
    thread_id: str,
    run_id: str,
    emit: Emit,
    describe: Describe | None = None,
) -> AgentResult | None:
    """The async form of ``record_run`` (``agent.astream``); a cancelled task ends the
    log with a ``cancelled`` ``run_finished`` and stays cancelled."""
    recorder = Recorder(private_keys(agent))
    stream = None
    try:
        emit(await asyncio.to_thread(_snapshot, agent, thread_id))
        stream = agent._recorded_astream(input, thread_id, frozenset(MODES))
        async for event in stream:
            for record in recorder.translate(event):
                emit(record)
        for record in recorder.finish():
            emit(record)
        result = stream.result
        assert result is not None
        emit(await asyncio.to_thread(_finished, agent, thread_id, run_id, result))
        return result
    except asyncio.CancelledError:
        if stream is not None:
            await stream.aclose()
        for record in recorder.finish():
            emit(record)
        emit(_cancelled(run_id))
        raise
    except Exception as exc:
        emit(_failed(run_id, exc, describe))
        return None


def _open_calls(events: Sequence[Any]) -> dict[str, list[dict[str, Any]]]:
    """The streamed tool calls ``events`` leave open (started, neither whole nor
    dropped), each with its start and argument events."""
    calls: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        kind = event.get("type") if isinstance(event, dict) else None
        call_id = str(event.get("tool_call_id")) if kind else ""
        if kind == "tool_call_start":
            calls[call_id] = [event]
        elif kind == "tool_args" and call_id in calls:
            calls[call_id].append(event)
        elif kind in ("tool_call", "tool_call_dropped"):
            calls.pop(call_id, None)
    return calls


def _open_message(events: Sequence[Any]) -> str | None:
    """The message ``events`` leave open (started, not ended), if any."""
    open_message = None
    for event in events:
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start":
            open_message = event.get("message_id")
        elif kind == "message_end":
            open_message = None
    return open_message


def abandon_run(agent: Agent, thread_id: str) -> bool:
    """Mark ``thread_id``'s stored run, of another process, failed once that process is
    known to be dead (its lease ran out: ``plait.checkpoint.RunLeases``), so the thread
    takes new input at once instead of after ``plait.checkpoint.RUN_LEASE``; ``False``
    if no such run was running. Blocking: call it from a worker thread."""
    from plait._start import abandon_run as abandon

    return abandon(agent.compiled, thread_id)


def cancel_paused_run(agent: Agent, thread_id: str, run_id: str) -> list[dict[str, Any]] | None:
    """End ``thread_id``'s run paused at an interrupt without answering it — what a
    client that abandons the pause asks for (A2A's ``tasks/cancel`` of an
    ``input-required`` task): each tool call the interrupt holds back gets an error
    result saying its run was cancelled, saved as one step, and the thread takes new
    input as after a finished run. Returns the run-log events of that, tagged ``run_id``
    (a ``tool_result`` per call, the ``step``, a ``cancelled`` ``run_finished``), for the
    caller to append after its ``run_started``; ``None`` if the thread is not paused.
    ``ThreadBusyError`` while a run holds the thread. Blocking: call it from a worker
    thread."""
    from plait._start import cancel_paused

    if agent.checkpointer is None:
        raise ConfigError("this agent has no checkpointer, so it keeps no threads")
    with agent._holding(thread_id) as state:
        cancelled = cancel_paused(state)
        if cancelled is None:
            return None
        step = agent._save_step(thread_id, state)
    events = [_tool_result(message) for message in cancelled]
    events.append({"type": "step", "step": step})
    events.append(_cancelled(run_id))
    return events


def _whole_call(logged: Any) -> bool:
    """Whether ``logged`` is a tool call a recorder that streamed no arguments wrote (a
    run recorded before plait streamed them, made again by a newer worker)."""
    return logged.get("type") == "tool_call" and not logged.get("streamed")


def _streamed_before(logged: Any, event: dict[str, Any]) -> bool:
    """Whether ``event`` streams the arguments of the call ``logged`` holds whole: such a
    run's log stands as it was written (its finished steps are not voided for it)."""
    return (
        isinstance(logged, dict)
        and _whole_call(logged)
        and event.get("type") in ("tool_call_start", "tool_args")
        and event.get("tool_call_id") == logged.get("tool_call_id")
    )


class LogWriter:
    """Appends one run's events to ``thread_id``'s run log, after its ``run_started``
    event numbered ``start``.

    A run made again from its start after its process died (a durable workflow replaying
    its recorded steps) hands the writer the same events again: those already in the log
    are skipped, one by one, while they match. At the first that does not — the step the
    dead process was in the middle of, made again — the writer appends a
    ``step_restarted`` event voiding the rest of the dead attempt's events, then goes on.
    The ``state_snapshot`` a run starts with is taken once.

    Events are appended in batches: text deltas wait up to ``linger`` seconds for more
    (``flush`` at the end writes what is left); every other event is written at once.
    Appends are compare-and-set, so a writer that finds another writing the thread's log
    fails with ``ThreadBusyError`` rather than interleave.
    """

    def __init__(self, log: EventLog, thread_id: str, *, start: int, linger: float = 0.05) -> None:
        self.log = log
        self.thread_id = thread_id
        self.start = start
        self.linger = linger
        self._logged = [event for _, event in log.read_events(thread_id, after=start)]
        self._index = 0  # this run's events handed over so far
        self._matching = bool(self._logged)
        self.last = start + len(self._logged)
        """The number of the last event written."""
        self._pending: list[dict[str, Any]] = []
        self._since = time.monotonic()
        self.skipped = 0
        """Events handed over again that the log already held."""

    def emit(self, event: dict[str, Any]) -> None:
        if self._matching:
            if self._index < len(self._logged) and _streamed_before(
                self._logged[self._index], event
            ):
                self.skipped += 1
                return
            if self._index < len(self._logged) and self._same(self._logged[self._index], event):
                self._index += 1
                self.skipped += 1
                return
            self._matching = False
            if self._index < len(self._logged):
                self._pending.extend(self._restart())
        self._index += 1
        self._pending.append(event)
        if event.get("type") != "text" or time.monotonic() - self._since >= self.linger:
            self.flush()

    def _same(self, logged: Any, event: dict[str, Any]) -> bool:
        if self._index == 0 and event.get("type") == "state_snapshot":
            return isinstance(logged, dict) and logged.get("type") == "state_snapshot"
        if isinstance(logged, dict) and _whole_call(logged) and event.get("streamed"):
            return bool(logged == {k: v for k, v in event.items() if k != "streamed"})
        return bool(logged == event)

    def _restart(self) -> list[dict[str, Any]]:
        """The ``step_restarted`` event for the dead attempt's events from ``_index`` on,
        and — when the step made again diverged inside a message or a streamed call whose
        start matched — that message begun again with its text so far and each such call
        with its arguments so far, so every message and call after the marker starts
        with its start event."""
        matched, void = self._logged[: self._index], self._logged[self._index :]
        at_divergence, left_open = _open_message(matched), _open_message(self._logged)
        marker: dict[str, Any] = {
            "type": "step_restarted",
            "void_after": self.start + self._index,
            "voided": len(void),
            "message_id": left_open or at_divergence,
            "open": left_open is not None,
        }
        left_calls = _open_calls(self._logged)
        if left_calls:
            marker["open_calls"] = list(left_calls)
        restart = [marker]
        if at_divergence is not None:
            text = "".join(
                e.get("delta", "")
                for e in matched
                if e.get("type") == "text" and e.get("message_id") == at_divergence
            )
            restart.append({"type": "message_start", "message_id": at_divergence})
            if text:
                restart.append({"type": "text", "message_id": at_divergence, "delta": text})
        for start, *fragments in _open_calls(matched).values():
            # a call streaming when the step diverged begins again with its arguments so far
            restart.append(start)
            if fragments:
                restart.append({**fragments[0], "delta": "".join(f["delta"] for f in fragments)})
        return restart

    def flush(self) -> None:
        """Write the events handed over and not written yet."""
        if self._pending:
            batch, self._pending = self._pending, []
            self.last = self.log.append_events(self.thread_id, batch, after=self.last)
        self._since = time.monotonic()


# -- who runs a run -----------------------------------------------------------------------------


class LocalRun:
    """A run in this process, as an asyncio task (the default ``start_run``)."""

    def __init__(self, agent: Agent, job: RunJob, emit: Emit | None = None) -> None:
        self.job = job

        async def run() -> None:
            writer = None
            sink = emit
            if sink is None:
                log = event_log(agent)
                writer = await asyncio.to_thread(LogWriter, log, job.thread_id, start=job.start)
                sink = writer.emit
            try:
                await arecord_run(
                    agent, job.input, thread_id=job.thread_id, run_id=job.run_id, emit=sink
                )
            finally:
                if writer is not None:
                    await asyncio.to_thread(writer.flush)

        self.task = asyncio.ensure_future(run())

    async def wait(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self.task)

    async def cancel(self) -> None:
        self.task.cancel()


def submits_runs(agent: Agent) -> bool:
    """Whether a middleware of ``agent`` implements ``submit_run`` (its runs may be run
    elsewhere: a caller writes their ``run_started`` before offering them)."""
    return bool(agent.compiled.registry.impls("submit_run"))


async def submitted(agent: Agent, job: RunJob) -> RunHandle | None:
    """The handle of the first middleware (in list order) whose ``submit_run`` takes
    ``job``, or ``None`` when none does (the run is the caller's to run here)."""
    for impl in agent.compiled.registry.impls("submit_run"):
        if impl.is_async:
            handle = await impl.call(job, agent)
        else:
            handle = await asyncio.to_thread(impl.call, job, agent)
        if handle is not None:
            if not isinstance(handle, RunHandle):
                raise PlaitError(
                    f"middleware {impl.middleware!r}: submit_run: expected a run handle "
                    f"(wait() and cancel()) or None, got {type(handle).__name__}"
                )
            return handle
    return None


async def start_run(agent: Agent, job: RunJob, *, emit: Emit | None = None) -> RunHandle:
    """Start ``job``: through the first middleware whose ``submit_run`` takes it, else in
    this process as an asyncio task whose events go to ``emit`` (default: a ``LogWriter``
    on the agent's checkpointer). The caller has written the ``run_started`` event
    numbered ``job.start``."""
    handle = await submitted(agent, job)
    return handle if handle is not None else LocalRun(agent, job, emit)
