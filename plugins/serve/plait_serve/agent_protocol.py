"""The Agent Protocol, as far as LangGraph's SDK (``langgraph-sdk``) uses it: the served
agent as the one assistant, threads, their state, and runs — created, streamed, waited
for, joined, cancelled and resumed.

Every run is a run of the run log: a stream is a projection of the thread's log from
the run's first event, so ``GET /threads/{id}/runs/{run_id}/stream`` with
``Last-Event-ID`` replays exactly what a client missed, then the live events. A run's
status comes from its end event in the log (``success``, ``interrupted``, ``error``), named
as LangGraph names them: a run that paused at an interrupt is ``success`` (its thread is
``interrupted``), a cancelled one ``interrupted``. A paused run ends with
``__interrupt__`` (in ``updates`` and in the final ``values``); ``command={"resume":
...}`` answers it, checked against the stored interrupt like every resume (409 if the
interrupt does not allow it).

A stateless run (``POST /runs``, ``/runs/stream``, ``/runs/wait``) runs on a new thread
that is deleted when it ends, unless ``on_completion="keep"``.

Streams carry the modes ``values`` (the thread's state after each step the run saves, as
LangGraph sends it after each superstep, and as the run left it), ``updates``
(``{"model": ...}``, ``{"tools": ...}``, ``{"__interrupt__": ...}``), ``messages`` /
``messages-tuple`` (text and each tool call's arguments as they stream: ``AIMessageChunk``s
with ``tool_call_chunks``, as LangGraph sends them) and ``custom``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic_core import from_json
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from plait.errors import ConfigError, ThreadBusyError
from plait.lazy import lazy_exports
from plait.messages import AnyMessage, message_from_dict, unstructure_message
from plait.runlog import END_TYPES, guarded_keys, jsonable, private_keys
from plait_serve._app import Server, client_messages
from plait_serve._http import ApiError, check_id, read_json, sse, sse_event, url_path
from plait_serve._interrupts import Pending, pending_interrupts
from plait_serve._runlog import TEMPORARY, Busy, NotFound
from plait_serve._runs import runs_of as run_records

__all__ = ["STREAM_MODES"]

__getattr__ = lazy_exports(
    __name__,
    {},
    deprecated={
        "routes": (f"{__name__}:_routes", "it is internal: plait_serve.app(agent) mounts it")
    },
)

THREAD = "/threads/{thread_id:id}"
RUN = THREAD + "/runs/{run_id:id}"
"""The paths of a thread and of a run (their ids encoded: ``plait_serve._http``)."""

STREAM_MODES = ("values", "updates", "messages", "messages-tuple", "custom")
"""The ``stream_mode`` values served."""

_RUN_KEYS = frozenset(
    {
        "assistant_id",
        "input",
        "command",
        "stream_mode",
        "metadata",
        "config",
        "context",
        "if_not_exists",
        "on_completion",
        "on_disconnect",
        "stream_resumable",
        "stream_subgraphs",
        "multitask_strategy",
        "durability",
    }
)


_ON_COMPLETION = ("delete", "keep")
"""What becomes of a stateless run's thread when the run ends (LangGraph's default:
deleted)."""

_MULTITASK = ("reject", "interrupt", "rollback", "enqueue")
"""LangGraph's ``multitask_strategy`` values. ``interrupt`` cancels the run going on in the
thread first (deepagents' ``update_async_task`` asks for it); with the others a run on a
busy thread is refused (409), as with ``reject``."""


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def _message(message: AnyMessage) -> dict[str, Any]:
    """A plait message in LangChain's dict shape (``type`` human/ai/tool/system)."""
    data: dict[str, Any] = jsonable(unstructure_message(message))
    data.setdefault("content", "")  # left out when empty; LangChain's dicts always have it
    for call in data.get("tool_calls") or ():
        call["type"] = "tool_call"
    return data


def _interrupts(pending: Sequence[Pending] | Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Interrupts as LangGraph shows them: ``{"value", "id"}``."""
    out = []
    for item in pending:
        data = item.to_json() if isinstance(item, Pending) else item
        out.append({"value": jsonable(data["value"]), "id": data["id"]})
    return out


# -- the stream projection ---------------------------------------------------------------------


def _call_chunk(name: str | None, args: str, call_id: str | None, index: int) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "index": index, "type": "tool_call_chunk"}


def _parsed_calls(chunks: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The ``tool_calls`` and ``invalid_tool_calls`` a LangChain ``AIMessageChunk``
    derives from its ``tool_call_chunks``, as LangGraph sends them: each chunk's
    arguments read as the beginning of a JSON object (partial), or not a call yet."""
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for chunk in chunks:
        try:
            text = chunk["args"]
            args = from_json(text, allow_partial="trailing-strings") if text else {}
        except ValueError:
            args = None
        if isinstance(args, dict):
            calls.append(
                {"name": chunk["name"] or "", "args": args, "id": chunk["id"], "type": "tool_call"}
            )
        else:
            invalid.append(
                {
                    "name": chunk["name"],
                    "args": chunk["args"],
                    "id": chunk["id"],
                    "error": None,
                    "type": "invalid_tool_call",
                }
            )
    return {"tool_calls": calls, "invalid_tool_calls": invalid}


class _Projector:
    """Turns one run's log events into Agent Protocol stream parts ``(event, data)``.

    It keeps what a part needs from earlier events of the same run (an AI message's text
    and tool calls are one update), so a reconnecting stream feeds it the run from its
    start and sends only the parts of the events after ``Last-Event-ID``."""

    def __init__(self, thread_id: str, modes: Sequence[str]) -> None:
        self.thread_id = thread_id
        self.modes = frozenset(modes)
        self.run_id = ""
        self._ai: dict[str, Any] | None = None  # the AI message being assembled
        # its tool calls streaming, by id: their chunk so far (arguments joined)
        self._streams: dict[str, dict[str, Any]] = {}

    def _meta(self, node: str) -> dict[str, Any]:
        return {"langgraph_node": node, "thread_id": self.thread_id, "run_id": self.run_id}

    def _partial(self) -> dict[str, Any]:
        """The AI message so far, as ``messages/partial`` sends it: its finished calls
        and those streaming (``tool_call_chunks``, their arguments so far)."""
        assert self._ai is not None
        if not self._streams:
            return dict(self._ai)
        chunks = list(self._streams.values())
        parsed = _parsed_calls(chunks)
        return {
            **self._ai,
            "tool_calls": [*self._ai["tool_calls"], *parsed["tool_calls"]],
            "invalid_tool_calls": parsed["invalid_tool_calls"],
            "tool_call_chunks": [dict(chunk) for chunk in chunks],
        }

    def _call_part(self, mid: str, chunk: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """A streamed call's fragment ``chunk``: a ``messages-tuple`` ``AIMessageChunk``
        and the ``messages/partial`` message so far."""
        if "messages-tuple" in self.modes:
            part = {
                "type": "AIMessageChunk",
                "id": mid,
                "content": "",
                "tool_call_chunks": [chunk],
                **_parsed_calls([chunk]),
            }
            yield "messages", [part, self._meta("model")]
        if "messages" in self.modes:
            yield "messages/partial", [self._partial()]

    def _flush(self) -> Iterator[tuple[str, Any]]:
        message, self._ai = self._ai, None
        self._streams = {}
        if message is None:
            return
        if "messages" in self.modes:
            yield "messages/complete", [message]
        if "updates" in self.modes:
            yield "updates", {"model": {"messages": [message]}}

    def feed(self, event: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        kind = event.get("type")
        if kind == "run_started":
            self.run_id = event["run_id"]
            yield "metadata", {"run_id": self.run_id, "attempt": 1}
            return
        if kind in ("message_start", "tool_call", "tool_call_start", "tool_args"):
            mid = event["message_id"]
            if self._ai is None or self._ai["id"] != mid:
                yield from self._flush()
                self._ai = {"type": "ai", "id": mid, "content": "", "tool_calls": []}
                if "messages" in self.modes:
                    yield "messages/metadata", {mid: {"metadata": self._meta("model")}}
            call_id: str = event.get("tool_call_id") or ""
            if kind == "tool_call_start":
                stream = _call_chunk(event["name"], "", call_id, event["index"])
                self._streams[call_id] = stream
                yield from self._call_part(mid, dict(stream))
            elif kind == "tool_args":
                stream = self._streams.setdefault(
                    call_id, _call_chunk(None, "", call_id, event["index"])
                )
                stream["args"] += event["delta"]
                yield from self._call_part(
                    mid, _call_chunk(None, event["delta"], None, event["index"])
                )
            elif kind == "tool_call":
                streamed = self._streams.pop(call_id, None) is not None or event.get("streamed")
                call = {
                    "name": event["name"],
                    "args": event["args"],
                    "id": event["tool_call_id"],
                    "type": "tool_call",
                }
                self._ai["tool_calls"].append(call)
                if "messages-tuple" in self.modes and not streamed:
                    chunk = {
                        "type": "AIMessageChunk",
                        "id": mid,
                        "content": "",
                        "tool_calls": [call],
                    }
                    yield "messages", [chunk, self._meta("model")]
            return
        if kind == "text":
            if self._ai is None:  # pragma: no cover - the log always starts a message first
                self._ai = {
                    "type": "ai",
                    "id": event["message_id"],
                    "content": "",
                    "tool_calls": [],
                }
            self._ai["content"] += event["delta"]
            if "messages-tuple" in self.modes:
                chunk = {
                    "type": "AIMessageChunk",
                    "id": event["message_id"],
                    "content": event["delta"],
                }
                yield "messages", [chunk, self._meta("model")]
            if "messages" in self.modes:
                yield "messages/partial", [self._partial()]
            return
        if kind == "message_end":
            return  # its tool calls, if any, follow
        if kind == "tool_call_dropped":
            self._streams.pop(event["tool_call_id"], None)
            return
        if kind == "step_restarted":
            # A step made again after its worker died: the message it was streaming is
            # void (the next ``messages/partial`` starts it over), the rest stands.
            if self._ai is not None and self._ai["id"] == event.get("message_id"):
                self._ai = None
            for call_id in event.get("open_calls") or ():
                self._streams.pop(call_id, None)
            if "custom" in self.modes:
                yield "custom", {"plait": "step_restarted", **event}
            return
        yield from self._flush()
        if kind == "tool_result":
            message = {
                "type": "tool",
                "id": event["message_id"],
                "tool_call_id": event["tool_call_id"],
                "name": event["name"],
                "content": event["content"],
                "status": event["status"],
            }
            if "messages-tuple" in self.modes:
                yield "messages", [message, self._meta("tools")]
            if "messages" in self.modes:
                yield "messages/complete", [message]
            if "updates" in self.modes:
                yield "updates", {"tools": {"messages": [message]}}
        elif kind == "state" and "updates" in self.modes:
            yield "updates", {"state": event["values"]}
        elif kind == "custom" and "custom" in self.modes:
            yield "custom", event["value"]
        elif kind == "run_finished" and event.get("status") == "interrupted":
            if "updates" in self.modes:
                yield "updates", {"__interrupt__": _interrupts(event.get("interrupts") or [])}
        elif kind == "run_error":
            yield "error", {"error": event.get("code"), "message": event.get("message")}


# -- the routes --------------------------------------------------------------------------------


def _routes(server: Server) -> list[Route]:
    """This protocol's routes on ``server``, which ``plait_serve.app`` mounts:
    ``/assistants``, ``/threads`` and ``/runs``."""
    agent = server.agent
    started = time.time()
    modes_of: dict[str, list[str]] = {}  # run id -> its stream modes (for a reconnect)

    assistant = {
        "assistant_id": agent.name,
        "graph_id": agent.name,
        "name": agent.name,
        "description": agent.system_prompt,
        "config": {},
        "context": {},
        "metadata": {"tools": [tool.name for tool in agent.tools]},
        "version": 1,
        "created_at": _iso(started),
        "updated_at": _iso(started),
    }

    def check_assistant(value: Any) -> None:
        if value is not None and value != agent.name:
            raise ApiError(404, "not_found", f"assistant {str(value)[:80]!r} not found")

    async def mine(request: Request, thread: str) -> dict[str, Any]:
        """The stored thread's record if it is the caller's; else 404."""
        record = await server.runs.record(thread)
        if record is None or record.get("owner") != server.owner(request):
            raise NotFound(thread)
        return record

    async def owned(request: Request, thread_id: Any) -> tuple[str, dict[str, Any]]:
        """The caller's thread it names ``thread_id`` (stored id) and its record; 404 for
        an unknown one (another key's is unknown: ``Server.thread``)."""
        thread = await server.thread(request, thread_id)
        return thread, await mine(request, thread)

    # As LangGraph names them: a run that paused at an interrupt succeeded (its thread is
    # "interrupted"); "interrupted" is a run cancelled (deepagents reads them so).
    _STATUS = {"interrupted": "success", "cancelled": "interrupted", "lost": "error"}

    async def runs_of(thread: str) -> dict[str, dict[str, Any]]:
        runs = await run_records(server, thread)
        for run in runs.values():
            run["status"] = _STATUS.get(run["status"], run["status"])
        return runs

    def run_json(
        thread: str, run_id: str, status: str, record: dict[str, Any], metadata: dict[str, Any]
    ) -> dict[str, Any]:
        created = _iso(record.get("created", started))
        return {
            "run_id": run_id,
            "thread_id": server.shown(thread),
            "assistant_id": agent.name,
            "created_at": created,
            "updated_at": created,
            "status": status,
            "metadata": metadata,
            "multitask_strategy": "reject",
        }

    async def values(thread: str, step: int | None = None) -> dict[str, Any]:
        """The thread's state as LangGraph shows it (after ``step``, else the latest);
        ``__interrupt__`` while the latest is paused. The one read of stored state that
        answers a client (thread, state, history, wait, join, ``values``): the stored
        thread ids in it (a tool's result, a key, a paused call's arguments) named as
        the client names the thread (``Server.tell``)."""
        state = await server.runs.call(agent.get_state, thread, step)
        private = private_keys(agent)  # checkpointed, never shown to a client
        out: dict[str, Any] = jsonable(
            {k: v for k, v in state.items() if k != "messages" and k not in private}
        )
        out["messages"] = [_message(m) for m in state["messages"]]
        if step is None:
            pending = await server.runs.call(pending_interrupts, agent, thread)
            if pending:
                out["__interrupt__"] = _interrupts(pending)
        return server.tell(out)

    async def step_values(thread: str, step: int) -> dict[str, Any] | None:
        """``values`` after ``step`` (``None``: the checkpointer keeps no history)."""
        try:
            return await values(thread, step)
        except ConfigError:
            return None

    async def steps_of(thread: str) -> list[Any] | None:
        """The thread's kept steps, newest first (``None``: its checkpointer keeps no
        history, only the latest state)."""
        try:
            steps: list[Any] = await server.runs.call(agent.get_state_history, thread)
        except ConfigError:
            return None
        return steps

    async def thread_json(thread: str, record: dict[str, Any]) -> dict[str, Any]:
        state = await values(thread)
        interrupts = state.get("__interrupt__") or []
        runs = await runs_of(thread)
        last = list(runs.values())[-1]["status"] if runs else None
        # A run goes on here, or in another server on the same database (its lease
        # lives): ``runs_of`` reads that run ``running``, as it reads a dead one ``error``.
        status = (
            "busy"
            if server.runs.running(thread) or last == "running"
            else "interrupted"
            if interrupts
            else "error"
            if last == "error"
            else "idle"
        )
        created = _iso(record.get("created", started))
        return {
            "thread_id": server.shown(thread),
            "created_at": created,
            "updated_at": created,
            "metadata": record.get("metadata") or {},
            "status": status,
            "values": state,
            "interrupts": {"tools": interrupts} if interrupts else {},
        }

    def checkpoint(thread: str, number: int) -> dict[str, Any]:
        return {
            "thread_id": server.shown(thread),
            "checkpoint_ns": "",
            "checkpoint_id": str(number),
            "checkpoint_map": None,
        }

    async def state_json(
        thread: str, step: Any = None, parent: Any = None, *, latest: bool = True
    ) -> dict[str, Any]:
        """A ``ThreadState``: the latest (``step`` None or ``latest``) or that of the
        history entry ``step`` (a ``StepInfo``), whose parent entry is ``parent``."""
        if step is None:
            checkpointer = agent.checkpointer
            assert checkpointer is not None
            number = await server.runs.call(checkpointer.step, thread)
            steps = await steps_of(thread) or []
            step = steps[0] if steps and steps[0].step == number else None
            parent = steps[1] if step is not None and len(steps) > 1 else None
        else:
            number = step.step
        state = await values(thread, None if latest else number)
        interrupts = state.get("__interrupt__") or []
        tasks = (
            [
                {
                    "id": "tools",
                    "name": "tools",
                    "error": None,
                    "interrupts": interrupts,
                    "checkpoint": None,
                    "state": None,
                    "result": None,
                }
            ]
            if interrupts
            else []
        )
        metadata: dict[str, Any] = {"step": number}
        if step is not None:
            metadata["node"] = step.node  # the loop node (or as_node) that wrote it
        if parent is not None:
            parent_checkpoint: dict[str, Any] | None = checkpoint(thread, parent.step)
        elif step is None and number > 1:
            parent_checkpoint = checkpoint(thread, number - 1)
        else:
            parent_checkpoint = None
        return {
            "values": state,
            "next": ["tools"] if interrupts else [],
            "tasks": tasks,
            "checkpoint": checkpoint(thread, number),
            "parent_checkpoint": parent_checkpoint,
            "metadata": metadata,
            "created_at": _iso(step.time) if step is not None else None,
            "interrupts": interrupts,
        }

    # -- assistants ----------------------------------------------------------------------------

    async def search_assistants(request: Request) -> Response:
        body = await read_json(request, server.max_body)
        wanted = body.get("graph_id") or body.get("name")
        return JSONResponse([assistant] if wanted in (None, agent.name) else [])

    async def get_assistant(request: Request) -> Response:
        check_assistant(request.path_params["assistant_id"])
        return JSONResponse(assistant)

    # -- threads -------------------------------------------------------------------------------

    async def create_thread(request: Request) -> Response:
        body = await read_json(request, server.max_body)
        thread = await server.thread(
            request, body.get("thread_id") or str(uuid.uuid4()), "thread_id"
        )
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ApiError(
                422, "invalid_request", f"metadata: expected an object, got {metadata!r}"
            )
        owner = server.owner(request)
        try:
            new = await server.runs.claim(thread, owner, adopt=server.adopt, metadata=metadata)
        except NotFound:
            new = False
        if not new:
            record = await server.runs.record(thread)
            if (
                body.get("if_exists") != "do_nothing"
                or record is None
                or record.get("owner") != owner
            ):
                raise ApiError(409, "thread_exists", f"thread {thread!r} already exists")
        return JSONResponse(await thread_json(thread, await mine(request, thread)))

    async def get_thread(request: Request) -> Response:
        thread, record = await owned(request, request.path_params["thread_id"])
        return JSONResponse(await thread_json(thread, record))

    async def delete_thread(request: Request) -> Response:
        thread, _ = await owned(request, request.path_params["thread_id"])
        if server.runs.running(thread):
            raise Busy(thread)
        await server.runs.call(agent.delete_thread, thread)
        return Response(status_code=204)

    async def search_threads(request: Request) -> Response:
        body = await read_json(request, server.max_body)
        limit, offset = body.get("limit", 10), body.get("offset", 0)
        for name, value in (("limit", limit), ("offset", offset)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ApiError(
                    422, "invalid_request", f"{name}: expected an int >= 0, got {value!r}"
                )
        metadata, status, ids = body.get("metadata") or {}, body.get("status"), body.get("ids")
        if not isinstance(metadata, dict):
            raise ApiError(
                422, "invalid_request", f"metadata: expected an object, got {metadata!r}"[:200]
            )
        if ids is not None and (
            not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)
        ):
            raise ApiError(
                422, "invalid_request", f"ids: expected a list of thread ids, got {ids!r}"[:200]
            )
        if status is not None and status not in ("idle", "busy", "interrupted", "error"):
            raise ApiError(
                422,
                "invalid_request",
                f"status: expected one of 'idle', 'busy', 'interrupted', 'error', got {status!r}"[
                    :200
                ],
            )
        owner = server.owner(request)
        found: list[tuple[float, dict[str, Any]]] = []
        for thread in reversed(await server.runs.threads()):
            if ids is not None and server.shown(thread) not in ids:
                continue
            record = await server.runs.record(thread)
            if record is None or record.get("owner") != owner:
                continue
            held = record.get("metadata") or {}
            if any(held.get(k) != v for k, v in metadata.items()):
                continue
            data = await thread_json(thread, record)
            if status is not None and data["status"] != status:
                continue
            found.append((record.get("created", 0.0), data))
        found.sort(key=lambda pair: pair[0], reverse=True)  # newest first
        return JSONResponse([data for _, data in found[offset : offset + limit]])

    async def get_state(request: Request) -> Response:
        thread, _ = await owned(request, request.path_params["thread_id"])
        return JSONResponse(await state_json(thread))

    def step_number(value: Any) -> int:
        if isinstance(value, dict):
            value = value.get("checkpoint_id")
        if not isinstance(value, str) or not value.isdigit() or len(value) > 18:
            raise ApiError(
                422,
                "invalid_request",
                f"checkpoint_id: expected a step number, got {value!r}"[:200],
            )
        return int(value)

    async def history(request: Request) -> Response:
        """Every kept step of the thread, newest first (``limit``, ``before``)."""
        thread, _ = await owned(request, request.path_params["thread_id"])
        body = await read_json(request, server.max_body)
        limit = body.get("limit", 10)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ApiError(422, "invalid_request", f"limit: expected an int >= 1, got {limit!r}")
        before = step_number(body["before"]) if body.get("before") is not None else None
        steps = await steps_of(thread)
        if steps is None:  # a checkpointer without history: the latest state only
            return JSONResponse([await state_json(thread)][:limit])
        latest = steps[0].step if steps else None
        out: list[dict[str, Any]] = []
        for index, step in enumerate(steps):
            if before is not None and step.step >= before:
                continue
            if len(out) == limit:
                break
            parent = steps[index + 1] if index + 1 < len(steps) else None
            out.append(await state_json(thread, step, parent, latest=step.step == latest))
        return JSONResponse(out)

    async def state_at(request: Request, thread: str, number: int) -> Response:
        steps = await steps_of(thread) or []
        for index, step in enumerate(steps):
            if step.step == number:
                parent = steps[index + 1] if index + 1 < len(steps) else None
                return JSONResponse(await state_json(thread, step, parent, latest=index == 0))
        raise ApiError(404, "not_found", f"checkpoint {number} not found in thread {thread!r}")

    async def get_state_at(request: Request) -> Response:
        thread, _ = await owned(request, request.path_params["thread_id"])
        return await state_at(request, thread, step_number(request.path_params["checkpoint_id"]))

    async def post_state_at(request: Request) -> Response:
        thread, _ = await owned(request, request.path_params["thread_id"])
        body = await read_json(request, server.max_body)
        return await state_at(request, thread, step_number(body.get("checkpoint")))

    async def update_state(request: Request) -> Response:
        """``values`` written to the thread as one step (``as_node`` names it)."""
        thread, _ = await owned(request, request.path_params["thread_id"])
        body = await read_json(request, server.max_body)
        update = body.get("values")
        as_node = body.get("as_node") or "update_state"
        if not isinstance(update, dict) or not isinstance(as_node, str):
            raise ApiError(
                422,
                "invalid_request",
                f"expected 'values' (an object) and an optional 'as_node' string, got {update!r}"[
                    :200
                ],
            )
        guarded = sorted(set(update) & guarded_keys(agent))
        if guarded:
            raise ApiError(
                422,
                "invalid_request",
                f"values: {', '.join(map(repr, guarded))} is kept by the agent's middleware "
                "(a limit's counts, pii's table, a review's edits): a client cannot write it"[:300],
            )
        if "messages" in update:
            given = input_messages({"messages": update["messages"]})
            update = {**update, "messages": client_messages(given)}
        if server.runs.running(thread):
            raise Busy(thread)
        try:
            step = await server.runs.call(agent.update_state, thread, update, as_node=as_node)
        except ThreadBusyError:
            raise Busy(thread) from None
        except (TypeError, ValueError) as exc:
            raise ApiError(422, "invalid_request", str(exc)[:300]) from None
        return JSONResponse({"checkpoint": checkpoint(thread, step)})

    # -- runs ----------------------------------------------------------------------------------

    def stream_modes(value: Any) -> list[str]:
        modes = [value] if isinstance(value, str) else value
        if modes is None:
            return ["values"]
        if not isinstance(modes, list) or any(m not in STREAM_MODES for m in modes):
            raise ApiError(
                422,
                "invalid_request",
                f"stream_mode: expected some of {', '.join(STREAM_MODES)}, got {value!r}",
            )
        return modes

    def input_messages(value: Any) -> list[AnyMessage]:
        if value is None:
            return []
        if not isinstance(value, dict) or set(value) - {"messages"}:
            raise ApiError(
                422,
                "invalid_request",
                "input: expected {'messages': [...]} (the agent's state takes messages), "
                f"got {jsonable(value)!r}"[:300],
            )
        raw = value.get("messages") or []
        if isinstance(raw, dict | str):
            raw = [raw]
        messages: list[AnyMessage] = []
        for index, item in enumerate(raw if isinstance(raw, list) else [raw]):
            if isinstance(item, str):
                item = {"role": "user", "content": item}
            elif isinstance(item, list) and len(item) == 2:
                item = {"role": item[0], "content": item[1]}
            try:
                if not isinstance(item, dict):
                    raise TypeError(f"expected a message object, got {item!r}")
                fields = {k: v for k, v in item.items() if k in ("role", "type", "content", "id")}
                for role in ("role", "type"):  # OpenAI's name for a system message
                    if fields.get(role) == "developer":
                        fields[role] = "system"
                content, mid = fields.get("content", ""), fields.get("id")
                blocks = isinstance(content, list) and all(isinstance(b, dict) for b in content)
                if not (isinstance(content, str) or blocks) or not isinstance(mid, str | None):
                    raise TypeError(
                        "expected a 'content' string or list of blocks and an 'id' "
                        f"string, got {item!r}"
                    )
                if fields.get("id") is None:
                    fields.pop("id", None)
                else:  # stored with the message: bounded like every id
                    check_id(f"input.messages[{index}].id", mid)
                messages.append(message_from_dict(fields))
            except TypeError as exc:
                raise ApiError(422, "invalid_request", f"input.messages: {exc}"[:300]) from None
        return messages

    async def create(
        request: Request, thread: str | None
    ) -> tuple[str, str, list[str], int, dict[str, Any], bool]:
        """Start a run from the request; ``(thread, run_id, modes, first event, body,
        temporary)``: ``temporary`` for a stateless run whose thread goes when it ends."""
        body = await read_json(request, server.max_body)
        unknown = sorted(set(body) - _RUN_KEYS)
        if unknown:
            raise ApiError(422, "invalid_request", f"unknown run option(s): {', '.join(unknown)}")
        check_assistant(body.get("assistant_id"))
        modes = stream_modes(body.get("stream_mode"))
        command = body.get("command")
        if command is not None and (not isinstance(command, dict) or set(command) - {"resume"}):
            raise ApiError(
                422,
                "invalid_request",
                f"command: expected {{'resume': ...}}, got {command!r}"[:300],
            )
        if command is not None and body.get("input") is not None:
            raise ApiError(422, "invalid_request", "expected input or command, got both")
        strategy = body.get("multitask_strategy") or "reject"
        if strategy not in _MULTITASK:
            raise ApiError(
                422,
                "invalid_request",
                f"multitask_strategy: expected one of {', '.join(map(repr, _MULTITASK))}, "
                f"got {strategy!r}"[:300],
            )
        on_completion = body.get("on_completion") or "delete"
        if on_completion not in _ON_COMPLETION:
            raise ApiError(
                422,
                "invalid_request",
                f"on_completion: expected 'delete' or 'keep', got {on_completion!r}"[:200],
            )
        temporary = thread is None and on_completion == "delete"
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ApiError(
                422, "invalid_request", f"metadata: expected an object, got {metadata!r}"[:200]
            )
        messages = input_messages(body.get("input"))
        if thread is None:  # a stateless run: a new thread, for this run only if temporary
            made = f"{TEMPORARY}{uuid.uuid4()}" if temporary else str(uuid.uuid4())
            thread = await server.thread(request, made)
        else:
            thread = await server.thread(request, thread)
            if body.get("if_not_exists") != "create":
                await mine(request, thread)  # LangGraph's default: the thread must exist
            if strategy == "interrupt":
                await interrupt_running(request, thread)
        run_id = str(uuid.uuid4())

        async def prepare() -> Any:
            answers: dict[str | None, Any] | None = None
            if command is not None:
                resume = command.get("resume")
                pending = await server.runs.call(pending_interrupts, agent, thread)
                ids = {p.id for p in pending}
                if isinstance(resume, dict) and resume and set(resume) <= ids:
                    answers = dict(resume)
                else:
                    answers = {None: resume}

            def new(held: Sequence[AnyMessage]) -> list[AnyMessage]:
                known = {m.id for m in held}
                return [m for m in messages if m.id not in known]

            return await server.run_input(thread, answers=answers, new_messages=new)

        first = await server.start(
            request,
            thread,
            prepare,
            run_id=run_id,
            metadata=jsonable(metadata),
            temporary=temporary,
        )
        modes_of[run_id] = modes
        if len(modes_of) > 10_000:
            modes_of.pop(next(iter(modes_of)))
        return thread, run_id, modes, first, body, temporary

    async def interrupt_running(request: Request, thread: str) -> None:
        """``multitask_strategy="interrupt"``: cancel the run going on in the caller's
        thread (it ends ``interrupted``) and wait until it has, so the new run can start.
        A thread of another owner is a 404 before anything is cancelled
        (``if_not_exists`` skips the ownership check of a thread that exists); one
        without a record has no run going on."""
        if await server.runs.record(thread) is not None:
            await mine(request, thread)
        run_id = server.runs.running(thread)
        if run_id is None or not await server.runs.cancel(thread):
            return
        await wait_end(thread, run_id, await first_event(thread, run_id))
        while server.runs.running(thread) == run_id:  # its last events are being written
            await asyncio.sleep(0.005)

    async def run_of(thread: str, run_id: str) -> dict[str, Any]:
        run = (await runs_of(thread)).get(run_id)
        if run is None:
            kept = server.runs.keep_events
            why = (
                f" (a server that keeps {kept} events a thread forgets older runs)" if kept else ""
            )
            raise ApiError(
                404, "not_found", f"run {run_id[:80]!r} not found in thread {thread!r}{why}"
            )
        return run

    async def first_event(thread: str, run_id: str) -> int:
        return int((await run_of(thread, run_id))["first"])

    async def project(
        thread: str, run_id: str, modes: list[str], first: int, after: int
    ) -> AsyncIterator[str]:
        """The run's stream parts from its first event, sending those after ``after``."""
        projector = _Projector(server.shown(thread), modes)
        last_step: int | None = None  # the run's step logged last
        states: dict[int, dict[str, Any] | None] = {}  # the states after the last steps read

        async def after_step(step: int) -> dict[str, Any] | None:
            if step not in states:
                states[step] = await step_values(thread, step)
                for older in [k for k in states if k != step][:-1]:  # keep this and one more
                    del states[older]
            return states[step]

        async for batch in server.runs.batches(thread, first - 1):
            text = ""
            for seq, event in batch:
                parts = list(projector.feed(event))
                kind = event.get("type")
                if kind == "step" and "values" in modes:
                    # A step that changed nothing the client sees (the run's end saved on
                    # its own, a tool call's answer kept for a crash) sends no values, as
                    # LangGraph sends them only after a step that wrote some.
                    step, before = event["step"], last_step
                    if seq > after and (state := await after_step(step)):
                        if before is None or state != await after_step(before):
                            parts.append(("values", state))
                    last_step = step
                elif kind == "run_finished" and "values" in modes and seq > after:
                    # The state as the run left it (with ``__interrupt__`` if it paused),
                    # unless the last step's values already showed it.
                    final = await values(thread)
                    if last_step is None or final != await after_step(last_step):
                        parts.append(("values", final))
                if seq <= after:
                    continue
                for index, (name, data) in enumerate(parts):
                    last = index == len(parts) - 1
                    text += sse_event(jsonable(data), seq=seq if last else None, event=name)
            if text:
                yield text

    def stream_response(
        thread: str,
        run_id: str,
        modes: list[str],
        first: int,
        after: int,
        chunks: AsyncIterator[str] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> Response:
        """The run's stream (``chunks``, else its projection from event ``after`` on)."""
        if chunks is None:
            chunks = project(thread, run_id, modes, first, after)
        response = sse(chunks, on_close=on_close)
        location = url_path(RUN + "/stream", thread_id=server.shown(thread), run_id=run_id)
        response.headers["Location"] = location
        response.headers["Content-Location"] = location
        return response

    async def wait_end(thread: str, run_id: str, first: int) -> dict[str, Any] | None:
        """The run's end event, once it is written."""
        async for batch in server.runs.batches(thread, first - 1):
            for _, event in batch:
                if event.get("type") in END_TYPES:
                    return event
        return None

    async def ended(thread: str, run_id: str, first: int) -> dict[str, Any] | None:
        """The run's end event, once the run is over (its last events written)."""
        end = await wait_end(thread, run_id, first)
        while server.runs.running(thread) == run_id:  # its last events are being written
            await asyncio.sleep(0.005)
        return end

    async def outcome(thread: str, run_id: str, first: int) -> dict[str, Any]:
        end = await ended(thread, run_id, first)
        if end is not None and end.get("type") == "run_error":
            return {"__error__": {"error": end.get("code"), "message": end.get("message")}}
        return await values(thread)

    # A stateless run's thread is deleted when the run ends, as LangGraph's is — once
    # the response reading the thread (a stream's last ``values``, ``wait``'s result) is
    # over, or at once by that response when it was read to the end.
    discarding: set[asyncio.Task[None]] = set()

    async def discard(thread: str) -> None:
        await server.runs.discard(thread)

    def discard_after(thread: str, run_id: str, first: int, read: asyncio.Event) -> None:
        """Delete ``thread`` once its run has ended and ``read`` is set."""

        async def wait_then_discard() -> None:
            await ended(thread, run_id, first)
            await read.wait()
            await discard(thread)

        task = asyncio.create_task(wait_then_discard())
        discarding.add(task)
        task.add_done_callback(discarding.discard)

    async def create_run(request: Request) -> Response:
        thread, run_id, _, first, body, temporary = await create(
            request, request.path_params.get("thread_id")
        )
        record = await mine(request, thread)
        if temporary:  # nobody reads it here: it goes when the run ends
            read = asyncio.Event()
            read.set()
            discard_after(thread, run_id, first, read)
        return JSONResponse(run_json(thread, run_id, "running", record, body.get("metadata") or {}))

    async def stream_run(request: Request) -> Response:
        thread, run_id, modes, first, _, temporary = await create(
            request, request.path_params.get("thread_id")
        )
        if not temporary:
            return stream_response(thread, run_id, modes, first, 0)
        read = asyncio.Event()
        discard_after(thread, run_id, first, read)

        async def then_discard() -> AsyncIterator[str]:
            async for chunk in project(thread, run_id, modes, first, 0):
                yield chunk
            await ended(thread, run_id, first)
            await discard(thread)  # gone before the client sees the stream end

        return stream_response(thread, run_id, modes, first, 0, then_discard(), read.set)

    async def wait_run(request: Request) -> Response:
        thread, run_id, _, first, _, temporary = await create(
            request, request.path_params.get("thread_id")
        )
        read = asyncio.Event()
        if temporary:
            discard_after(thread, run_id, first, read)
        try:
            result = await outcome(thread, run_id, first)
            if temporary:
                await discard(thread)
        finally:
            read.set()
        return JSONResponse(
            result,
            headers={
                "Content-Location": url_path(RUN, thread_id=server.shown(thread), run_id=run_id)
            },
        )

    async def get_run(request: Request) -> Response:
        thread, record = await owned(request, request.path_params["thread_id"])
        run_id = check_id("run id", request.path_params["run_id"])
        run = await run_of(thread, run_id)
        return JSONResponse(run_json(thread, run_id, run["status"], record, run["metadata"]))

    async def list_runs(request: Request) -> Response:
        thread, record = await owned(request, request.path_params["thread_id"])
        runs = await runs_of(thread)
        return JSONResponse(
            [
                run_json(thread, r, run["status"], record, run["metadata"])
                for r, run in reversed(runs.items())
            ]
        )

    async def join_run(request: Request) -> Response:
        thread, _ = await owned(request, request.path_params["thread_id"])
        run_id = check_id("run id", request.path_params["run_id"])
        return JSONResponse(await outcome(thread, run_id, await first_event(thread, run_id)))

    async def join_stream(request: Request) -> Response:
        thread, _ = await owned(request, request.path_params["thread_id"])
        run_id = check_id("run id", request.path_params["run_id"])
        raw = [m for m in request.query_params.getlist("stream_mode") if m]
        modes = stream_modes(raw) if raw else modes_of.get(run_id, ["values"])
        after = request.headers.get("last-event-id") or "0"
        if not after.isdigit() or len(after) > 18:
            raise ApiError(
                400,
                "invalid_since",
                f"Last-Event-ID: expected an event number, got {after!r}"[:200],
            )
        first = await first_event(thread, run_id)
        await server.resume_after(thread, max(int(after), first - 1))
        return stream_response(thread, run_id, modes, first, int(after))

    async def cancel_run(request: Request) -> Response:
        thread, _ = await owned(request, request.path_params["thread_id"])
        run_id = check_id("run id", request.path_params["run_id"])
        first = await first_event(thread, run_id)
        if server.runs.running(thread) != run_id or not await server.runs.cancel(thread):
            raise ApiError(409, "no_run", f"run {run_id!r} of thread {thread!r} is not running")
        if request.query_params.get("wait") in ("1", "true"):
            await outcome(thread, run_id, first)
        return Response(status_code=202)

    t, r = THREAD, RUN
    return [
        Route("/assistants/search", search_assistants, methods=["POST"]),
        Route("/assistants/{assistant_id:id}", get_assistant, methods=["GET"]),
        Route("/threads", create_thread, methods=["POST"]),
        Route("/threads/search", search_threads, methods=["POST"]),
        Route(t, get_thread, methods=["GET"]),
        Route(t, delete_thread, methods=["DELETE"]),
        Route(t + "/state", get_state, methods=["GET"]),
        Route(t + "/state", update_state, methods=["POST"]),
        Route(t + "/state/checkpoint", post_state_at, methods=["POST"]),
        Route(t + "/state/{checkpoint_id:id}", get_state_at, methods=["GET"]),
        Route(t + "/history", history, methods=["POST"]),
        Route(t + "/runs", create_run, methods=["POST"]),
        Route(t + "/runs", list_runs, methods=["GET"]),
        Route(t + "/runs/stream", stream_run, methods=["POST"]),
        Route(t + "/runs/wait", wait_run, methods=["POST"]),
        Route("/runs", create_run, methods=["POST"]),
        Route("/runs/stream", stream_run, methods=["POST"]),
        Route("/runs/wait", wait_run, methods=["POST"]),
        Route(r, get_run, methods=["GET"]),
        Route(r + "/join", join_run, methods=["GET"]),
        Route(r + "/stream", join_stream, methods=["GET"]),
        Route(r + "/cancel", cancel_run, methods=["POST"]),
    ]
