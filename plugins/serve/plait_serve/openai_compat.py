"""An OpenAI-compatible API whose model is the agent: ``POST /v1/chat/completions`` and
``POST /v1/responses``, streamed or not, for clients that speak OpenAI's API.

The ``model`` is the agent's ``name``. The agent runs its own tools, so no ``tool_calls``
reach the client unless it asks: the answer is the run's assistant text (its messages
separated by a blank line). A streamed chat completion asked with ``"stream_tool_calls":
true`` (``extra_body``) also carries each tool call the agent makes as
``delta.tool_calls``, its arguments in fragments as the model writes them, each call
with an index of its own across the run; the completion still ends with ``stop`` (the
agent ran them), so a client must not run them again. A streamed response asked the same
way carries them as ``function_call`` items (``_response_stream``).

A conversation continues on a thread: name it with the ``X-Plait-Thread`` header (every
response carries it), or, for Responses, with ``previous_response_id``. On a new thread
the request's user and assistant messages are the history; on an existing one, only the
trailing user messages are new. A paused run answers with a text
naming what waits for approval and a ``plait`` field listing the pending interrupts; the
next request answers it with ``"resume": {"decisions": [...]}`` (``extra_body`` in
OpenAI's SDKs), checked like every resume.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from plait.lazy import lazy_exports
from plait.messages import AIMessage, AnyMessage, HumanMessage
from plait.runlog import END_TYPES
from plait_serve._app import Server
from plait_serve._http import ApiError, read_json, sse, sse_event
from plait_serve._response_stream import ResponseStream

__all__ = ["THREAD_HEADER"]

__getattr__ = lazy_exports(
    __name__,
    {},
    deprecated={
        "routes": (f"{__name__}:_routes", "it is internal: plait_serve.app(agent) mounts it")
    },
)

THREAD_HEADER = "X-Plait-Thread"
"""The header naming the thread a request continues; every response carries it."""
_ROLES = ("system", "developer", "user", "assistant", "tool")


# -- requests ----------------------------------------------------------------------------------


def _text(content: Any, where: str) -> str:
    """A message's content as text: a string, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif not (isinstance(part, Mapping) and isinstance(part.get("type"), str)):
                raise ApiError(
                    422, "invalid_request", f"{where}: expected content parts, got {part!r:.80}"
                )
        return "".join(texts)
    raise ApiError(
        422,
        "invalid_request",
        f"{where}: expected a string or a list of content parts, got {type(content).__name__}",
    )


def _conversation(items: Any, where: str) -> list[tuple[str, str]]:
    """``(role, text)`` per message of a chat ``messages`` list or a Responses ``input``."""
    if isinstance(items, str):
        return [("user", items)]
    if not isinstance(items, list) or not items:
        raise ApiError(
            422,
            "invalid_request",
            f"{where}: expected a non-empty list of messages, got {items!r:.80}",
        )
    found = []
    for index, item in enumerate(items):
        role = item.get("role") if isinstance(item, Mapping) else None
        if role not in _ROLES:
            raise ApiError(
                422,
                "invalid_request",
                f"{where}[{index}].role: expected one of {', '.join(_ROLES)}, got {role!r:.40}",
            )
        found.append((str(role), _text(item.get("content"), f"{where}[{index}].content")))
    return found


def _new_messages(conversation: list[tuple[str, str]]) -> Any:
    """What a run takes from the request, given the thread's messages: on a new thread
    the whole conversation (user and assistant turns; system prompts are the agent's
    own), on an existing one the trailing user messages."""

    def new(held: Sequence[AnyMessage]) -> list[AnyMessage]:
        if not held:
            return [
                HumanMessage(text) if role == "user" else AIMessage(text)
                for role, text in conversation
                if role in ("user", "assistant") and text
            ]
        trailing: list[AnyMessage] = []
        for role, text in reversed(conversation):
            if role != "user":
                break
            trailing.insert(0, HumanMessage(text))
        return trailing

    return new


def _answers(body: Mapping[str, Any]) -> dict[str | None, Any] | None:
    """The ``resume`` a request carries: ``{"decisions": [...]}`` (or any answer for a
    question); ``{"interrupt_id": ..., ...}`` names the interrupt it answers."""
    if "resume" not in body:
        return None
    resume = body["resume"]
    if isinstance(resume, Mapping) and "interrupt_id" in resume:
        rest = {k: v for k, v in resume.items() if k != "interrupt_id"}
        return {resume["interrupt_id"]: rest}
    return {None: resume}


