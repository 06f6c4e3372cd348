"""``plait_serve.app(agent)``: the ASGI app, the ``Server`` every protocol module gets,
and plait's own run-log routes.

A protocol is one module listed in ``PROTOCOLS``, with ``_routes(server) -> list[Route]``
(``ag_ui``, ``openai_compat``). It reads the caller from ``server.owner(request)``, maps
the thread id a client names to the stored one with ``server.thread`` (and back with
``server.shown``), checks a thread is the caller's with ``server.require``, builds a
run's input with ``server.run_input`` (which checks a resume against the pending
interrupt) and starts it with ``server.start``, then streams a projection of
``server.runs.batches`` (the run log from a number on). Authentication (``_auth``),
CORS, body limits, the run limit and
the JSON error shape are applied here, once, for all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import math
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from plait import Agent, Command
from plait.errors import ConfigError
from plait.lazy import define
from plait.messages import AnyMessage, SystemMessage
from plait_serve._auth import LOCAL_OWNER, AuthMiddleware, key_id, load_keys, scoped_id, unscoper
from plait_serve._http import (
    ApiError,
    EncodedPath,
    check_id,
    error_response,
    read_json,
    since,
    sse,
    sse_event,
)
from plait_serve._interrupts import ResumeRefused, check_resume, pending_interrupts
from plait_serve._origin import OriginGuard
from plait_serve._runlog import CREATED, REGISTRY, SWEEP_EVERY, Busy, Full, NotFound, RunLog

__all__ = ["MAX_BODY", "MAX_RUNS", "PROTOCOLS", "Server", "app", "client_messages"]

log = logging.getLogger("plait_serve")

T = TypeVar("T")

MAX_BODY = 1_000_000
"""The largest request body accepted by default (bytes); a larger one is a 413."""

MAX_RUNS = 256
"""How many runs may go on at once by default; one more is a 429."""

PROTOCOLS = (
    "plait_serve.ag_ui",
    "plait_serve.openai_compat",
    "plait_serve.agent_protocol",
    "plait_serve.a2a_protocol",
)
"""The protocol modules served, each with ``_routes(server) -> list[Route]``."""

PUBLIC_PATHS = frozenset({"/healthz"})


def client_messages(messages: Iterable[AnyMessage]) -> list[AnyMessage]:
    """What a client's messages give a thread, on every protocol: all but system ones.
    The system prompt is the agent's own; a client's ``system`` or ``developer`` message
    would speak to the model with the operator's voice, so it is dropped."""
    return [message for message in messages if not isinstance(message, SystemMessage)]


