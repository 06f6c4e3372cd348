"""The innermost model call and tool call: what the ``wrap_model_call`` and
``wrap_tool_call`` chains end in, sync and async.

A model call streams only when someone reads its chunks (``_stream.stream_sink``); a tool
call checks its arguments, runs the function within its timeout and turns what it
returned into the ``ToolMessage`` (or ``Command``) that answers the call. Tool runs go
through ``plait.effects`` performers when one is installed (model calls do so inside
``ChatModel`` itself).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from plait import _performers, _tool_threads
from plait._compose import Layers, transform_async, transform_sync
from plait._stream import CancelOnLeave, ReaderGone, in_tool_call, run_sink, stream_sink
from plait.messages import ToolMessage, assemble_chunks
from plait.tools import mark_raised_by_tool
from plait.types import (
    Command,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
    ToolRun,
    ToolRuntime,
)

if TYPE_CHECKING:
    from plait._bridge import LoopThread
    from plait.tools import Tool


class Innermost:
    """The calls at the centre of the wrap chains, for one compiled agent;
    ``stream_layers`` are the ``transform_model_stream`` hooks a streamed model call's
    chunks pass through. A plain class: one is made per agent and never compared or
    shown, and at import a plain class is made in a few microseconds (an attrs class
    compiles its methods, a named tuple each field's annotation)."""

    __slots__ = ("loops", "stream_layers", "tool_timeout", "tools_by_name")

    def __init__(
        self,
        tools_by_name: Mapping[str, Tool],
        tool_timeout: float | None,
        stream_layers: Layers,
        loops: LoopThread,
    ) -> None:
        self.tools_by_name = tools_by_name
        self.tool_timeout = tool_timeout
        self.stream_layers = stream_layers
        self.loops = loops

    # -- model -----------------------------------------------------------------------------

    def call_model(self, request: ModelRequest) -> ModelResponse:
        sink = stream_sink.get()
        kwargs = _model_kwargs(request)
        if sink is None:
            answer = request.model.invoke(request.messages, **kwargs)
            if _left():
                raise ReaderGone  # cancelled as a streamed call is: its answer not saved
            return ModelResponse([answer])
        from plait._stream_event import StreamEvent  # a streamed run's: made on first use

        chunks = iter(request.model.stream(request.messages, **kwargs))
        piped = transform_sync(self.stream_layers, chunks, request, self.loops)
        leaving = sink.leaving
        collected = []
        try:
            for chunk in piped:
                collected.append(chunk)
                sink(StreamEvent("messages", chunk, "model"))
                if leaving is not None and leaving.left:
                    raise ReaderGone  # cancelled: no more tokens read, none saved
        finally:
            if leaving is not None and leaving.left:
                _close(piped, chunks)  # the provider's own generator too: its response
        sink.streamed_calls += 1
        return ModelResponse([assemble_chunks(collected)])

    async def acall_model(self, request: ModelRequest) -> ModelResponse:
        sink = stream_sink.get()
        kwargs = _model_kwargs(request)
        if sink is None:
            with CancelOnLeave():  # a dropped astream: the call is cancelled
                answer = await request.model.ainvoke(request.messages, **kwargs)
            if _left():
                raise ReaderGone
            return ModelResponse([answer])
        from plait._stream_event import StreamEvent  # a streamed run's: made on first use

        chunks = aiter(request.model.astream(request.messages, **kwargs))
        piped = transform_async(self.stream_layers, chunks, request)
        leaving = sink.leaving
        collected = []
        try:
            with CancelOnLeave():  # a dropped astream: cancelled, even before its first chunk
                async for chunk in piped:
                    collected.append(chunk)
                    sink(StreamEvent("messages", chunk, "model"))
                    if leaving is not None and leaving.left:
                        raise ReaderGone  # cancelled: no more tokens read, none saved
        finally:
            if leaving is not None and leaving.left:
                await _aclose(piped, chunks)
        sink.streamed_calls += 1
        return ModelResponse([assemble_chunks(collected)])

    # -- tools -----------------------------------------------------------------------------

    def call_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        _reached()
        try:
            if _performers.active():
                return _performers.perform(ToolRun(request), lambda: self._run_tool(request))
            return self._run_tool(request)
        except Exception as exc:
            mark_raised_by_tool(exc)
            raise

    async def acall_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        _reached()
        try:
            if _performers.active():
                return await _performers.aperform(
                    ToolRun(request), lambda: self._arun_tool(request)
                )
            return await self._arun_tool(request)
        except Exception as exc:
            mark_raised_by_tool(exc)
            raise

    def _run_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        prepared = self._prepare(request)
        if isinstance(prepared, ToolMessage):
            return prepared
        found, func, kwargs = prepared
        limit = self._limit(found)
        # An async tool runs on the agent's loop thread: a stream's reader who leaves
        # cancels it there (a sync tool cannot be interrupted and ends).
        if limit is None:
            result = func(**kwargs)
            if found.is_async:
                result = self.loops.run(result, on_leave=True)
        elif found.is_async:
            result = self.loops.run(
                _tool_threads.await_within(func(**kwargs), found.name, limit), on_leave=True
            )
        else:
            result = _tool_threads.call_within(func, kwargs, found.name, limit)
        return tool_output(result, request)

    async def _arun_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        import asyncio

        prepared = self._prepare(request)
        if isinstance(prepared, ToolMessage):
            return prepared
        found, func, kwargs = prepared
        limit = self._limit(found)
        if found.is_async:
            called = func(**kwargs)
            if limit is None:
                result = await called
            else:
                result = await _tool_threads.await_within(called, found.name, limit)
        elif limit is not None:
            result = await _tool_threads.acall_within(func, kwargs, found.name, limit)
        elif found.run_in_thread:
            result = await asyncio.to_thread(_tool_threads.call, func, kwargs)
        else:
            result = _tool_threads.call(func, kwargs)
        return tool_output(result, request)

    def _limit(self, found: Tool) -> float | None:
        """The seconds a call of ``found`` may take (``None``: no limit). A sync tool with
        ``run_in_thread=False`` has none: it runs inline, where nothing can abandon it
        (``@tool`` and ``create_agent`` refuse a timeout for it; a tool a middleware swaps
        in runs as its flag says)."""
        if not found.run_in_thread and not found.is_async:
            return None
        return found.timeout or self.tool_timeout

    def _prepare(
        self, request: ToolCallRequest
    ) -> tuple[Tool, Callable[..., Any], dict[str, Any]] | ToolMessage:
        """The tool, its function and its checked arguments, or the error message the
        model gets instead."""
        from plait.tools import ToolArgumentError

        call, found = request.tool_call, request.tool
        func = found.func if found is not None else None
        if found is None:
            names = ", ".join(sorted(self.tools_by_name)) or "none"
            return _error(
                request,
                f"there is no tool named {call.name!r}. The available tools are: {names}.",
            )
        if func is None:
            return _error(request, f"tool {call.name!r} is run by the provider, not here.")
        try:
            kwargs = found.prepare(call.args, ToolRuntime(call, request.state, request.runtime))
        except ToolArgumentError as exc:
            return _error(
                request,
                f"invalid arguments for tool {call.name!r}: {exc}. "
                "Call it again with corrected arguments.",
            )
        return found, func, kwargs


def _left() -> bool:
    """Whether the reader of the run's stream left while a model call was in flight (a
    call that did not stream, or could not be stopped: it ended, but no one reads it)."""
    sink = run_sink.get()
    leaving = sink.leaving if sink is not None else None
    return leaving is not None and leaving.left


def _close(*iterators: Iterator[Any]) -> None:
    """Close a cancelled model call's chunk iterators, outermost first: a generator's
    ``finally`` (an HTTP provider's, closing its response) runs now, not when collected."""
    for iterator in iterators:
        close = getattr(iterator, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):  # the cancellation is what the run sees
                close()


async def _aclose(*iterators: AsyncIterator[Any]) -> None:
    """``_close`` for async iterators (``aclose``)."""
    for iterator in iterators:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()


def _model_kwargs(request: ModelRequest) -> dict[str, Any]:
    return dict(
        system_prompt=request.system_prompt,
        tools=request.tools,
        tool_choice=request.tool_choice,
        response_format=request.response_format,
        provider_options=request.provider_options or None,
        **request.model_settings,
    )


def _error(request: ToolCallRequest, text: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage.error(call, f"Error: {text}")


def tool_output(result: Any, request: ToolCallRequest) -> ToolMessage | Command:
    """What a tool function returned, as the ToolMessage (or Command) answering the call."""
    if isinstance(result, ToolMessage) and isinstance(result.content, list):
        return attrs.evolve(result, content=_base64_bytes(result.content))
    if isinstance(result, (ToolMessage, Command)):
        return result
    call = request.tool_call
    if isinstance(result, str):
        content: Any = result
    elif isinstance(result, list) and all(isinstance(b, dict) and "type" in b for b in result):
        content = _base64_bytes(result)
    else:
        content = json.dumps(result, ensure_ascii=False, default=_json_default)
    return ToolMessage(content, tool_call_id=call.id, name=call.name)


def _json_default(value: Any) -> Any:
    """What ``json.dumps`` writes for a value it cannot: a pydantic model, a dataclass or an
    attrs instance as the object of its fields (a tool declared ``-> Order`` answers the
    model with JSON, not with the object's ``repr``); anything else as its ``str``."""
    import dataclasses

    from plait._convert import is_pydantic_model

    if is_pydantic_model(type(value)):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)  # json.dumps comes back for what it holds
    return str(value)


def _base64_bytes(value: Any) -> Any:
    """Content blocks with raw bytes (an image a tool read: ``"data": b"\\x89PNG..."``)
    holding base64 text instead, the form every provider's image block takes and a
    thread can be saved in."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        import base64  # here: only a tool returning bytes needs it

        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return {key: _base64_bytes(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_base64_bytes(item) for item in value]
    return value


def _reached() -> None:
    """Note on the tool call in progress that it reached the tool (``ToolCallScope.called``)."""
    scope = in_tool_call.get()
    if scope is not None:
        scope.called = True