def _check_model(server: Server, body: Mapping[str, Any]) -> None:
    if body.get("model") != server.agent.name:
        raise ApiError(
            404,
            "model_not_found",
            f"model {body.get('model')!r:.80} not found: this server's model is "
            f"{server.agent.name!r}, the agent",
        )


def _stream_flag(body: Mapping[str, Any]) -> bool:
    stream = body.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise ApiError(
            422, "invalid_request", f"stream: expected true or false, got {stream!r:.40}"
        )
    return bool(stream)


def _calls_flag(body: Mapping[str, Any], stream: bool) -> bool:
    """``stream_tool_calls``: whether a streamed answer shows the tool calls the agent
    makes (only when asked: a client would otherwise take them as calls for it to run)."""
    calls = body.get("stream_tool_calls", False)
    if not isinstance(calls, bool) or (calls and not stream):
        raise ApiError(
            422,
            "invalid_request",
            f"stream_tool_calls: expected true (with stream true) or false, got {calls!r:.40}",
        )
    return calls


# -- runs ----------------------------------------------------------------------------------------


def _paused_text(end: Mapping[str, Any]) -> str:
    waiting = []
    for pending in end.get("interrupts") or []:
        calls = pending.get("tool_calls") or []
        if calls:
            waiting += [f"{c['name']} (tool call {c['id']})" for c in calls]
        else:
            waiting.append(f"an answer to interrupt {pending['id']}")
    return (
        "[The run is paused: it waits for approval of "
        + ", ".join(waiting)
        + '. Answer with "resume": {"decisions": [...]} on this thread.]'
    )


def _plait(thread: str, end: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "thread_id": thread,
        "run_id": end.get("run_id"),
        "status": end.get("status", "error"),
        "interrupts": end.get("interrupts") or [],
    }


def _run_error(end: Mapping[str, Any], thread: str) -> Response:
    """A failed run: 500 with the run's (safe) error; OpenAI's SDKs are told not to retry
    (a retry would run the agent again)."""
    return JSONResponse(
        {"error": {"code": end.get("code", "run_error"), "message": end.get("message", "")}},
        status_code=500,
        headers={"x-should-retry": "false", THREAD_HEADER: thread},
    )


Piece = tuple[int, str | None, dict[str, Any] | None]


def _call_delta(event: Mapping[str, Any], index: int) -> dict[str, Any] | None:
    """The ``delta.tool_calls`` entry a run-log event of a tool call makes, if any:
    its start (id and name) or a fragment of its arguments; a call logged whole (it was
    not streamed) in one entry."""
    kind = event.get("type")
    if kind == "tool_args":
        return {"index": index, "function": {"arguments": event["delta"]}}
    start = {"index": index, "id": event.get("tool_call_id"), "type": "function"}
    if kind == "tool_call_start":
        return {**start, "function": {"name": event["name"], "arguments": ""}}
    if kind == "tool_call" and not event.get("streamed"):
        arguments = json.dumps(event["args"])
        return {**start, "function": {"name": event["name"], "arguments": arguments}}
    return None


async def _texts(
    server: Server, thread: str, after: int, *, calls: bool = False
) -> AsyncIterator[list[Piece]]:
    """Batches of ``(seq, text delta, None)`` for each piece of assistant text of the run
    (a blank line between messages), the last one ending with ``(seq, None, end event)``;
    with ``calls``, also ``(seq, None, {"type": "tool_calls", "delta": ..., "done": ...,
    "event": ...})`` for each run-log event of a tool call: ``delta`` its chat-completion
    piece (``_call_delta``) or None, ``done`` whether the call is whole (or dropped)."""
    written = False
    starts: dict[str, int] = {}  # message id -> the number of its message_start
    indexes: dict[str, int] = {}  # tool call id -> its index in the run's answer
    async for batch in server.runs.batches(thread, after):
        pieces: list[Piece] = []
        for seq, event in batch:
            kind = event.get("type")
            if calls and kind in ("tool_call_start", "tool_args", "tool_call", "tool_call_dropped"):
                index = indexes.setdefault(event["tool_call_id"], len(indexes))
                delta = _call_delta(event, index) if kind != "tool_call_dropped" else None
                done = kind != "tool_call_start" and kind != "tool_args"
                call = {"type": "tool_calls", "delta": delta, "done": done, "event": event}
                pieces.append((seq, None, call))
                continue
            if kind == "message_start":
                starts[event["message_id"]] = seq
            if kind == "message_start" and written:
                pieces.append((seq, "\n\n", None))
            elif kind == "step_restarted":
                # A stream cannot take text back: the text of the call made again after
                # its worker died follows the voided text, after a blank line. The
                # piece says where the void text begins, for the non-streamed answer.
                void = event["void_after"] + 1
                void = min(void, starts.get(event.get("message_id") or "", void))
                pieces.append((seq, "\n\n" if written else "", {"void_from": void}))
            elif kind == "text":
                written = True
                pieces.append((seq, event["delta"], None))
            elif kind == "run_finished" and event.get("status") == "interrupted":
                pieces.append((seq, ("\n\n" if written else "") + _paused_text(event), None))
                pieces.append((seq, None, event))
            elif kind in END_TYPES:
                pieces.append((seq, None, event))
        if pieces:
            yield pieces