class _Cors(CORSMiddleware):
    """Starlette's CORS, its refused preflight a JSON error like every other 4xx."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        refused = bytes(response.body).decode().removeprefix("Disallowed CORS ")
        error = error_response(
            400,
            "cors_refused",
            f"CORS preflight refused: {refused} not allowed (the allowed origins are "
            "those given with --cors-origin)",
        )
        for name, value in response.headers.items():
            if name.startswith("access-control-") or name == "vary":
                error.headers[name] = value
        return error


@define(eq=False)
class Server:
    """What every protocol module works with: the agent, its run log, the limits."""

    agent: Agent
    runs: RunLog
    keys: tuple[str, ...]
    max_body: int
    _prefixes: tuple[str, ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._prefixes = tuple(scoped_id(key_id(key), "") for key in self.keys)

    @property
    def adopt(self) -> bool:
        """Whether a thread made outside the server may be served (no keys: one owner)."""
        return not self.keys

    @property
    def scoped(self) -> bool:
        """Whether each key has its own thread ids (several keys): see ``thread``."""
        return len(self.keys) > 1

    async def thread(self, request: Request, thread_id: Any, what: str = "thread id") -> str:
        """The stored id of the thread the caller names ``thread_id`` (checked with
        ``check_id``): the one mapping of every route. Without keys it is ``thread_id``.
        With keys it is the caller's scoped id (``_auth.scoped_id``) if that thread
        exists, else ``thread_id`` itself if the caller owns that thread (made while the
        server had one key, or before this mapping), else where the caller's new thread
        goes: scoped with several keys, ``thread_id`` with one. So another key's thread
        is never reached, and no answer tells the caller its id is taken. The server's
        own lists (``REGISTRY``, ``CREATED``) are no client's threads: naming one is a
        ``422``."""
        name = check_id(what, thread_id)
        if name in (REGISTRY, CREATED):
            raise ApiError(
                422,
                "invalid_request",
                f"{what}: expected an id other than {name!r}, one of the server's own lists "
                "of threads",
            )
        if not self.keys:
            return name
        owner = self.owner(request)
        scoped = scoped_id(owner, name)
        if await self.runs.owner(scoped) is not None:
            return scoped
        if await self.runs.owner(name) == owner:
            return name
        return scoped if self.scoped else name

    def shown(self, thread: str) -> str:
        """The id a client names the stored thread ``thread`` by (``thread``, reversed)."""
        for prefix in self._prefixes:
            if thread.startswith(prefix):
                return thread[len(prefix) :]
        return thread

    def tell(self, value: T) -> T:
        """``value`` (an error's text, a thread's state as JSON) as its client reads it:
        every stored thread id it holds named as the client names the thread
        (``_auth.unscoper``). The one rewrite of what leaves the server from storage,
        applied once where each is read: the run log's events and thread records as
        ``RunLog`` reads them (``RunLog.tell``), a thread's state where the Agent
        Protocol reads it, error texts in the error handlers. Ids the server names
        itself go through ``shown`` instead."""
        told: T = self.runs.tell(value)
        return told

    def owner(self, request: Request) -> str:
        """The caller's owner id (set by the auth middleware)."""
        owner = request.scope.get("state", {}).get("owner")
        return owner if isinstance(owner, str) else LOCAL_OWNER

    async def resume_after(self, thread_id: str, after: int) -> int:
        """``after``, where a reconnecting client resumes, or a ``410`` if the events
        after it were forgotten (``keep_events``)."""
        forgotten = await self.runs.kept(thread_id, after)
        if forgotten is not None:
            raise ApiError(
                410,
                "events_forgotten",
                f"thread {thread_id!r}: the events after {after} up to {forgotten} were "
                f"forgotten (the server keeps the last {self.runs.keep_events} of a "
                f"thread); resume after {forgotten}, or read the thread's state",
            )
        return after

    async def start(
        self,
        request: Request,
        thread_id: str,
        prepare: Callable[[], Awaitable[Any]],
        *,
        run_id: str,
        metadata: dict[str, Any] | None = None,
        temporary: bool = False,
    ) -> int:
        """Start a run for the caller (see ``RunLog.start``); a new thread becomes theirs."""
        return await self.runs.start(
            thread_id,
            prepare,
            run_id=run_id,
            owner=self.owner(request),
            adopt=self.adopt,
            metadata=metadata,
            temporary=temporary,
        )

    async def run_input(
        self,
        thread_id: str,
        *,
        answers: Mapping[str | None, Any] | None,
        new_messages: Callable[[Sequence[AnyMessage]], list[AnyMessage]],
    ) -> Any:
        """A run's input, for a ``prepare`` function: ``Command(resume=...)`` for
        ``answers`` (``{interrupt_id or None: answer}``) checked against the thread's
        pending interrupts, else the messages ``new_messages(thread's messages)`` gives
        (``client_messages``: no system message) — refused while the thread is paused
        (answer it first) or when there are none."""
        pending = await self.runs.call(pending_interrupts, self.agent, thread_id)
        if answers is not None:
            return Command(resume=check_resume(thread_id, pending, answers))
        if pending:
            ids = ", ".join(p.id for p in pending)
            raise ResumeRefused(
                f"thread {thread_id!r} is paused at interrupt(s) {ids}: answer them with "
                "a resume before sending new messages"
            )
        state = await self.runs.call(self.agent.get_state, thread_id)
        messages = client_messages(new_messages(state["messages"]))
        if not messages:
            raise ApiError(
                422,
                "invalid_request",
                "expected a user message the thread does not hold yet (or a resume), got none",
            )
        return messages

    async def require(self, request: Request, thread_id: Any) -> str:
        """The stored id of the caller's thread ``thread_id`` (``thread``), else 404."""
        thread = await self.thread(request, thread_id)
        await self.runs.require(thread, self.owner(request))
        return thread


