"""A2A (protocol 0.3, JSON-RPC): the agent card at ``/.well-known/agent-card.json`` and
``POST /a2a`` with ``message/send``, ``message/stream``, ``tasks/get`` and
``tasks/cancel``.

An A2A context is a plait thread; a task is a run and the runs that answer its pauses.
Its state is read from the run log: a run going on is ``working``, a paused one
``input-required`` (its status message carries the pending interrupt as data: the tool
calls under review and the decisions each allows), then ``completed``, ``canceled`` or
``failed``. A streamed task sends what the run does as it does it, as ``working``
status updates: the model's text in pieces, each tool call's start, the call and its
result (``_working``); the answer artifact comes whole at the end. A follow-up message
on the same task answers the pause with plait's decisions payload as a data part
(``{"decisions": [...]}``), checked against the stored interrupt like every resume — a
refused one is a JSON-RPC error and changes nothing.
``tasks/cancel`` cancels a working task's run, and abandons an ``input-required`` one:
the calls its interrupt holds back get error results, and the context takes new tasks.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from a2a.compat.v0_3 import types as a2a
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from plait.lazy import lazy_exports
from plait.messages import AnyMessage, HumanMessage
from plait_serve._app import Server
from plait_serve._http import ApiError, check_id, read_json, sse, sse_event
from plait_serve._interrupts import ResumeRefused
from plait_serve._runlog import Busy, Full, NotFound
from plait_serve._runs import runs_of

__all__: list[str] = []

__getattr__ = lazy_exports(
    __name__,
    {},
    deprecated={
        "routes": (f"{__name__}:_routes", "it is internal: plait_serve.app(agent) mounts it")
    },
)

PATH = "/a2a"
PROTOCOL_VERSION = "0.3.0"

# JSON-RPC and A2A error codes.
_INVALID_REQUEST, _METHOD_NOT_FOUND, _INVALID_PARAMS = -32600, -32601, -32602
_TASK_NOT_FOUND, _NOT_CANCELABLE = -32001, -32002

_STATES = {
    "running": a2a.TaskState.working,
    "success": a2a.TaskState.completed,
    "interrupted": a2a.TaskState.input_required,
    "cancelled": a2a.TaskState.canceled,
    "error": a2a.TaskState.failed,
    "lost": a2a.TaskState.failed,
}


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _dump(model: BaseModel) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _task_id(context: str, run_id: str) -> str:
    """A task's id: its context (the thread as its client names it) and its first run."""
    return f"{context}#{run_id}"


def _split(task_id: str) -> tuple[str, str]:
    thread, sep, run_id = task_id.rpartition("#")
    if not sep or not thread or not run_id:
        raise RpcError(_TASK_NOT_FOUND, f"task {task_id[:80]!r} not found")
    return thread, run_id


def _agent_message(context: str, task_id: str, parts: list[a2a.Part]) -> a2a.Message:
    return a2a.Message(
        role=a2a.Role.agent,
        message_id=str(uuid.uuid4()),
        context_id=context,
        task_id=task_id,
        parts=parts,
    )


def _status(context: str, task_id: str, status: str, end: dict[str, Any] | None) -> a2a.TaskStatus:
    """A task's status from the status and end event of its latest run."""
    parts: list[a2a.Part] = []
    if end is not None and status == "interrupted":
        pending = end.get("interrupts") or []
        parts = [
            a2a.Part(root=a2a.TextPart(text="The agent waits for a decision before it goes on.")),
            a2a.Part(root=a2a.DataPart(data={"interrupts": pending})),
        ]
    elif end is not None and status == "success" and end.get("text"):
        parts = [a2a.Part(root=a2a.TextPart(text=end["text"]))]
    elif end is not None and status == "error":
        parts = [a2a.Part(root=a2a.TextPart(text=str(end.get("message"))))]
    return a2a.TaskStatus(
        state=_STATES[status],
        message=_agent_message(context, task_id, parts) if parts else None,
        timestamp=datetime.now(UTC).isoformat(),
    )


def _artifacts(status: str, end: dict[str, Any] | None) -> list[a2a.Artifact] | None:
    if status != "success" or end is None or not end.get("text"):
        return None
    return [
        a2a.Artifact(artifact_id="answer", parts=[a2a.Part(root=a2a.TextPart(text=end["text"]))])
    ]


def _working(
    context: str, task_id: str, part: a2a.TextPart | a2a.DataPart, event: dict[str, Any]
) -> a2a.TaskStatusUpdateEvent:
    """A ``working`` status update for what the run does as it does it: a piece of the
    text the model writes (the pieces of one model message share ``plait_message_id``
    in the message's metadata, in order) or a tool call's start, the call or its result
    (a data part: the run-log event)."""
    message = _agent_message(context, task_id, [a2a.Part(root=part)])
    if isinstance(part, a2a.TextPart):
        message.metadata = {"plait_message_id": event.get("message_id")}
    return a2a.TaskStatusUpdateEvent(
        task_id=task_id,
        context_id=context,
        final=False,
        status=a2a.TaskStatus(state=a2a.TaskState.working, message=message),
    )


