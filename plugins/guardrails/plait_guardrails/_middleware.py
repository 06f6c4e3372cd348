"""``guardrails``: check the user's input, the final answer and tool calls, and stop the run
when a check trips.

Input guardrails run in ``before_agent`` (or, ``parallel``, beside the first model call,
which a trip cancels); output guardrails in ``wrap_model_call`` on the final answer and,
when the answer streams, in ``transform_model_stream`` on held-back text; tool guardrails
in ``wrap_tool_call``. A trip raises ``GuardrailTripped`` (``exit_behavior="error"``) or
ends the run with ``message`` (``"end"``), and leaves a message in the thread whose
metadata names the guardrail and the reason.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from plait.errors import ConfigError
from plait.lazy import frozen
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, ToolMessage
from plait.middleware import Middleware, can_jump_to
from plait.options import check_tool_names, non_empty_string
from plait.tools import raised_by_tool, tool_error_message
from plait.types import (
    AgentConfig,
    AgentResult,
    Command,
    ModelRequest,
    ModelResponse,
    RunRequest,
    Runtime,
    ToolCallRequest,
)
from plait_guardrails import _stream, _trace
from plait_guardrails._guardrail import Guardrail, GuardrailData, GuardrailTripped
from plait_guardrails._rules import Judge
from plait_guardrails._spec import ToolGuards, guardrails, tool_guardrails

__all__ = ["GuardrailsMiddleware"]

META = "guardrails"
"""The metadata key of the message a trip leaves in the thread:
``{"guardrail": name, "kind": kind, "reason": reason}``."""

DEFAULT_MESSAGE = "Sorry, I can't help with that request."


@frozen(kw_only=True)
class GuardrailsMiddleware(Middleware):
    """Input, output and tool guardrails with tripwires.

    Each entry of ``input``/``output`` (and of a tool's ``before``/``after``) is a guardrail
    made by a decorator, a function, a ``"module:function"`` string, or a table with one of
    ``function``, ``regex``, ``keywords`` or ``judge`` (a model id, with a ``prompt``).
    """

    input: list[Any] = attrs.field(factory=list, eq=False)
    """Guardrails on the user's new input, run before the first model call of each run."""
    output: list[Any] = attrs.field(factory=list, eq=False)
    """Guardrails on the final answer (and the structured answer); streamed text is held
    back until they pass it."""
    tools: dict[str, Any] | list[Any] = attrs.field(factory=dict, eq=False)
    """Tool name (or ``"*"``) → ``{before = [...], after = [...]}``, or a list of guardrails
    made by ``tool_guardrail``."""
    parallel: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Run input guardrails beside the first model call instead of before it (a trip cancels
    the call on the async path); an input guardrail's own ``parallel`` wins."""
    exit_behavior: Literal["error", "end"] = attrs.field(
        default="error", validator=attrs.validators.in_(("error", "end"))
    )
    """``"error"``: a trip raises ``GuardrailTripped``; ``"end"``: the run ends with
    ``message`` as the agent's answer."""
    message: str = attrs.field(default=DEFAULT_MESSAGE, validator=non_empty_string())
    """The answer a run ends with when a guardrail trips and ``exit_behavior="end"``."""
    release: Literal["sentence", "end"] = attrs.field(
        default="sentence", validator=attrs.validators.in_(("sentence", "end"))
    )
    """With output guardrails, when held-back streamed text goes out: a sentence at a time,
    each once the guardrails pass the answer so far, or all at once at the end."""

    _input: tuple[Guardrail, ...] = attrs.field(init=False, repr=False, eq=False)
    _output: tuple[Guardrail, ...] = attrs.field(init=False, repr=False, eq=False)
    _tools: dict[str, ToolGuards] = attrs.field(init=False, repr=False, eq=False)
    _pending: dict[str, tuple[tuple[Guardrail, ...], GuardrailData]] = attrs.field(
        init=False, repr=False, eq=False, factory=dict
    )
    """Run id → the parallel input guardrails its first model call must run beside."""
    _streamed: dict[str, str] = attrs.field(init=False, repr=False, eq=False, factory=dict)
    """Run id → the streamed answer the output guardrails already passed whole."""
    _agent: dict[str, Any] = attrs.field(init=False, repr=False, eq=False, factory=dict)
    _lock: threading.Lock = attrs.field(init=False, repr=False, eq=False, factory=threading.Lock)

    @_input.default
    def _build_input(self) -> tuple[Guardrail, ...]:
        return guardrails(self.input, "input", "input")

    @_output.default
    def _build_output(self) -> tuple[Guardrail, ...]:
        return guardrails(self.output, "output", "output")

    @_tools.default
    def _build_tools(self) -> dict[str, ToolGuards]:
        return tool_guardrails(self.tools)

    def __attrs_post_init__(self) -> None:
        if not (self._input or self._output or self._tools):
            raise ConfigError(
                "input, output and tools are all empty; give at least one guardrail "
                "(a guardrails middleware without one checks nothing)"
            )

    # -- build -----------------------------------------------------------------------------

    def validate_agent(self, agent_config: AgentConfig) -> None:
        named = [name for name in self._tools if name != "*"]
        check_tool_names(named, agent_config, option="tools")
        self._agent["tools"] = frozenset(tool.name for tool in agent_config.tools)
        self._agent["structured"] = agent_config.response_format is not None
        stops_model = self._output or any(self._is_parallel(g) for g in self._input)
        if self.exit_behavior == "end" and stops_model and agent_config.response_format:
            raise ConfigError(
                "expected 'error' for an agent with a response_format and output or "
                "parallel input guardrails, got 'end' (a run that must end with a "
                "structured answer cannot end with a message)",
                option="exit_behavior",
            )
        for guard in (*self._input, *self._output, *self._all_tool_guards()):
            if isinstance(guard.check, Judge):
                try:
                    guard.check.chat_model()
                except Exception as exc:
                    raise ConfigError(f"guardrail {guard.name!r}: judge: {exc}") from exc

    def _all_tool_guards(self) -> Iterator[Guardrail]:
        for guards in self._tools.values():
            yield from guards.before
            yield from guards.after

    def _is_parallel(self, guard: Guardrail) -> bool:
        return self.parallel if guard.parallel is None else guard.parallel

    # -- trips -----------------------------------------------------------------------------

    def _tripped(self, trip: GuardrailTripped, runtime: Runtime | None) -> AIMessage:
        """Record ``trip`` in the trace; the AI message it leaves in the thread."""
        _trace.record(trip, runtime)
        text = self.message if self.exit_behavior == "end" else f"Stopped: {trip}."
        record = {"guardrail": trip.guardrail, "kind": trip.kind, "reason": trip.reason}
        return AIMessage(text, metadata={META: record})

    def _node_trip(self, trip: GuardrailTripped, runtime: Runtime) -> Command:
        message = self._tripped(trip, runtime)
        if self.exit_behavior == "error":
            trip.update = {"messages": [message]}
            raise trip
        return Command(update={"messages": [message]}, jump_to="end")

    def _model_trip(self, trip: GuardrailTripped, runtime: Runtime | None) -> ModelResponse:
        """A trip inside the model step: the answer (if any) never enters the thread; the
        trip's message does."""
        message = self._tripped(trip, runtime)
        if self.exit_behavior == "error":
            trip.update = {"messages": [message]}
            raise trip
        return ModelResponse([message])

    def _first_trip(
        self, guards: Sequence[Guardrail], data: GuardrailData
    ) -> GuardrailTripped | None:
        for guard in guards:
            result = guard.run(data)
            if result.tripped:
                return GuardrailTripped(guard.name, result.reason, kind=data.kind, info=result.info)
        return None

    async def _afirst_trip(
        self, guards: Sequence[Guardrail], data: GuardrailData
    ) -> GuardrailTripped | None:
        """The guardrails at once; the first to trip wins and the others are cancelled."""
        tasks = [asyncio.ensure_future(guard.arun(data)) for guard in guards]
        try:
            for guard, task in zip(guards, tasks, strict=True):
                result = await task
                if result.tripped:
                    return GuardrailTripped(
                        guard.name, result.reason, kind=data.kind, info=result.info
                    )
            return None
        finally:
            for task in tasks:
                task.cancel()

    # -- input -----------------------------------------------------------------------------

    @staticmethod
    def _input_data(state: Mapping[str, Any], runtime: Runtime) -> GuardrailData | None:
        new: list[AnyMessage] = []
        for message in reversed(state["messages"]):
            if isinstance(message, AIMessage):
                break
            if isinstance(message, HumanMessage):
                new.append(message)
        if not new:
            return None
        new.reverse()
        text = "\n".join(message.text for message in new)
        return GuardrailData("input", text, new, state=state, runtime=runtime)

    @can_jump_to("end")
    async def before_agent(
        self, state: Mapping[str, Any], runtime: Runtime
    ) -> dict[str, Any] | Command | None:
        if not self._input:
            return None
        data = self._input_data(state, runtime)
        if data is None:
            return None
        first = [g for g in self._input if not self._is_parallel(g)]
        beside = tuple(g for g in self._input if self._is_parallel(g))
        trip = await self._afirst_trip(first, data) if first else None
        if trip is not None:
            return self._node_trip(trip, runtime)
        if beside:
            with self._lock:
                self._pending[runtime.run_id] = (beside, data)
        return None

    def after_agent(self, runtime: Runtime) -> None:
        self._forget(runtime.run_id)

    def _forget(self, run_id: str) -> None:
        with self._lock:
            self._pending.pop(run_id, None)
            self._streamed.pop(run_id, None)

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        try:
            return handler(request)
        except BaseException:  # a run that fails never reaches after_agent
            self._forget(request.runtime.run_id)
            raise

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
    ) -> AgentResult:
        try:
            return await handler(request)
        except BaseException:
            self._forget(request.runtime.run_id)
            raise

    def _take_pending(
        self, runtime: Runtime | None
    ) -> tuple[tuple[Guardrail, ...], GuardrailData] | None:
        if runtime is None:
            return None
        with self._lock:
            return self._pending.pop(runtime.run_id, None)

    # -- model -----------------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        pending = self._take_pending(request.runtime)
        if pending is None:
            return self._answer(request, handler)
        guards, data = pending
        # The sync path cannot interrupt a blocking model call: the guardrails run in a
        # worker thread beside it, and a trip discards its answer.
        context = contextvars.copy_context()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            future = pool.submit(context.run, self._first_trip, guards, data)
            try:
                response = self._answer(request, handler)
            except BaseException:
                trip = future.result()
                if trip is None:
                    raise
                return self._model_trip(trip, request.runtime)
            trip = future.result()
        if trip is not None:
            return self._model_trip(trip, request.runtime)
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        pending = self._take_pending(request.runtime)
        if pending is None:
            return await self._aanswer(request, handler)
        guards, data = pending
        guard = asyncio.ensure_future(self._afirst_trip(guards, data))
        model = asyncio.ensure_future(self._aanswer(request, handler))
        try:
            await asyncio.wait({guard, model}, return_when=asyncio.FIRST_COMPLETED)
            if guard.done() and (trip := guard.result()) is not None:
                model.cancel()
                with contextlib.suppress(asyncio.CancelledError, GuardrailTripped):
                    await model
                return self._model_trip(trip, request.runtime)
            try:
                response = await model
            except BaseException:
                trip = await guard
                if trip is None:
                    raise
                return self._model_trip(trip, request.runtime)
            trip = await guard
            if trip is not None:
                return self._model_trip(trip, request.runtime)
            return response
        finally:
            for task in (guard, model):
                task.cancel()

    def _answer(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        try:
            response = handler(request)
        except GuardrailTripped as streamed:  # the stream's held-back text tripped
            return self._model_trip(streamed, request.runtime)
        data = self._output_data(request, response)
        if data is None:
            return response
        trip = self._first_trip(self._output, data)
        if trip is not None:
            return self._model_trip(trip, request.runtime)
        return response

    async def _aanswer(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        try:
            response = await handler(request)
        except GuardrailTripped as streamed:
            return self._model_trip(streamed, request.runtime)
        data = self._output_data(request, response)
        if data is None:
            return response
        trip = await self._afirst_trip(self._output, data)
        if trip is not None:
            return self._model_trip(trip, request.runtime)
        return response

    def _output_data(self, request: ModelRequest, response: ModelResponse) -> GuardrailData | None:
        """What the output guardrails check in ``response``: its final answer (text, or the
        structured answer), or ``None`` when it is not a final answer or the stream already
        passed it whole."""
        if not self._output:
            return None
        message = next((m for m in reversed(response.messages) if isinstance(m, AIMessage)), None)
        if message is None:
            return None
        structured: Any = response.structured_response
        text = message.text
        if message.tool_calls:
            tools = self._agent.get("tools", frozenset())
            answers = [c for c in message.tool_calls if c.name not in tools]
            if not (self._agent.get("structured") and answers):
                return None  # the model calls tools: not an answer yet
            structured = answers[0].args
        elif request.response_format is not None and structured is None:
            with contextlib.suppress(ValueError):
                structured = json.loads(text)
        if structured is not None:
            text = json.dumps(structured, ensure_ascii=False, default=str)
        elif request.runtime is not None:
            with self._lock:
                streamed = self._streamed.pop(request.runtime.run_id, None)
            if streamed is not None and streamed == text:
                return None
        return GuardrailData(
            "output",
            text,
            [message],
            structured=structured,
            state=request.state,
            runtime=request.runtime,
        )

    # -- streaming -------------------------------------------------------------------------

    def _stream_data(self, request: ModelRequest, text: str) -> GuardrailData:
        return GuardrailData("output", text, state=request.state, runtime=request.runtime)

    def _passed_whole(self, request: ModelRequest, text: str) -> None:
        if request.runtime is not None:
            with self._lock:
                self._streamed[request.runtime.run_id] = text

    def transform_model_stream(
        self, chunks: Iterator[AIMessageChunk], request: ModelRequest
    ) -> Iterator[AIMessageChunk]:
        if not self._output:
            yield from chunks
            return
        held = _stream.Held(self.release)

        def check(text: str) -> None:
            trip = self._first_trip(self._output, self._stream_data(request, text))
            if trip is not None:
                raise trip

        yield from _stream.run(held, chunks, check)
        self._passed_whole(request, held.whole)

    async def atransform_model_stream(
        self, chunks: AsyncIterator[AIMessageChunk], request: ModelRequest
    ) -> AsyncIterator[AIMessageChunk]:
        if not self._output:
            async for chunk in chunks:
                yield chunk
            return
        held = _stream.Held(self.release)

        async def check(text: str) -> None:
            trip = await self._afirst_trip(self._output, self._stream_data(request, text))
            if trip is not None:
                raise trip

        async for chunk in chunks:
            rest, text = held.feed(chunk)
            if text is not None:
                await check(text)
                out = held.release_checked(text)
                if out is not None:
                    yield out
            if rest is not None:
                yield rest
        if held.pending:
            await check(held.whole)
            out = held.release_checked(held.whole)
            if out is not None:
                yield out
        self._passed_whole(request, held.whole)

    # -- tools -----------------------------------------------------------------------------

    def _tool_guards(self, name: str) -> ToolGuards:
        specific = self._tools.get(name, ToolGuards())
        every = self._tools.get("*", ToolGuards())
        return ToolGuards(every.before + specific.before, every.after + specific.after)

    @staticmethod
    def _call_data(request: ToolCallRequest) -> GuardrailData:
        call = request.tool_call
        text = json.dumps(call.args, ensure_ascii=False, default=str)
        return GuardrailData(
            "tool_input", text, tool_call=call, state=request.state, runtime=request.runtime
        )

    @staticmethod
    def _result_data(request: ToolCallRequest, result: ToolMessage) -> GuardrailData:
        return GuardrailData(
            "tool_output",
            result.text,
            tool_call=request.tool_call,
            result=result,
            state=request.state,
            runtime=request.runtime,
        )

    def _tool_trip(self, trip: GuardrailTripped, request: ToolCallRequest) -> Command:
        _trace.record(trip, request.runtime)
        if self.exit_behavior == "error":
            raise trip  # the kernel answers the call, saying whether the tool was called
        record = {"guardrail": trip.guardrail, "kind": trip.kind, "reason": trip.reason}
        # the call ran when its result tripped: its answer says the result was withheld
        done = "Result withheld" if trip.kind == "tool_output" else "Not run"
        answer = ToolMessage.error(request.tool_call, f"{done}: {trip}.", metadata={META: record})
        end = AIMessage(self.message, metadata={META: record})
        return Command(update={"messages": [answer, end]}, jump_to="end")

    def _before(
        self, request: ToolCallRequest, verdicts: Sequence[tuple[Guardrail, Any]]
    ) -> ToolMessage | Command | None:
        for guard, result in verdicts:
            if result.action == "trip":
                trip = GuardrailTripped(
                    guard.name, result.reason, kind="tool_input", info=result.info
                )
                return self._tool_trip(trip, request)
            if result.action == "reject":
                record = {"guardrail": guard.name, "kind": "tool_input", "reason": result.reason}
                return ToolMessage.error(
                    request.tool_call, result.message or "", metadata={META: record}
                )
        return None

    def _after(
        self, request: ToolCallRequest, result: ToolMessage, guard: Guardrail, verdict: Any
    ) -> ToolMessage | Command:
        """``result`` as ``guard``'s verdict leaves it (a ``Command`` ends the run)."""
        if verdict.action == "trip":
            trip = GuardrailTripped(
                guard.name, verdict.reason, kind="tool_output", info=verdict.info
            )
            return self._tool_trip(trip, request)
        if verdict.action == "replace":
            record = {"guardrail": guard.name, "kind": "tool_output", "reason": verdict.reason}
            metadata = {**result.metadata, META: record}
            return attrs.evolve(result, content=verdict.message or "", metadata=metadata)
        return result

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command]
    ) -> ToolMessage | Command:
        guards = self._tool_guards(request.tool_call.name)
        if guards.before:
            data = self._call_data(request)
            verdicts = []
            for guard in guards.before:
                verdict = guard.run(data)
                verdicts.append((guard, verdict))
                if verdict.action != "allow":
                    break
            stopped = self._before(request, verdicts)
            if stopped is not None:
                return stopped
        try:
            result = handler(request)
        except Exception as error:
            if not guards.after or not raised_by_tool(error):
                raise
            # The tool's exception is its answer: the model reads the error message the
            # kernel makes of it, so the after-guards check that text too.
            told = tool_error_message(request.tool_call, error)
            checked = self._after_all(request, told, guards.after)
            if checked is told:
                raise
            return checked
        if not guards.after or not isinstance(result, ToolMessage):
            return result
        return self._after_all(request, result, guards.after)

    def _after_all(
        self, request: ToolCallRequest, result: ToolMessage, guards: Sequence[Guardrail]
    ) -> ToolMessage | Command:
        for guard in guards:  # each sees the result the previous ones left
            checked = self._after(
                request, result, guard, guard.run(self._result_data(request, result))
            )
            if not isinstance(checked, ToolMessage):
                return checked
            result = checked
        return result

    async def _aafter_all(
        self, request: ToolCallRequest, result: ToolMessage, guards: Sequence[Guardrail]
    ) -> ToolMessage | Command:
        for guard in guards:
            verdict = await guard.arun(self._result_data(request, result))
            checked = self._after(request, result, guard, verdict)
            if not isinstance(checked, ToolMessage):
                return checked
            result = checked
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        guards = self._tool_guards(request.tool_call.name)
        if guards.before:
            data = self._call_data(request)
            verdicts = []
            for guard in guards.before:
                verdict = await guard.arun(data)
                verdicts.append((guard, verdict))
                if verdict.action != "allow":
                    break
            stopped = self._before(request, verdicts)
            if stopped is not None:
                return stopped
        try:
            result = await handler(request)
        except Exception as error:
            if not guards.after or not raised_by_tool(error):
                raise
            told = tool_error_message(request.tool_call, error)
            checked = await self._aafter_all(request, told, guards.after)
            if checked is told:
                raise
            return checked
        if not guards.after or not isinstance(result, ToolMessage):
            return result
        return await self._aafter_all(request, result, guards.after)
