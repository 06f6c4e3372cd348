"""One MCP server's session: started, owned and closed by one task on the MCP loop.

The owner task enters the SDK's ``Client`` (which enters the transport: a subprocess or an
HTTP session) and waits until told to stop, then exits it — the same task both times.
Calls are made from other tasks on the same loop; the session serves them concurrently.
A session that drops (the process died, the HTTP session ended) is started again by the
next call; the call in flight when it dropped is answered with an error, never re-sent,
because the server may already have acted on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from typing import Any, TextIO, cast

import anyio
import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    Tool,
)

from plait.options import show
from plait_mcp import _loop
from plait_mcp._server_config import ServerConfig

__all__ = ["CallTimeout", "Connection", "ConnectionLost", "ServerUnavailable"]

log = logging.getLogger("plait_mcp")

_STOP_GRACE = 5.0
"""Seconds a session has to close cleanly before its owner task is cancelled."""


class ServerUnavailable(Exception):
    """The server could not be started, reached or listed (text: what failed)."""


class ConnectionLost(Exception):
    """The session dropped while a call was in flight."""


class CallTimeout(Exception):
    """A call took longer than the server's ``timeout``."""


def describe(error: BaseException) -> str:
    """A one-line account of ``error``, exception groups flattened to their leaves."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(error)
    parts = []
    for leaf in leaves:
        text = _validation(leaf) or str(leaf).strip()
        parts.append(f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__)
    return "; ".join(dict.fromkeys(parts))


def _validation(error: BaseException) -> str | None:
    """A pydantic ``ValidationError`` (an answer the SDK found not to be valid MCP) in one
    line: ``tools.0.inputSchema.properties: Input should be a valid dictionary, got 'x'``."""
    errors = getattr(error, "errors", None)
    if type(error).__name__ != "ValidationError" or not callable(errors):
        return None
    problems = []
    for problem in errors():
        where = ".".join(str(part) for part in problem.get("loc", ()))
        problems.append(f"{where}: {problem.get('msg')}, got {show(problem.get('input'))}")
    return f"{getattr(error, 'title', 'the answer')} is not valid MCP: " + "; ".join(problems)


class Connection:
    """The session with one server, for one agent."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.connects = 0
        """How many times a session was started (1 + reconnections)."""
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._closed = False
        self._stderr: TextIO | None = None
        _loop.close_at_exit(self)

    # -- lifecycle (all on the MCP loop) ---------------------------------------------------

    async def session(self) -> Client:
        """The live session, started (again) if there is none."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._closed:
                raise ServerUnavailable("its session was closed (the agent was closed)")
            if self._client is None:
                await self._start()
            assert self._client is not None
            return self._client

    async def _start(self) -> None:
        await self._end()
        stop = asyncio.Event()
        started: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        owner = asyncio.create_task(self._own(started, stop), name=f"plait-mcp {self.config.name}")
        self._owner, self._stop = owner, stop
        owner.add_done_callback(self._owner_done)
        try:
            client = await asyncio.wait_for(asyncio.shield(started), self.config.connect_timeout)
        except TimeoutError:
            await self._end()
            raise ServerUnavailable(
                f"it did not answer within connect_timeout ({self.config.connect_timeout:g} s)"
                + self._stderr_tail()
            ) from None
        except Exception as exc:
            await self._end()
            raise ServerUnavailable(describe(exc) + self._stderr_tail()) from exc
        self._client = client
        self.connects += 1

    async def _own(self, started: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """The owner task: enter the session, wait for ``stop``, exit it."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = Client(
                    await self._transport(stack),
                    elicitation_callback=_mid_call_elicitation,
                    cache=None,
                )
                await stack.enter_async_context(client)
                started.set_result(client)
                await stop.wait()
        except Exception as exc:
            if not started.done():
                started.set_exception(exc)
            else:
                log.debug("MCP server %r: session ended: %s", self.config.name, describe(exc))
        finally:
            if not started.done():
                started.cancel()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        config = self.config
        if config.command is not None:
            if self._stderr is None:
                self._stderr = cast(
                    TextIO,
                    tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace"),
                )
            self._stderr.seek(0)
            self._stderr.truncate()
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=config.env, cwd=config.cwd
            )
            return stdio_client(params, errlog=self._stderr)
        assert config.url is not None
        http = httpx2.AsyncClient(headers=config.headers, timeout=httpx2.Timeout(30.0, read=300.0))
        await stack.enter_async_context(http)
        return streamable_http_client(config.url, http_client=http)

    def _owner_done(self, owner: asyncio.Task[None]) -> None:
        if owner is self._owner:  # the session ended on its own: the next call restarts it
            self._client = None
        if not owner.cancelled():
            owner.exception()  # retrieved, so asyncio does not warn

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(Exception):
            self._stderr.seek(0)
            lines = [line for line in self._stderr.read().splitlines() if line.strip()]
            if lines:
                return "; its stderr ends: " + " | ".join(lines[-5:])
        return ""

    async def _end(self) -> None:
        owner, stop = self._owner, self._stop
        self._owner = self._stop = None
        self._client = None
        if owner is None:
            return
        if stop is not None:
            stop.set()
        done, _ = await asyncio.wait([owner], timeout=_STOP_GRACE)
        if not done:
            owner.cancel()
            await asyncio.wait([owner], timeout=_STOP_GRACE)

    async def aclose(self) -> None:
        """End the session (the subprocess exits, the HTTP session is deleted)."""
        self._closed = True
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await self._end()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        """``aclose`` from any thread but the MCP loop's."""
        if self._owner is None and self._stderr is None:
            self._closed = True
            return
        _loop.run(self.aclose(), timeout=2 * _STOP_GRACE + 5)

    # -- requests --------------------------------------------------------------------------

    async def list_tools(self) -> list[Tool]:
        client = await self.session()
        tools: list[Tool] = []
        cursor: str | None = None
        try:
            while True:
                page = await asyncio.wait_for(
                    client.list_tools(cursor=cursor), self.config.connect_timeout
                )
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
        except TimeoutError:
            raise ServerUnavailable(
                f"listing its tools took longer than connect_timeout "
                f"({self.config.connect_timeout:g} s)"
            ) from None
        except Exception as exc:
            raise ServerUnavailable(f"listing its tools failed: {describe(exc)}") from exc

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress: Any = None,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
    ) -> CallToolResult | InputRequiredResult:
        client = await self.session()
        try:
            result = await client.session.call_tool(
                name,
                arguments,
                read_timeout_seconds=self.config.timeout,
                progress_callback=progress,
                input_responses=input_responses,
                request_state=request_state,
                allow_input_required=True,
            )
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise CallTimeout() from exc
            if exc.code == CONNECTION_CLOSED:
                await self._drop(client)
                raise ConnectionLost(describe(exc)) from exc
            raise
        except (
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            httpx2.HTTPError,
            OSError,
        ) as exc:
            await self._drop(client)
            raise ConnectionLost(describe(exc)) from exc
        if not isinstance(result, (CallToolResult, InputRequiredResult)):
            raise MCPError(code=-32603, message=f"unexpected result type {type(result).__name__}")
        return result

    async def _drop(self, client: Client) -> None:
        assert self._lock is not None
        async with self._lock:
            if self._client is client:
                await self._end()


async def _mid_call_elicitation(context: Any, params: Any) -> ErrorData:
    """Servers on protocols before 2026-07-28 ask mid-call; plait answers elicitation only
    through the 2026-07-28 input-required round trip, which can pause the run."""
    return ErrorData(
        code=-32600,
        message="plait-mcp answers elicitation only over protocol 2026-07-28 (input required)",
    )