def _routes(server: Server) -> list[Route]:
    """This protocol's routes on ``server``, which ``plait_serve.app`` mounts: the agent
    card at ``/.well-known/agent-card.json`` and JSON-RPC at ``/a2a``."""
    agent = server.agent

    def card(request: Request) -> a2a.AgentCard:
        url = str(request.base_url).rstrip("/") + PATH
        skills = [
            a2a.AgentSkill(
                id=tool.name,
                name=tool.name,
                description=tool.description or tool.name,
                tags=["tool"],
            )
            for tool in agent.tools
        ]
        extra: dict[str, Any] = {}
        if server.keys:
            extra["security_schemes"] = {
                "bearer": a2a.SecurityScheme(
                    root=a2a.HTTPAuthSecurityScheme(scheme="bearer", type="http")
                )
            }
            extra["security"] = [{"bearer": []}]
        return a2a.AgentCard(
            name=agent.name,
            description=(agent.system_prompt or f"The plait agent {agent.name!r}.").strip(),
            url=url,
            version="1",
            protocol_version=PROTOCOL_VERSION,
            preferred_transport="JSONRPC",
            capabilities=a2a.AgentCapabilities(streaming=True, push_notifications=False),
            default_input_modes=["text/plain", "application/json"],
            default_output_modes=["text/plain", "application/json"],
            skills=skills,
            **extra,
        )

    async def get_card(request: Request) -> Response:
        return JSONResponse(_dump(card(request)))

    # -- tasks from the run log ----------------------------------------------------------------

    async def task_runs(
        request: Request, task_id: str
    ) -> tuple[str, str, list[tuple[str, dict[str, Any]]]]:
        """The caller's task: its stored thread, its id, and its runs — the first and
        those that answered its pauses (each run after a paused one)."""
        context, first = _split(task_id)
        try:
            thread = await server.require(request, context)
        except (NotFound, ApiError):
            raise RpcError(_TASK_NOT_FOUND, f"task {task_id[:80]!r} not found") from None
        runs = list((await runs_of(server, thread)).items())
        start = next((i for i, (run_id, _) in enumerate(runs) if run_id == first), None)
        if start is None:
            raise RpcError(_TASK_NOT_FOUND, f"task {task_id[:80]!r} not found")
        mine = [runs[start]]
        for run in runs[start + 1 :]:
            if mine[-1][1]["status"] != "interrupted":
                break
            mine.append(run)
        return thread, task_id, mine

    async def task_json(request: Request, task_id: str) -> dict[str, Any]:
        thread, task_id, runs = await task_runs(request, task_id)
        last = runs[-1][1]
        context = server.shown(thread)
        task = a2a.Task(
            id=task_id,
            context_id=context,
            status=_status(context, task_id, last["status"], last["end"]),
            artifacts=_artifacts(last["status"], last["end"]),
        )
        return _dump(task)

    # -- message/send and message/stream -------------------------------------------------------

    async def send(request: Request, params: a2a.MessageSendParams) -> tuple[str, str, str, int]:
        """Start the run a message asks for: ``(stored thread, task id, run id, first
        event)``."""
        message = params.message
        try:  # kept as the user message's id: bounded like every id
            check_id("messageId", message.message_id)
        except ApiError as exc:
            raise RpcError(_INVALID_PARAMS, exc.message) from None
        texts = [p.root.text for p in message.parts if isinstance(p.root, a2a.TextPart)]
        data = [p.root.data for p in message.parts if isinstance(p.root, a2a.DataPart)]
        run_id = str(uuid.uuid4())
        if message.task_id:
            thread, task_id, runs = await task_runs(request, message.task_id)
            if runs[-1][1]["status"] != "interrupted":
                raise RpcError(
                    _INVALID_PARAMS,
                    f"task {task_id!r} is not waiting for input: start a new task instead",
                )
            answer: Any = data[0] if data else "\n".join(texts)
            answers: dict[str | None, Any] | None = {None: answer}
        else:
            try:  # bounded like every id, before a thread is made for it
                context = message.context_id or str(uuid.uuid4())
                thread = await server.thread(request, context, "contextId")
            except ApiError as exc:
                raise RpcError(_INVALID_PARAMS, exc.message) from None
            task_id = _task_id(context, run_id)
            answers = None
            if not any(t.strip() for t in texts):
                raise RpcError(_INVALID_PARAMS, "message: expected a text part, got none")

        async def prepare() -> Any:
            def new(held: Any) -> list[AnyMessage]:
                return [HumanMessage("\n".join(texts), id=message.message_id)]

            return await server.run_input(thread, answers=answers, new_messages=new)

        try:
            first = await server.start(request, thread, prepare, run_id=run_id)
        except ResumeRefused as exc:
            raise RpcError(_INVALID_PARAMS, str(exc)) from None
        except NotFound:
            context = server.shown(thread)
            raise RpcError(_TASK_NOT_FOUND, f"context {context[:80]!r} not found") from None
        except Busy:
            context = server.shown(thread)
            raise RpcError(_INVALID_REQUEST, f"context {context!r} has a task running") from None
        except Full as exc:
            raise RpcError(_INVALID_REQUEST, f"the server runs its maximum of {exc} runs") from None
        return thread, task_id, run_id, first

    async def until_end(thread: str, first: int) -> None:
        async for batch in server.runs.batches(thread, first - 1):
            del batch  # followed to the run's end, which is written by then

    async def message_send(request: Request, params: a2a.MessageSendParams) -> dict[str, Any]:
        thread, task_id, _, first = await send(request, params)
        blocking = params.configuration is None or params.configuration.blocking is not False
        if blocking:
            await until_end(thread, first)
        return await task_json(request, task_id)

    async def message_stream(
        request: Request, rpc_id: Any, params: a2a.MessageSendParams
    ) -> AsyncIterator[str]:
        thread, task_id, _, first = await send(request, params)
        context = server.shown(thread)

        def result(model: BaseModel, seq: int | None = None) -> str:
            return sse_event({"jsonrpc": "2.0", "id": rpc_id, "result": _dump(model)}, seq=seq)

        async def chunks() -> AsyncIterator[str]:
            working = a2a.TaskStatus(state=a2a.TaskState.working)
            yield result(a2a.Task(id=task_id, context_id=context, status=working))
            async for batch in server.runs.batches(thread, first - 1):
                text = ""
                for seq, event in batch:
                    kind = event.get("type")
                    part: a2a.TextPart | a2a.DataPart | None = None
                    if kind == "text" and event["delta"]:
                        part = a2a.TextPart(text=event["delta"])
                    elif kind in ("tool_call_start", "tool_call", "tool_result"):
                        part = a2a.DataPart(data={k: v for k, v in event.items()})
                    if part is not None:
                        text += result(_working(context, task_id, part, event), seq)
                    elif kind in ("run_finished", "run_error"):
                        status = "error" if kind == "run_error" else event.get("status", "success")
                        artifacts = _artifacts(status, event) or []
                        for artifact in artifacts:
                            text += result(
                                a2a.TaskArtifactUpdateEvent(
                                    task_id=task_id,
                                    context_id=context,
                                    artifact=artifact,
                                    append=False,
                                    last_chunk=True,
                                )
                            )
                        final = a2a.TaskStatusUpdateEvent(
                            task_id=task_id,
                            context_id=context,
                            final=True,
                            status=_status(context, task_id, status, event),
                        )
                        text += result(final, seq)
                if text:
                    yield text

        return chunks()

    # -- tasks/get and tasks/cancel ------------------------------------------------------------

    async def tasks_cancel(request: Request, params: a2a.TaskIdParams) -> dict[str, Any]:
        """A working task's run is cancelled; an input-required one is abandoned: the
        calls its interrupt holds back are not run (each gets an error result), and the
        context takes a new task."""
        thread, task_id, runs = await task_runs(request, params.id)
        run_id, run = runs[-1]
        if run["status"] == "interrupted":
            try:  # the paused run itself ends cancelled (no run of its own)
                if await server.runs.cancel_paused(thread, run_id):
                    return await task_json(request, task_id)
            except Busy:
                pass  # answered meanwhile: it is working again
        elif run["status"] == "running" and await server.runs.cancel(thread):
            await until_end(thread, run["first"])
            return await task_json(request, task_id)
        state = _STATES[run["status"]].value
        raise RpcError(
            _NOT_CANCELABLE,
            f"task {task_id!r} is {state}, not running or waiting for input: it cannot be canceled",
        )

    # -- the JSON-RPC endpoint -----------------------------------------------------------------

    def error(rpc_id: Any, code: int, message: str) -> JSONResponse:
        body = {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}}
        return JSONResponse(body)

    def parse(model: type[Any], params: Any) -> Any:
        try:
            return model.model_validate(params)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "params"
            raise RpcError(_INVALID_PARAMS, f"params.{where}: {first.get('msg')}") from None

    async def rpc(request: Request) -> Response:
        body = await read_json(request, server.max_body)
        rpc_id = body.get("id")
        method = body.get("method")
        try:
            if body.get("jsonrpc") != "2.0" or not isinstance(method, str):
                raise RpcError(_INVALID_REQUEST, "expected a JSON-RPC 2.0 request with a 'method'")
            params = body.get("params")
            if method == "message/send":
                return JSONResponse(
                    {
                        "jsonrpc": "2.0",
                        "id": rpc_id,
                        "result": await message_send(request, parse(a2a.MessageSendParams, params)),
                    }
                )
            if method == "message/stream":
                chunks = await message_stream(request, rpc_id, parse(a2a.MessageSendParams, params))
                return sse(chunks)
            if method == "tasks/get":
                query = parse(a2a.TaskQueryParams, params)
                result = await task_json(request, query.id)
            elif method == "tasks/cancel":
                result = await tasks_cancel(request, parse(a2a.TaskIdParams, params))
            else:
                raise RpcError(_METHOD_NOT_FOUND, f"method {method[:80]!r} is not served")
        except RpcError as exc:
            return error(rpc_id, exc.code, server.tell(exc.message))
        return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "result": result})

    return [
        Route("/.well-known/agent-card.json", get_card, methods=["GET"]),
        Route(PATH, rpc, methods=["POST"]),
    ]