def _routes(server: Server) -> list[Route]:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True, "agent": server.agent.name})

    async def events(request: Request) -> Response:
        """The raw run log from ``since`` on: every run (``?follow=all``, the default) or
        until the end of the next one (``?follow=run``)."""
        thread = await server.require(request, request.path_params["thread_id"])
        after = await server.resume_after(thread, since(request))
        one_run = request.query_params.get("follow", "all") == "run"

        async def chunks() -> AsyncIterator[str]:
            async for seq, event in server.runs.follow(thread, after, one_run=one_run):
                yield sse_event(event, seq=seq)

        return sse(chunks())

    async def cancel(request: Request) -> Response:
        thread = await server.require(request, request.path_params["thread_id"])
        run_id = server.runs.running(thread)
        if run_id is None or not await server.runs.cancel(thread):
            raise ApiError(409, "no_run", f"thread {thread!r} has no run going on to cancel")
        shown = server.shown(thread)
        return JSONResponse({"thread_id": shown, "run_id": run_id, "status": "cancelling"})

    async def fork(request: Request) -> Response:
        """A new thread of the caller's that is this one as it was after the step
        ``checkpoint_id`` (``agent.fork``): time travel, from the step on."""
        thread = await server.require(request, request.path_params["thread_id"])
        body = await read_json(request, server.max_body)
        raw = body.get("checkpoint_id")
        if isinstance(raw, bool) or not (
            isinstance(raw, int) or (isinstance(raw, str) and raw.isdigit() and len(raw) < 18)
        ):
            raise ApiError(
                422, "invalid_request", f"checkpoint_id: expected a step number, got {raw!r}"[:200]
            )
        new = await server.thread(request, body.get("thread_id") or uuid.uuid4().hex, "thread_id")
        if await server.runs.owner(new) is not None:
            raise ApiError(409, "thread_exists", f"thread {new!r} already exists")
        try:
            await server.runs.call(server.agent.fork, thread, int(raw), new)
        except ConfigError as exc:
            raise ApiError(409, "no_history", " ".join(str(exc).split())) from None
        except (ValueError, KeyError) as exc:
            raise ApiError(404, "not_found", " ".join(str(exc).split())[:300]) from None
        metadata = {"forked_from": server.shown(thread), "checkpoint_id": str(raw)}
        await server.runs.claim(new, server.owner(request), adopt=True, metadata=metadata)
        return JSONResponse({"thread_id": server.shown(new), **metadata})

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/plait/threads/{thread_id:id}/events", events, methods=["GET"]),
        Route("/plait/threads/{thread_id:id}/cancel", cancel, methods=["POST"]),
        Route("/plait/threads/{thread_id:id}/fork", fork, methods=["POST"]),
    ]


def _told(request: Request, status: int, code: str, message: str) -> Response:
    """The JSON error, its thread ids as the client names them (``Server.tell``)."""
    server: Server = request.app.state.server
    return error_response(status, code, server.tell(message))


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _told(request, exc.status, exc.code, exc.message)


async def _not_found(request: Request, exc: Exception) -> Response:
    return _told(request, 404, "not_found", f"thread {str(exc)!r} not found")


async def _busy(request: Request, exc: Exception) -> Response:
    return _told(request, 409, "thread_busy", f"thread {str(exc)!r} has a run going on")


async def _full(request: Request, exc: Exception) -> Response:
    response = error_response(
        429, "too_many_runs", f"the server runs its maximum of {exc} runs at once: retry later"
    )
    response.headers["Retry-After"] = "1"
    return response


async def _refused(request: Request, exc: Exception) -> Response:
    return _told(request, 409, "resume_refused", str(exc))


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail))


async def _internal(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "internal server error")