async def _collect(server: Server, thread: str, after: int) -> tuple[str, dict[str, Any]]:
    """The run's whole text and its end event (a non-streamed answer)."""
    parts: list[tuple[int, str]] = []
    end: dict[str, Any] = {}
    async for pieces in _texts(server, thread, after):
        for seq, text, finished in pieces:
            if text is not None and finished is not None:  # a step restarted: void text
                parts = [(n, t) for n, t in parts if n < finished["void_from"]]
                while parts and parts[-1][1] == "\n\n":
                    parts.pop()
            elif text == "\n\n" and not parts:
                continue  # nothing before it stands
            elif text is not None:
                parts.append((seq, text))
            elif finished is not None:
                end = finished
    return "".join(text for _, text in parts), end


async def _start(
    server: Server, request: Request, body: Mapping[str, Any], thread: str, conversation: Any
) -> int:
    answers = _answers(body)
    new = _new_messages(conversation)

    async def prepare() -> Any:
        return await server.run_input(thread, answers=answers, new_messages=new)

    return await server.start(request, thread, prepare, run_id="run-" + uuid.uuid4().hex)


def _usage(end: Mapping[str, Any], prompt: str, completion: str) -> dict[str, int]:
    usage = end.get("usage") or {}
    inputs, outputs = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    return {prompt: inputs, completion: outputs, "total_tokens": inputs + outputs}


# -- chat completions ----------------------------------------------------------------------------


def _chunk(
    ident: str, created: int, model: str, delta: dict[str, Any], finish: str | None
) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def chat_completions(server: Server, request: Request) -> Response:
    body = await read_json(request, server.max_body)
    _check_model(server, body)
    conversation = _conversation(body.get("messages"), "messages")
    stream = _stream_flag(body)
    calls = _calls_flag(body, stream)
    thread = await _header_thread(server, request)
    first = await _start(server, request, body, thread, conversation)
    shown = server.shown(thread)
    ident, created, model = f"chatcmpl-{shown}-{first}", int(time.time()), server.agent.name
    if stream:

        async def chunks() -> AsyncIterator[str]:
            yield sse_event(
                _chunk(ident, created, model, {"role": "assistant", "content": ""}, None)
            )
            async for pieces in _texts(server, thread, first - 1, calls=calls):
                out = []
                for seq, text, end in pieces:
                    if text is not None:
                        delta: dict[str, Any] = {"content": text}
                        out.append(sse_event(_chunk(ident, created, model, delta, None), seq=seq))
                    elif end is not None and end["type"] == "tool_calls":
                        if end["delta"] is None:
                            continue
                        calls_delta = {"tool_calls": [end["delta"]]}
                        chunk = _chunk(ident, created, model, calls_delta, None)
                        out.append(sse_event(chunk, seq=seq))
                    elif end is not None and end["type"] == "run_error":
                        error = {"error": {"code": end.get("code"), "message": end.get("message")}}
                        out.append(sse_event(error, seq=seq))
                    elif end is not None:
                        last = _chunk(ident, created, model, {}, "stop")
                        last["usage"] = _usage(end, "prompt_tokens", "completion_tokens")
                        last["plait"] = _plait(shown, end)
                        out.append(sse_event(last, seq=seq))
                yield "".join(out)
            yield "data: [DONE]\n\n"

        response = sse(chunks())
        response.headers[THREAD_HEADER] = shown
        return response
    text, end = await _collect(server, thread, first - 1)
    if end.get("type") != "run_finished":
        return _run_error(end, shown)
    completion = {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(end, "prompt_tokens", "completion_tokens"),
        "plait": _plait(shown, end),
    }
    return JSONResponse(completion, headers={THREAD_HEADER: shown})


# -- responses -------------------------------------------------------------------------------------


async def _header_thread(server: Server, request: Request) -> str:
    """The stored id of the thread ``X-Plait-Thread`` names (a new one without it)."""
    return await server.thread(
        request, request.headers.get(THREAD_HEADER) or uuid.uuid4().hex, THREAD_HEADER
    )


