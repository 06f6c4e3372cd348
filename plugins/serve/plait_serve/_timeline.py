"""The run timeline: a performer (``plait.effects``) that records each model call and
tool run of a served run in the run log, as it crossed the provider or tool boundary.

Performers see a model call below every ``wrap_model_call`` hook, so the recorded
request is exactly what the provider received after each middleware rewrote it (what
``pii`` redacted, what summarization or context editing removed). Each record is one
run-log event, appended in the order the calls ended:

- ``model_call`` ``{call, model, messages, system_prompt, tools, settings, answer,
  usage, started, duration, error}``: ``usage`` is the provider's counts (``estimated``
  when it reported none) with ``cost`` where known.
- ``tool_run`` ``{call, tool_call_id, name, args, status, content, started, duration,
  error}``: ``args`` as the tool got them (after any hook edited them).

- ``hook`` ``{middleware, hook, phase, at, detail}``: a middleware hook called
  (``phase`` ``call``, ``detail`` its arguments) or returning (``return``, ``detail`` its
  result), from the kernel's own hook trace (the ``plait.trace`` log, on when the agent
  was built with ``PLAIT_TRACE`` set, as ``plait dev`` does). A wrap hook's return comes
  after everything it wrapped.

No protocol projects these; ``GET /plait/threads/{id}/events`` serves them with the rest
of the log, and the development page draws its timeline from them.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from plait.effects import Effect, ModelCall, ToolRun, performing
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    ToolMessage,
    assemble_chunks,
    message_text,
    unstructure_message,
)
from plait.runlog import jsonable
from plait.usage import estimate

__all__ = ["Timeline", "recording"]

T = TypeVar("T")

_SETTINGS_SKIPPED = frozenset({"system_prompt", "tools", "provider_options"})

Emit = Callable[[dict[str, Any]], None]

# The run whose hooks are being traced in this context (the kernel copies the context
# into the tasks and threads it starts for a run).
_sink: ContextVar[Emit | None] = ContextVar("plait_serve_hook_sink", default=None)


class _HookTrace(logging.Handler):
    """The ``plait.trace`` log's hook lines, as ``hook`` events of the run they are in."""

    def emit(self, record: logging.LogRecord) -> None:
        sink = _sink.get()
        args = record.args
        if sink is None or not isinstance(args, tuple) or len(args) != 3:
            return
        middleware, hook, detail = args
        sink(
            {
                "type": "hook",
                "middleware": str(middleware),
                "hook": str(hook),
                "phase": "return" if " -> " in str(record.msg) else "call",
                "at": time.time(),
                "detail": str(detail)[:300],
            }
        )


_HANDLER = _HookTrace()


@contextlib.contextmanager
def recording(emit: Emit) -> Iterator[None]:
    """Record the model calls, tool runs and hook calls of the run in this context."""
    logger = logging.getLogger("plait.trace")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    token = _sink.set(emit)
    try:
        with performing(Timeline(emit)):
            yield
    finally:
        _sink.reset(token)


class Timeline:
    """Records the model calls and tool runs of one run through ``emit`` (which must be
    safe to call from any thread: tools and sync providers run in worker threads)."""

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        self._emit = emit
        self._count = 0

    def _next(self) -> int:
        self._count += 1
        return self._count

    # -- the Performer protocol -----------------------------------------------------------

    def perform(self, effect: Effect, proceed: Callable[[], T]) -> T:
        number, started = self._next(), time.time()
        try:
            result = proceed()
        except BaseException as exc:
            self._record(effect, number, started, None, exc)
            raise
        if isinstance(effect, ModelCall) and effect.streaming:
            return self._chunks(effect, number, started, result)  # type: ignore[arg-type, return-value]
        self._record(effect, number, started, result, None)
        return result

    async def aperform(self, effect: Effect, proceed: Callable[[], Awaitable[T]]) -> T:
        number, started = self._next(), time.time()
        try:
            result = await proceed()
        except BaseException as exc:
            self._record(effect, number, started, None, exc)
            raise
        if isinstance(effect, ModelCall) and effect.streaming:
            return self._achunks(effect, number, started, result)  # type: ignore[return-value]
        self._record(effect, number, started, result, None)
        return result

    # -- streamed model calls: recorded when their last chunk has gone -------------------

    def _chunks(
        self, effect: ModelCall, number: int, started: float, source: Iterable[AIMessageChunk]
    ) -> Iterator[AIMessageChunk]:
        chunks: list[AIMessageChunk] = []
        error: BaseException | None = None
        try:
            for chunk in source:
                chunks.append(chunk)
                yield chunk
        except BaseException as exc:
            error = exc
            raise
        finally:
            answer = assemble_chunks(chunks) if chunks else None
            self._record(effect, number, started, answer, error)

    async def _achunks(
        self, effect: ModelCall, number: int, started: float, source: Any
    ) -> AsyncIterator[AIMessageChunk]:
        chunks: list[AIMessageChunk] = []
        error: BaseException | None = None
        try:
            if hasattr(source, "__aiter__"):
                async for chunk in source:
                    chunks.append(chunk)
                    yield chunk
            else:
                for chunk in source:
                    chunks.append(chunk)
                    yield chunk
        except BaseException as exc:
            error = exc
            raise
        finally:
            answer = assemble_chunks(chunks) if chunks else None
            self._record(effect, number, started, answer, error)

    # -- the events ------------------------------------------------------------------------

    def _record(
        self,
        effect: Effect,
        number: int,
        started: float,
        result: Any,
        error: BaseException | None,
    ) -> None:
        duration = time.time() - started
        common: dict[str, Any] = {"call": number, "started": started, "duration": duration}
        if error is not None:
            common["error"] = f"{type(error).__name__}: {error}"[:500]
        if isinstance(effect, ModelCall):
            self._emit(jsonable({"type": "model_call", **common, **_model(effect, result)}))
        elif isinstance(effect, ToolRun):
            self._emit(jsonable({"type": "tool_run", **common, **_tool(effect, result)}))


def _model(effect: ModelCall, answer: Any) -> dict[str, Any]:
    options = dict(effect.options)
    system_prompt = options.get("system_prompt")
    model = effect.model
    data: dict[str, Any] = {
        "model": f"{getattr(model, 'provider', '?')}:{getattr(model, 'model_name', '?')}",
        "messages": [unstructure_message(m) for m in effect.messages],
        "system_prompt": system_prompt,
        "tools": [getattr(t, "name", str(t)) for t in options.get("tools") or ()],
        "settings": {k: v for k, v in options.items() if k not in _SETTINGS_SKIPPED},
        "streaming": effect.streaming,
    }
    if isinstance(answer, AIMessage):
        data["answer"] = unstructure_message(answer)
        usage = answer.usage or estimate(effect.messages, system_prompt, answer)
        data["usage"] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost": usage.cost,
            "estimated": usage.estimated,
        }
    return data


def _tool(effect: ToolRun, result: Any) -> dict[str, Any]:
    call = effect.request.tool_call
    data: dict[str, Any] = {"tool_call_id": call.id, "name": call.name, "args": call.args}
    if isinstance(result, ToolMessage):
        data["status"] = result.status
        data["content"] = message_text(result.content)[:4000]
    elif result is not None:
        data["status"] = "success"
        data["content"] = type(result).__name__  # a Command: its update goes to the state
    return data