def app(
    agent: Agent,
    *,
    keys: Iterable[str] | None = None,
    keys_file: str | os.PathLike[str] | None = None,
    cors_origins: Iterable[str] = (),
    max_body: int = MAX_BODY,
    max_runs: int = MAX_RUNS,
    ui: bool = False,
    keep_events: int | None = None,
    sweep_every: float | None = SWEEP_EVERY,
) -> Starlette:
    """The ASGI app serving ``agent``: AG-UI at ``/ag-ui``, an OpenAI-compatible API at
    ``/v1`` (chat completions, responses), the run log at ``/plait/threads/{id}/events``.

    :param keys: the API keys callers present as ``Authorization: Bearer``; by default
        those of ``keys_file`` and of ``PLAIT_SERVE_KEYS``. With none, every caller is
        one local owner — bind such a server to loopback only (``plait serve`` refuses
        any other address).
    :param cors_origins: the browser origins allowed to call the server (none: CORS
        requests are refused).
    :param max_body: the largest request body in bytes (larger: 413).
    :param max_runs: how many runs may go on at once (one more: 429).
    :param ui: also serve the development page at ``/`` (``plait dev``): a client of
        the same AG-UI and Agent Protocol routes, shipped in the wheel; the run log then
        also records each model call and tool run for its timeline.
    :param keep_events: keep about the last ``keep_events`` run-log events of each
        thread: when a run ends, the events of the thread's older finished runs before
        them are forgotten, whole runs at a time (``None``: all are kept). A reconnect
        asking for forgotten events is a ``410``.
    :param sweep_every: seconds between sweeps for the threads of stateless runs that
        a stopped server left on the checkpointer (one sweep runs as the server starts,
        then one every ``sweep_every`` s); ``None``: only the one at start.
    """
    limits = [("max_body", max_body), ("max_runs", max_runs)]
    if keep_events is not None:
        limits.append(("keep_events", keep_events))
    for option, value in limits:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"plait-serve: {option}: expected a positive int, got {value!r}")
    if sweep_every is not None and (
        not isinstance(sweep_every, int | float)
        or isinstance(sweep_every, bool)
        or not 0 < sweep_every < math.inf
    ):
        raise ConfigError(
            "plait-serve: sweep_every: expected a positive number of seconds or None, "
            f"got {sweep_every!r}"
        )
    origins = [cors_origins] if isinstance(cors_origins, str) else list(cors_origins)
    if "*" in origins:
        raise ConfigError(
            "plait-serve: cors_origins: expected explicit origins such as "
            "'https://app.example.com', got '*'"
        )
    keyring = load_keys(keys, keys_file=keys_file)
    runs = RunLog(
        agent, max_runs=max_runs, timeline=ui, keep_events=keep_events, tell=unscoper(keyring)
    )
    server = Server(agent, runs, keyring, max_body)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # Stateless runs' threads a stopped server left are deleted in the background,
        # now and every sweep_every s.
        sweeping = asyncio.create_task(server.runs.sweeping(sweep_every))
        try:
            yield
        finally:
            sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeping
            await server.runs.aclose()

    public = PUBLIC_PATHS | {"/", "/ui/app.js", "/ui/app.css"} if ui else PUBLIC_PATHS
    middleware = [
        Middleware(OriginGuard, origins=origins, loopback_only=not server.keys),
        Middleware(AuthMiddleware, keys=server.keys, public=public),
        Middleware(EncodedPath),  # last: only the router matches the encoded path
    ]
    if origins:
        middleware.insert(
            0,
            Middleware(
                _Cors,
                allow_origins=origins,
                allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "Last-Event-ID",
                    "X-Api-Key",
                    "X-Plait-Thread",
                ],
                expose_headers=["X-Plait-Thread", "Location", "Content-Location"],
            ),
        )
    modules = [*PROTOCOLS, "plait_serve._ui"] if ui else list(PROTOCOLS)
    application = Starlette(
        routes=[
            *_routes(server),
            *(route for name in modules for route in importlib.import_module(name)._routes(server)),
        ],
        middleware=middleware,
        exception_handlers={
            ApiError: _api_error,
            NotFound: _not_found,
            Busy: _busy,
            Full: _full,
            ResumeRefused: _refused,
            HTTPException: _http,
            Exception: _internal,
        },
        lifespan=lifespan,
    )
    application.state.server = server
    return application