def response_id(thread: str, first: int) -> str:
    """A response's id names its thread (so ``previous_response_id`` finds it) and its
    run's first event."""
    encoded = base64.urlsafe_b64encode(thread.encode()).decode().rstrip("=")
    return f"resp_{encoded}.{first}"


def thread_of(previous: Any) -> tuple[str, int]:
    """The thread a ``previous_response_id`` names and its run's first event (404 if it
    names none)."""
    if isinstance(previous, str) and previous.startswith("resp_") and "." in previous:
        encoded, first = previous[5:].rsplit(".", 1)
        try:
            thread = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            pass
        else:
            if first.isdigit():
                return thread, int(first)
    raise ApiError(404, "not_found", f"previous_response_id {previous!r:.80} not found")


async def _latest_run(server: Server, thread: str, after: int) -> int | None:
    """The first event of the thread's last run if one started after event ``after``."""
    latest = None
    while rows := await server.runs.call(
        server.runs.log.read_events, thread, after=after, limit=500
    ):
        after = rows[-1][0]
        latest = next((n for n, e in reversed(rows) if e.get("type") == "run_started"), latest)
    return latest


def _message(item: str, text: str, status: str) -> dict[str, Any]:
    """The answer's message item: the run's text."""
    return {
        "type": "message",
        "id": item,
        "role": "assistant",
        "status": status,
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _response(
    ident: str, created: int, model: str, text: str, status: str, previous: str | None
) -> dict[str, Any]:
    output = [_message("msg_" + ident[5:], text, "completed")] if status == "completed" else []
    return {
        "id": ident,
        "object": "response",
        "created_at": created,
        "model": model,
        "status": status,
        "output": output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "previous_response_id": previous,
    }


async def responses(server: Server, request: Request) -> Response:
    body = await read_json(request, server.max_body)
    _check_model(server, body)
    previous = body.get("previous_response_id")
    if previous is not None:
        named, answered = thread_of(previous)
        thread = await server.require(request, named)
        latest = await _latest_run(server, thread, answered)
        if latest is not None:
            # The thread holds what came after that response: going on from it would
            # answer with those turns in the context, not the branch the client asked for.
            raise ApiError(
                409,
                "not_latest_response",
                f"previous_response_id {previous!r}: its conversation went on after it; "
                f"continue from its latest response, {response_id(named, latest)!r}",
            )
    else:
        thread = await _header_thread(server, request)
    conversation: list[tuple[str, str]] = []
    if not ("resume" in body and "input" not in body):  # a resume needs no new input
        conversation = _conversation(body.get("input"), "input")
    stream = _stream_flag(body)
    calls = _calls_flag(body, stream)
    first = await _start(server, request, body, thread, conversation)
    shown = server.shown(thread)
    ident, created, model = response_id(shown, first), int(time.time()), server.agent.name

    def finished(text: str, end: Mapping[str, Any]) -> dict[str, Any]:
        done = _response(ident, created, model, text, "completed", previous)
        done["usage"] = _usage(end, "input_tokens", "output_tokens")
        done["plait"] = _plait(shown, end)
        return done

    if stream:
        item = "msg_" + ident[5:]

        def failed(text: str) -> dict[str, Any]:
            failure = _response(ident, created, model, text, "failed", previous)
            failure["output"] = [_message(item, text, "incomplete")] if text else []
            return failure

        streamer = ResponseStream(
            item,
            _response(ident, created, model, "", "in_progress", previous),
            finished,
            failed,
        )

        async def events() -> AsyncIterator[str]:
            yield "".join(streamer.start())
            async for pieces in _texts(server, thread, first - 1, calls=calls):
                yield "".join(out for piece in pieces for out in streamer.feed(*piece))

        response = sse(events())
        response.headers[THREAD_HEADER] = shown
        return response
    text, end = await _collect(server, thread, first - 1)
    if end.get("type") != "run_finished":
        return _run_error(end, shown)
    return JSONResponse(finished(text, end), headers={THREAD_HEADER: shown})


def _routes(server: Server) -> list[Route]:
    """This protocol's routes on ``server``, which ``plait_serve.app`` mounts:
    ``/v1/chat/completions``, ``/v1/responses`` and ``/v1/models``."""

    async def chat(request: Request) -> Response:
        return await chat_completions(server, request)

    async def respond(request: Request) -> Response:
        return await responses(server, request)

    async def models(request: Request) -> Response:
        model = {"id": server.agent.name, "object": "model", "created": 0, "owned_by": "plait"}
        return JSONResponse({"object": "list", "data": [model]})

    return [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/responses", respond, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ]
