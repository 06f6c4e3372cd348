"""AG-UI: ``POST /ag-ui`` takes a ``RunAgentInput`` and streams the run as AG-UI events;
``GET /ag-ui/threads/{thread_id:id}/stream`` picks a stream up again after a disconnect.

The thread lives on the server: of the messages a client sends (AG-UI clients send the
whole conversation), only user messages the thread does not hold yet are new input.
A paused run finishes with an ``interrupt`` outcome whose interrupt carries the tool
call under review; the next run answers it with ``resume`` entries whose payload is
plait's decisions payload (``{"decisions": [...]}``), checked against the stored
interrupt before anything runs. A ``runId`` the thread has used already is refused
(``409``), as AG-UI wants a new one for each run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.types import UserMessage
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.lazy import lazy_exports
from plait.messages import AnyMessage, HumanMessage
from plait_serve._app import Server
from plait_serve._http import ApiError, check_id, read_json, since, sse, sse_event
from plait_serve._interrupts import pending_interrupts

__all__ = ["project"]

__getattr__ = lazy_exports(
    __name__,
    {},
    deprecated={
        "routes": (f"{__name__}:_routes", "it is internal: plait_serve.app(agent) mounts it")
    },
)

try:  # the outcome classes are not re-exported by every version of ag_ui.core
    from ag_ui.core import RunFinishedCancelledOutcome, RunFinishedInterruptOutcome
except ImportError:  # pragma: no cover
    from ag_ui._generated.models import (
        RunFinishedCancelledOutcome,
        RunFinishedInterruptOutcome,
    )


def _pointer(key: str) -> str:
    """``key`` as a JSON Pointer path (RFC 6901)."""
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _interrupt(pending: dict[str, Any]) -> Interrupt:
    calls = pending.get("tool_calls") or []
    value = pending.get("value")
    message = None
    if calls and isinstance(value, dict):
        described = [r.get("description") for r in value.get("action_requests") or []]
        message = next((d for d in described if isinstance(d, str) and d), None)
    return Interrupt(
        id=pending["id"],
        reason="tool_approval" if calls else "input_required",
        message=message,
        tool_call_id=calls[0]["id"] if calls else None,
        metadata={"plait": pending},
    )


def project(thread_id: str, event: dict[str, Any]) -> Iterator[BaseEvent]:
    """The AG-UI events one run-log event becomes (none for the ones AG-UI has no use for)."""
    kind = event.get("type")
    if kind == "run_started":
        yield RunStartedEvent(thread_id=thread_id, run_id=event["run_id"])
    elif kind == "state_snapshot":
        yield StateSnapshotEvent(snapshot=event["values"])
    elif kind == "message_start":
        yield TextMessageStartEvent(message_id=event["message_id"], role="assistant")
    elif kind == "text":
        yield TextMessageContentEvent(message_id=event["message_id"], delta=event["delta"])
    elif kind == "message_end":
        yield TextMessageEndEvent(message_id=event["message_id"])
    elif kind == "tool_call_start":
        yield ToolCallStartEvent(
            tool_call_id=event["tool_call_id"],
            tool_call_name=event["name"],
            parent_message_id=event["message_id"],
        )
    elif kind == "tool_args":
        yield ToolCallArgsEvent(tool_call_id=event["tool_call_id"], delta=event["delta"])
    elif kind == "tool_call_dropped":
        yield ToolCallEndEvent(tool_call_id=event["tool_call_id"])
    elif kind == "tool_call":
        call_id = event["tool_call_id"]
        if not event.get("streamed"):  # its start and arguments came as it streamed
            yield ToolCallStartEvent(
                tool_call_id=call_id,
                tool_call_name=event["name"],
                parent_message_id=event["message_id"],
            )
            yield ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(event["args"]))
        yield ToolCallEndEvent(tool_call_id=call_id)
    elif kind == "tool_result":
        yield ToolCallResultEvent(
            message_id=event["message_id"],
            tool_call_id=event["tool_call_id"],
            content=event["content"],
            role="tool",
        )
    elif kind == "state":
        patch = [
            {"op": "add", "path": _pointer(key), "value": value}
            for key, value in event["values"].items()
        ]
        yield StateDeltaEvent.model_validate({"delta": patch})
    elif kind == "custom":
        yield CustomEvent(name="plait", value=event["value"])
    elif kind == "step_restarted":
        # The worker running the run died mid-step; another made the step again. The
        # text message and streamed calls the dead attempt left open are closed here
        # (the calls' ends are void too); the custom event says
        # which events (and message) are void, for a UI that drops them.
        if event.get("open") and event.get("message_id"):
            yield TextMessageEndEvent(message_id=event["message_id"])
        for call_id in event.get("open_calls") or ():
            yield ToolCallEndEvent(tool_call_id=call_id)
        yield CustomEvent(name="plait.step_restarted", value=event)
    elif kind == "run_finished":
        status = event.get("status")
        outcome: Any = None
        if status == "interrupted":
            interrupts = [_interrupt(p) for p in event.get("interrupts") or []]
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        elif status == "cancelled":
            outcome = RunFinishedCancelledOutcome()
        yield RunFinishedEvent(
            thread_id=thread_id,
            run_id=event["run_id"],
            result=event.get("text") if status == "success" else None,
            outcome=outcome,
        )
    elif kind == "run_error":
        yield RunErrorEvent(message=event["message"], code=event.get("code"))


def encode(thread_id: str, seq: int, event: dict[str, Any]) -> str:
    """The SSE text of one run-log event: its AG-UI events, the last one carrying the
    log number as its ``id`` (a client that reconnects from it has all of them)."""
    projected = list(project(thread_id, event))
    return "".join(
        sse_event(
            e.model_dump_json(by_alias=True, exclude_none=True),
            seq=seq if index == len(projected) - 1 else None,
        )
        for index, e in enumerate(projected)
    )


async def _stream(server: Server, thread: str, after: int) -> AsyncIterator[str]:
    """The stored thread's events after ``after``, named by its client's id."""
    shown = server.shown(thread)
    async for batch in server.runs.batches(thread, after):
        text = "".join(encode(shown, seq, event) for seq, event in batch)
        if text:
            yield text


def _user_text(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)


def _validation(exc: ValidationError) -> ApiError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "body"
    return ApiError(
        422,
        "invalid_request",
        f"RunAgentInput.{where}: {first.get('msg', 'invalid')} ({len(exc.errors())} problem(s))",
    )


def _routes(server: Server) -> list[Route]:
    """This protocol's routes on ``server``, which ``plait_serve.app`` mounts:
    ``POST /ag-ui`` and ``/ag-ui/threads/{thread_id}/stream``."""

    async def run(request: Request) -> Response:
        body = await read_json(request, server.max_body)
        try:
            data = RunAgentInput.model_validate(body)
        except ValidationError as exc:
            raise _validation(exc) from None
        run_id = check_id("runId", data.run_id)
        check_id("threadId", data.thread_id)
        for index, message in enumerate(data.messages):  # a user message's id is stored
            check_id(f"messages[{index}].id", message.id)
        thread = await server.thread(request, data.thread_id, "threadId")

        async def prepare() -> Any:
            # AG-UI names each run by a new runId; one the thread used already would
            # make two runs named alike (a replay could not tell them apart).
            if run_id in await server.runs.run_ids(thread):
                raise ApiError(
                    409,
                    "run_exists",
                    f"runId {run_id!r} already names a run of thread {thread!r}: "
                    "give each run a new runId",
                )
            answers: dict[str | None, Any] | None = None
            if data.resume:
                pending = await server.runs.call(pending_interrupts, server.agent, thread)
                answers = {
                    entry.interrupt_id: (
                        entry.payload if entry.status == "resolved" else _cancelled(pending, entry)
                    )
                    for entry in data.resume
                }

            def new(held: Sequence[AnyMessage]) -> list[AnyMessage]:
                known = {message.id for message in held}
                return [
                    HumanMessage(_user_text(m), id=m.id)
                    for m in data.messages
                    if isinstance(m, UserMessage) and m.id not in known
                ]

            return await server.run_input(thread, answers=answers, new_messages=new)

        first = await server.start(request, thread, prepare, run_id=run_id)
        return sse(_stream(server, thread, first - 1))

    async def reconnect(request: Request) -> Response:
        thread = await server.require(request, request.path_params["thread_id"])
        return sse(_stream(server, thread, await server.resume_after(thread, since(request))))

    return [
        Route("/ag-ui", run, methods=["POST"]),
        Route("/ag-ui/threads/{thread_id:id}/stream", reconnect, methods=["GET"]),
    ]


def _cancelled(pending: list[Any], entry: Any) -> Any:
    """A ``cancelled`` resume entry: for an approval, every reviewed call rejected."""
    match = next((p for p in pending if p.id == entry.interrupt_id), None)
    if match is None or not match.calls:
        return entry.payload
    return {"decisions": [{"type": "reject", "message": "cancelled"} for _ in match.calls]}
