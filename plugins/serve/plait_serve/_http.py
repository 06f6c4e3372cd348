"""HTTP plumbing every protocol shares: one JSON error shape, bounded JSON bodies, the
reconnect position, server-sent events numbered by the run log, and ids in paths.

An id in a path (``{thread_id:id}``) is one path segment, encoded as
``urllib.parse.quote(id, safe="")`` (LangGraph's SDK sends it so): an id may hold ``/``,
``?``, ``#``, ``%`` or spaces. The ASGI server hands the app the decoded path, in which
an encoded ``/`` is a separator; ``EncodedPath`` routes on the path as the client
encoded it instead, and the ``id`` convertor decodes each id once. URLs the server
gives (``Location``) are built from the same route and convertor (``url_path``).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import compile_path, replace_params
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "ApiError",
    "EncodedPath",
    "error_response",
    "read_json",
    "since",
    "sse",
    "sse_event",
    "url_path",
]

MAX_ID = 256
"""The longest thread or run id accepted (characters)."""


class ApiError(Exception):
    """A request the server refuses: ``status`` (a 4xx), a short ``code`` and one sentence."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request's body as a JSON object: 413 past ``limit`` bytes (read no further),
    400 if it is not JSON, 422 if it is not an object."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise ApiError(413, "body_too_large", f"the request body exceeds {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "body_too_large", f"the request body exceeds {limit} bytes")
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise ApiError(400, "invalid_json", f"the request body is not JSON: {detail}") from None
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", f"expected a JSON object, got {type(data).__name__}")
    return data


def _segment(value: str) -> str:
    """``value`` as one path segment: percent-encoded, ``/`` included; a segment of dots
    only is encoded too (clients would take ``..`` for the parent)."""
    quoted = urllib.parse.quote(value, safe="")
    return "%2E" * len(quoted) if quoted.strip(".") == "" else quoted


class _Id(Convertor[str]):
    """A path parameter that is an id: one encoded segment, decoded once."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return urllib.parse.unquote(value)

    def to_string(self, value: str) -> str:
        return _segment(value)


register_url_convertor("id", _Id())


def url_path(template: str, **ids: str) -> str:
    """The path of the route ``template`` (``/threads/{thread_id:id}``) for ``ids``,
    each encoded as its route decodes it."""
    _, path_format, convertors = compile_path(template)
    path, unused = replace_params(path_format, convertors, dict(ids))
    if unused:
        raise ValueError(f"{template} has no parameter(s) {', '.join(unused)}")
    return path


class EncodedPath:
    """ASGI: the router matches the path as the client encoded it (each segment
    normalised to ``_segment``'s encoding), so ``/threads/a%2Fb/state`` is the thread
    ``a/b``'s state rather than no route. Only the router sees this path; the
    middleware before it (keys, origins) sees the decoded one. A path whose raw form
    is missing or does not decode to the decoded one is left as it is."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path")
        root = scope.get("root_path", "")
        if scope["type"] == "http" and raw and urllib.parse.quote(root, safe="/") == root:
            try:
                segments = [
                    _segment(urllib.parse.unquote(part, errors="strict"))
                    for part in raw.decode("ascii").split("/")
                ]
            except UnicodeError:
                segments = None
            if segments is not None:
                path = "/".join(segments)
                if urllib.parse.unquote(path) == scope["path"]:
                    scope = {**scope, "path": path}
        await self.app(scope, receive, send)


def check_id(what: str, value: Any) -> str:
    """``value`` as a thread or run id: a non-empty string of at most ``MAX_ID`` characters."""
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        shown = value if not isinstance(value, str) else f"a string of {len(value)} characters"
        raise ApiError(
            422,
            "invalid_request",
            f"{what}: expected a non-empty string of at most {MAX_ID} characters, got {shown!r}",
        )
    return value


def since(request: Request) -> int:
    """Where a reconnecting client resumes: the ``Last-Event-ID`` header or ``?since=``
    (the number of the last event it received; 0 for all)."""
    raw = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
    if not raw.isdigit() or len(raw) > 18:
        raise ApiError(
            400,
            "invalid_since",
            f"Last-Event-ID / since: expected the number of the last event received, got {raw!r}",
        )
    return int(raw)


def sse_event(
    data: Mapping[str, Any] | str, *, seq: int | None = None, event: str | None = None
) -> str:
    """One server-sent event; ``seq`` (the run-log number) is its ``id``."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = "" if seq is None else f"id: {seq}\n"
    if event is not None:
        head += f"event: {event}\n"
    return f"{head}data: {text}\n\n"


class _EventStream(StreamingResponse):
    """A streaming response that calls ``on_close`` once it is over, however it ended:
    sent whole, its client gone, or never begun (then ``chunks`` never ran, so a
    ``finally`` in it could not tell)."""

    def __init__(self, chunks: AsyncIterator[str], on_close: Callable[[], None]) -> None:
        super().__init__(
            chunks,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.on_close()


def sse(
    chunks: AsyncIterator[str], *, on_close: Callable[[], None] | None = None
) -> StreamingResponse:
    """A ``text/event-stream`` response of ``chunks``; proxies are asked not to buffer it.
    ``on_close()`` is called once the response is over, whether or not its client read
    it to the end."""
    return _EventStream(chunks, on_close or (lambda: None))
