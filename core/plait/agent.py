"""``create_agent`` and the ``Agent`` it builds: invoke, stream, state, threads.

This is the public front. What a run needs is compiled once (``_compiled``); a run starts
in ``_start``, goes round the loop in ``_loop`` and streams through ``_stream``; the
agent holds the threads in use and the ones it served last.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import attrs

from plait import _convert, _ids
from plait._compiled import CompiledAgent, close_middleware, compile_agent
from plait._compose import chain_async, chain_sync
from plait._config import check_thread_id, read_config
from plait._loop import Run, RunInfo, adrive, drive, shown_interrupts
from plait._resolve import Built
from plait._start import record_failure, run_result, start_run
from plait._state import RUN_KEY, ThreadState
from plait._stream import EventSink, parse_modes, stream_sink
from plait.errors import CheckpointerRequiredError, ConfigError, PlaitError, ThreadBusyError
from plait.lazy import lazy_exports
from plait.models import ChatModel
from plait.types import AgentConfig, AgentResult

if TYPE_CHECKING:
    import asyncio

    from plait._interrupt import Interrupt
    from plait._run_streams import AsyncRunStream as AsyncRunStream
    from plait._run_streams import GraphAsyncRunStream, GraphRunStream
    from plait._run_streams import RunStream as RunStream
    from plait._served import ServedCall as ServedCall
    from plait._served import ToolSession as ToolSession
    from plait.checkpoint import Checkpointer, History, StepInfo
    from plait.store import Store
    from plait.tools import Tool

__all__ = [
    "Agent",
    "AgentResult",
    "AsyncRunStream",
    "RunStream",
    "ServedCall",
    "ToolSession",
    "create_agent",
]

# Imported on first use: a run that is not streamed and an agent whose tools are not
# served never pay for these classes.
__getattr__ = lazy_exports(
    __name__,
    {
        "AsyncRunStream": "plait._run_streams",
        "RunStream": "plait._run_streams",
        "ServedCall": "plait._served",
        "ToolSession": "plait._served",
    },
)

THREAD_CACHE_SIZE = 256
"""Threads an agent keeps in memory between runs (the least recently served go first);
a thread not kept is loaded from the checkpointer on its next run, with the same result."""


def create_agent(
    model: str | ChatModel,
    tools: Sequence[Any] = (),
    *,
    system_prompt: str | None = None,
    middleware: Sequence[Any] = (),
    checkpointer: str | Checkpointer | None = None,
    store: str | Store | None = None,
    response_format: Any = None,
    name: str = "agent",
    tool_timeout: float | None = None,
    output_retries: int = 1,
    context_schema: Any = None,
    state_schema: Any = None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    replay_mode: str = "strict",
) -> Agent:
    """Build an agent. Every misconfiguration raises ``ConfigError`` here, not later.

    :param model: a ``ChatModel`` or an id like ``"openai:gpt-4.1"``.
    :param tools: ``plait.Tool`` objects or plain functions (made tools with ``plait.tool``).
    :param system_prompt: sent with every model call.
    :param middleware: entry-point names, ``(name, {options})`` pairs, or instances, in
        order: the first is outermost around calls and first before them.
    :param checkpointer: ``"memory"``, a URL such as ``"sqlite:///agent.db"``, or an
        instance; needed for threads that span runs and for interrupts.
    :param store: a store URL or instance, shared across threads.
    :param response_format: the class of a structured answer (attrs, dataclass, TypedDict
        or pydantic model; ``structured_response`` is an instance of it) or a JSON schema.
    :param name: the agent's name, in traces, logs and errors (``runtime.agent_name``).
    :param tool_timeout: seconds a tool call may take unless its tool sets its own
        ``timeout``; past it the call is abandoned and the model gets an error message.
        Refused (``ConfigError``) if a sync tool has ``run_in_thread=False``: a call in the
        agent loop's own thread cannot be abandoned.
    :param output_retries: with a ``response_format``, how many times a run asks the model
        again for an answer that is not in the format (text that does not parse, a text
        answer where the answer tool was expected, answer-tool arguments that do not fit)
        before it raises ``StructuredOutputError``.
    :param context_schema: the class each run's ``context`` must be an instance of
        (attrs, dataclass, pydantic model; a TypedDict's keys are checked), checked when
        a run starts; ``ToolRuntime[C]``/``Runtime[C]`` type ``runtime.context``.
    :param state_schema: a class (usually a ``plait.AgentState`` subclass) whose keys
        beyond ``messages`` become state: defaults from the class, reducers from
        ``Annotated[list[str], operator.add]``, checkpointed with the thread.
    :param record: a JSONL file to write every model call and tool run to, request and
        answer (``plait.recording``); emptied on the first call.
    :param replay: a file ``record`` wrote: each model call and tool run is answered from
        it, with no provider reached; a request it does not hold raises ``ReplayError``
        with a diff. A file another agent recorded is refused here.
    :param replay_mode: ``"strict"`` (a call must ask exactly what was recorded) or
        ``"lenient"`` (each call gets the next recorded answer of its kind).
    """
    schemas: list[tuple[str, object]] = []
    if context_schema is not None or state_schema is not None:
        from plait._schemas import schema_middleware  # here: most agents have neither

        schemas = schema_middleware(context_schema, state_schema)
    if record is not None or replay is not None:
        from plait.recording import RecordReplay

        schemas = [
            (
                "record" if record is not None else "replay",
                RecordReplay(record=record, replay=replay, mode=replay_mode),
            ),
            *schemas,
        ]
    if schemas and isinstance(middleware, Sequence) and not isinstance(middleware, str | bytes):
        middleware = [*(Built(name, obj) for name, obj in schemas), *middleware]
    return Agent(
        compile_agent(
            model=model,
            tools=tools,
            system_prompt=system_prompt,
            middleware=middleware,
            checkpointer=checkpointer,
            store=store,
            response_format=response_format,
            name=name,
            tool_timeout=tool_timeout,
            output_retries=output_retries,
        )
    )


class Agent:
    """A built agent. Thread-safe: runs on different threads may go on at once."""

    def __init__(self, compiled: CompiledAgent) -> None:
        """Made by ``create_agent``, which compiles (checks and builds) the agent."""
        self.compiled = compiled
        # The threads last served, newest last: a thread's next run skips loading it.
        self._cache: collections.OrderedDict[str, ThreadState] = collections.OrderedDict()
        self._active: set[str] = set()
        self._lock = threading.Lock()

    # What create_agent built, read-only.

    @property
    def name(self) -> str:
        return self.compiled.name

    @property
    def model(self) -> ChatModel:
        return self.compiled.model

    @property
    def system_prompt(self) -> str | None:
        return self.compiled.system_prompt

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The agent's tools: its own, then those its middleware added."""
        return self.compiled.tools

    @property
    def tools_by_name(self) -> Mapping[str, Tool]:
        return self.compiled.tools_by_name

    @property
    def middleware(self) -> tuple[object, ...]:
        """The middleware objects, in the order given."""
        return self.compiled.middleware

    @property
    def tool_timeout(self) -> float | None:
        return self.compiled.tool_timeout

    @property
    def checkpointer(self) -> Checkpointer | None:
        return self.compiled.checkpointer

    @checkpointer.setter
    def checkpointer(self, checkpointer: Checkpointer) -> None:
        """Replace the checkpointer, for runs started from now on: a plugin may wrap it
        (plait-dbos records each save as a durable step). Runs in progress keep theirs."""
        from plait.checkpoint import Checkpointer

        if not isinstance(checkpointer, Checkpointer) or self.checkpointer is None:
            raise ConfigError(
                "an agent's checkpointer can only be replaced by another plait Checkpointer"
            )
        with self._lock:
            self.compiled = self.compiled._replace(
                checkpointer=checkpointer,
                config=attrs.evolve(self.compiled.config, checkpointer=checkpointer),
            )
            self._cache.clear()

    @property
    def store(self) -> Store | None:
        return self.compiled.store

    @property
    def config(self) -> AgentConfig:
        """The agent as ``agent_tools`` and ``validate_agent`` hooks saw it."""
        return self.compiled.config

    # -- runs ------------------------------------------------------------------------------

    def invoke(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
    ) -> AgentResult:
        """Run the agent until it answers, pauses at an interrupt, or fails.

        :param input: a string, a message, a list of messages (``("user", "hi")`` pairs
            and role dicts too), ``{"messages": [...]}``, ``Command(resume=...)`` to answer
            interrupts, or ``None`` to continue the thread's unfinished run.
        :param recursion_limit: model and tool steps a run may take (default 25).
        :param config: LangGraph's form of ``thread_id`` and ``recursion_limit``:
            ``{"configurable": {"thread_id": "1"}, "recursion_limit": 50}``; second
            positional argument, as in LangGraph's ``invoke(input, config)``.
        """
        thread_id, limit = read_config(config, thread_id, recursion_limit)
        return self._run_sync(input, thread_id, context, limit, None)

    async def ainvoke(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
    ) -> AgentResult:
        """The async form of ``invoke``; never blocks the event loop."""
        thread_id, limit = read_config(config, thread_id, recursion_limit)
        return await self._run_async(input, thread_id, context, limit, None)

    @overload
    def stream(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
        stream_mode: None = None,
    ) -> RunStream: ...

    @overload
    def stream(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
        stream_mode: str | Sequence[str],
    ) -> GraphRunStream: ...

    def stream(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        mode: str | Sequence[str] | None = None,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
        stream_mode: str | Sequence[str] | None = None,
    ) -> RunStream | GraphRunStream:
        """Run like ``invoke``, yielding ``StreamEvent``s of the chosen mode(s) as they
        happen: ``updates`` (each state update, by source; a pause is an update from
        ``"interrupt"`` holding ``{"__interrupt__": [...]}``), ``messages`` (model chunks
        and tool messages; a model call that streamed no chunk — a hook or a nested agent
        answered it — gives its ``AIMessage`` once, whole), ``values`` (the state after
        each step), ``custom`` (what hooks and tools write with
        ``runtime.stream_writer``). Once the events are
        exhausted, the stream's ``result`` is the run's ``AgentResult``.

        ``stream_mode=`` instead of ``mode=`` yields what LangGraph yields: each mode's
        data, ``(token, metadata)`` pairs in ``messages`` mode, and ``(mode, data)`` pairs
        when several modes are asked for."""
        modes, several = _stream_modes(mode, stream_mode)
        thread_id, limit = read_config(config, thread_id, recursion_limit)
        from plait._run_streams import GraphRunStream, RunStream

        events = RunStream(
            lambda sink: self._run_sync(input, thread_id, context, limit, sink), modes
        )
        return (
            events if stream_mode is None else GraphRunStream(events, several, self.tools_by_name)
        )

    @overload
    def astream(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
        stream_mode: None = None,
    ) -> AsyncRunStream: ...

    @overload
    def astream(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
        stream_mode: str | Sequence[str],
    ) -> GraphAsyncRunStream: ...

    def astream(
        self,
        input: Any = None,
        config: Mapping[str, Any] | None = None,
        *,
        mode: str | Sequence[str] | None = None,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int | None = None,
        stream_mode: str | Sequence[str] | None = None,
    ) -> AsyncRunStream | GraphAsyncRunStream:
        """The async form of ``stream`` (``async for``; then ``.result``)."""
        modes, several = _stream_modes(mode, stream_mode)
        thread_id, limit = read_config(config, thread_id, recursion_limit)
        from plait._run_streams import AsyncRunStream, GraphAsyncRunStream

        events = AsyncRunStream(
            lambda sink: self._run_async(input, thread_id, context, limit, sink), modes
        )
        return (
            events
            if stream_mode is None
            else GraphAsyncRunStream(events, several, self.tools_by_name)
        )

    def _recorded_stream(self, input: Any, thread_id: str, modes: frozenset[str]) -> RunStream:
        """``stream`` in ``modes`` as the run log reads a run (``plait.runlog.MODES``):
        with ``plait._stream.SAVED``, which a caller of ``stream`` does not ask for."""
        from plait._run_streams import RunStream

        _, limit = read_config(None, thread_id, None)
        return RunStream(lambda sink: self._run_sync(input, thread_id, None, limit, sink), modes)

    def _recorded_astream(
        self, input: Any, thread_id: str, modes: frozenset[str]
    ) -> AsyncRunStream:
        """The async form of ``_recorded_stream``."""
        from plait._run_streams import AsyncRunStream

        _, limit = read_config(None, thread_id, None)
        return AsyncRunStream(
            lambda sink: self._run_async(input, thread_id, None, limit, sink), modes
        )

    def _begin(
        self,
        input: Any,
        thread_id: str | None,
        context: Any,
        recursion_limit: int,
        sink: EventSink | None,
    ) -> Run:
        _convert.integer(minimum=1).require("recursion_limit", recursion_limit)
        if thread_id is not None and self.checkpointer is None:
            raise CheckpointerRequiredError(
                f"thread_id={thread_id!r} needs a checkpointer to keep the thread: "
                "create_agent(..., checkpointer='memory') in this process, or "
                "'sqlite:///agent.db' across restarts"
            )
        if thread_id is None and self.checkpointer is not None:
            thread_id = _ids.new_id()
        thread = self._thread(thread_id)
        try:
            return start_run(
                self.compiled,
                thread,
                thread_id,
                input,
                context=context,
                recursion_limit=recursion_limit,
                sink=sink,
            )
        except BaseException:
            self._release(thread_id, None)
            raise

    def _run_sync(
        self, input: Any, thread_id: Any, context: Any, limit: int, sink: EventSink | None
    ) -> AgentResult:
        run = self._begin(input, thread_id, context, limit, sink)
        if sink is not None:
            sink.abort = lambda: record_failure(self.compiled, run)
        layers = self.compiled.run_layers
        if not layers:
            return self._drive_sync(run)
        try:
            handler = chain_sync(
                layers, _once(lambda _r: self._drive_sync(run)), _run_result, self.compiled.loops
            )
            return handler(run.request)  # type: ignore[no-any-return]
        finally:
            if not run.started:  # a hook failed (or answered) before the run began
                self._release(run.runtime.thread_id, None)

    def _drive_sync(self, run: Run) -> AgentResult:
        run.started = True
        token = stream_sink.set(_chunk_sink(run.sink))
        try:
            drive(run)
        except BaseException as exc:
            if _failed(exc):
                record_failure(self.compiled, run)
            self._release(run.runtime.thread_id, None)
            raise
        finally:
            stream_sink.reset(token)
        self._release(run.runtime.thread_id, run.thread)
        return run_result(self.compiled, run)

    async def _run_async(
        self, input: Any, thread_id: Any, context: Any, limit: int, sink: EventSink | None
    ) -> AgentResult:
        import asyncio

        if self.checkpointer is not None and thread_id is not None:
            begin = asyncio.ensure_future(
                asyncio.to_thread(self._begin, input, thread_id, context, limit, sink)
            )
            try:
                run = await asyncio.shield(begin)
            except asyncio.CancelledError:
                # ``_begin`` goes on in its thread and holds the thread when it is done:
                # free it then, or the thread stays busy for this agent's later runs.
                begin.add_done_callback(self._release_begun)
                raise
        else:
            run = self._begin(input, thread_id, context, limit, sink)
        layers = self.compiled.run_layers
        if not layers:
            return await self._drive_async(run)
        try:
            handler = chain_async(layers, _aonce(lambda _r: self._drive_async(run)), _run_result)
            return await handler(run.request)  # type: ignore[no-any-return]
        finally:
            if not run.started:
                self._release(run.runtime.thread_id, None)

    async def _drive_async(self, run: Run) -> AgentResult:
        import asyncio

        run.started = True
        token = stream_sink.set(_chunk_sink(run.sink))
        try:
            await adrive(run)
        except BaseException as exc:
            try:
                if _failed(exc):
                    await asyncio.to_thread(record_failure, self.compiled, run)
            finally:  # a second cancel while recording still frees the thread
                self._release(run.runtime.thread_id, None)
            raise
        finally:
            stream_sink.reset(token)
        self._release(run.runtime.thread_id, run.thread)
        return run_result(self.compiled, run)

    def _release_begun(self, begin: asyncio.Future[Run]) -> None:
        """Free the thread a run took whose caller was cancelled while it began."""
        if not begin.cancelled() and begin.exception() is None:
            self._release(begin.result().runtime.thread_id, None)

    def tool_session(self, *, context: Any = None) -> ToolSession:
        """Calls of the agent's tools made by someone other than the model (an MCP client
        of ``plait mcp-serve``), each through the same guards as a model's call: the
        ``after_model`` hooks (reviews, limits, pii), then the ``wrap_tool_call`` chain.
        The session is one thread and one run held in memory, so per-run and per-thread
        limits count all its calls; a call a hook would pause for a human is not run
        (``ServedCall.interrupts`` says why)."""
        from plait._served import ToolSession

        return ToolSession(self.compiled, context)

    def get_interrupts(self, thread_id: str, *, shown: bool = True) -> list[Interrupt]:
        """The interrupts the thread's run is paused at (``[]`` if it is not paused), as a
        reviewer reads them: through the ``show_interrupts`` hooks (``pii`` shows real
        values; the checkpoint keeps placeholders). ``shown=False`` gives them as stored,
        to compare with the thread's own messages."""
        check_thread_id(thread_id, "get_interrupts: thread_id")
        data = self._need_checkpointer().load(thread_id)
        run = None if data is None else data.values.get(RUN_KEY)
        if not run or data is None:
            return []
        info = RunInfo.load(run)
        if info.status != "interrupted":
            return []
        if not shown:
            return list(info.interrupts)
        return shown_interrupts(self.compiled, info.interrupts, data.values)

    # -- threads ---------------------------------------------------------------------------

    def _thread(self, thread_id: str | None) -> ThreadState:
        """The thread to run on, held until ``_release``; a second run of it meanwhile
        is refused (``ThreadBusyError``)."""
        checkpointer = self.checkpointer
        if checkpointer is None or thread_id is None:
            return ThreadState(self.compiled.fields)
        with self._lock:
            if thread_id in self._active:
                raise ThreadBusyError(f"thread {thread_id!r} is being run by another call")
            self._active.add(thread_id)
            cached = self._cache.pop(thread_id, None)
        try:
            stored = checkpointer.step(thread_id)
            if cached is not None and cached.step == stored and not cached.dirty:
                return cached
            state = ThreadState(self.compiled.fields, checkpointer.load(thread_id))
        except BaseException:
            self._release(thread_id, None)
            raise
        return state

    @contextlib.contextmanager
    def _holding(self, thread_id: str) -> Iterator[ThreadState]:
        """The thread held (as a run holds it) while a change outside a run is made to
        it (``update_state``, ``plait.runlog.cancel_paused_run``); released with its
        state kept if the change went through, forgotten if it failed."""
        state = self._thread(thread_id)
        try:
            yield state
        except BaseException:
            self._release(thread_id, None)
            raise
        self._release(thread_id, state)

    def _save_step(self, thread_id: str, state: ThreadState) -> int:
        """Save what changed in ``state`` as the thread's next step; its number."""
        delta = state.take_delta()
        self._need_checkpointer().save(thread_id, delta)
        state.step = delta.step
        return delta.step

    def _release(self, thread_id: str | None, state: ThreadState | None) -> None:
        if self.checkpointer is None or thread_id is None:
            return
        with self._lock:
            self._active.discard(thread_id)
            if state is None or state.dirty:
                self._cache.pop(thread_id, None)
            else:
                self._cache[thread_id] = state
                if len(self._cache) > THREAD_CACHE_SIZE:
                    self._cache.popitem(last=False)

    def _need_checkpointer(self) -> Checkpointer:
        if self.checkpointer is None:
            raise ConfigError("this agent has no checkpointer, so it keeps no threads")
        return self.checkpointer

    def get_state(self, thread_id: str, step: int | None = None) -> dict[str, Any]:
        """The thread's saved state: ``["messages"]`` plus every state key; with
        ``step``, the state as it was after that step (``get_state_history`` lists them)."""
        check_thread_id(thread_id, "get_state: thread_id")
        if step is None:
            checkpoint = self._need_checkpointer().load(thread_id)
        else:
            checkpoint = self._history().load_step(thread_id, _step_number(step))
        return ThreadState(self.compiled.fields, checkpoint).public()

    def get_state_history(self, thread_id: str) -> list[StepInfo]:
        """The thread's kept steps, newest first: each one's ``step``, ``run_id``,
        ``node`` and ``time``; a fork's list continues with its parent's steps up to the
        fork point. ``[]`` for an unknown thread."""
        check_thread_id(thread_id, "get_state_history: thread_id")
        return self._history().history(thread_id)

    def fork(
        self, thread_id: str, step: int | None = None, new_thread_id: str | None = None
    ) -> str:
        """A new thread that is ``thread_id`` as it was after ``step`` (default: its
        latest), sharing its steps (nothing is copied until the new thread is written
        to). Returns the new thread's id (``new_thread_id``, or a fresh one). Running it
        with ``invoke(None)`` or ``Command(resume=...)`` continues from that step, with
        its pending interrupts and tool calls as they were."""
        check_thread_id(thread_id, "fork: thread_id")
        history = self._history()
        if new_thread_id is None:
            new_thread_id = _ids.new_id()
        elif not isinstance(new_thread_id, str) or not new_thread_id:
            raise ValueError(
                f"fork: new_thread_id: {_convert.expected('a thread id', new_thread_id)}"
            )
        if step is None:
            step = self._need_checkpointer().step(thread_id)
        history.fork(thread_id, _step_number(step), new_thread_id)
        return new_thread_id

    def update_state(
        self, thread_id: str, values: Mapping[str, Any], *, as_node: str = "update_state"
    ) -> int:
        """Write ``values`` to the thread as one new step, recorded in its history under
        ``as_node``: ``"messages"`` goes through the message reducer (a message with an
        existing id replaces it, ``RemoveMessage`` removes), other keys through their
        declared reducer. Returns the new step number; refused while a run holds the
        thread."""
        if not isinstance(values, Mapping):
            raise TypeError(f"update_state: values: {_convert.expected('a mapping', values)}")
        if not isinstance(as_node, str) or not as_node:
            raise TypeError(f"update_state: as_node: {_convert.expected('a node name', as_node)}")
        if RUN_KEY in values:
            raise ValueError(f"update_state: {RUN_KEY!r} is the kernel's own key")
        check_thread_id(thread_id, "update_state: thread_id")
        self._need_checkpointer()
        with self._holding(thread_id) as state:
            state.update(values, as_node)
            run = state.values.get(RUN_KEY)
            state.writer = (RunInfo.load(run).run_id if run else "", as_node)
            return self._save_step(thread_id, state)

    async def aget_state(self, thread_id: str, step: int | None = None) -> dict[str, Any]:
        """``get_state`` for async code (the checkpointer runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.get_state, thread_id, step)

    async def aget_state_history(self, thread_id: str) -> list[StepInfo]:
        """``get_state_history`` for async code."""
        import asyncio

        return await asyncio.to_thread(self.get_state_history, thread_id)

    async def afork(
        self, thread_id: str, step: int | None = None, new_thread_id: str | None = None
    ) -> str:
        """``fork`` for async code."""
        import asyncio

        return await asyncio.to_thread(self.fork, thread_id, step, new_thread_id)

    async def aupdate_state(
        self, thread_id: str, values: Mapping[str, Any], *, as_node: str = "update_state"
    ) -> int:
        """``update_state`` for async code."""
        import asyncio

        return await asyncio.to_thread(
            lambda: self.update_state(thread_id, values, as_node=as_node)
        )

    def _history(self) -> History:
        from plait.checkpoint import History

        checkpointer = self._need_checkpointer()
        if not isinstance(checkpointer, History):
            raise ConfigError(
                f"checkpointer {checkpointer!r} keeps no history: expected one with "
                "history(), load_step(), fork() and prune() (plait.checkpoint.History)"
            )
        return checkpointer

    def list_threads(self) -> list[str]:
        return self._need_checkpointer().list_threads()

    def delete_thread(self, thread_id: str) -> None:
        check_thread_id(thread_id, "delete_thread: thread_id")
        self._need_checkpointer().delete_thread(thread_id)
        with self._lock:
            self._cache.pop(thread_id, None)

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Release what the agent holds open: each middleware object with a ``close()``
        method has it called, last one first (MCP sessions, shells …), then the agent's
        event-loop thread (started when an async hook or tool ran under sync ``invoke``)
        stops. Also ``with create_agent(...) as agent:``."""
        close_middleware(self.middleware)
        self.compiled.loops.close()

    async def aclose(self) -> None:
        """``close`` for async code: a middleware's ``aclose()`` is awaited if it has one,
        else its ``close()`` runs in a worker thread."""
        import asyncio

        for obj in reversed(self.middleware):
            aclose = getattr(obj, "aclose", None)
            close = getattr(obj, "close", None)
            if callable(aclose):
                await aclose()
            elif callable(close):
                await asyncio.to_thread(close)
        await asyncio.to_thread(self.compiled.loops.close)

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(self.compiled.registry.names)
        return f"<Agent model={self.model!r} tools={len(self.tools)} middleware=[{names}]>"


def _step_number(step: object) -> int:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step: {_convert.expected('a step number (0 or more)', step)}")
    return step


def _stream_modes(
    mode: str | Sequence[str] | None, stream_mode: str | Sequence[str] | None
) -> tuple[frozenset[str], bool]:
    """The modes asked for, by plait's ``mode=`` or LangGraph's ``stream_mode=`` (not
    both), and whether several were (LangGraph then pairs each item with its mode)."""
    if mode is not None and stream_mode is not None:
        raise ConfigError("give the stream mode once: mode=... or stream_mode=..., not both")
    chosen = stream_mode if stream_mode is not None else mode
    chosen = "updates" if chosen is None else chosen
    return parse_modes(chosen), not isinstance(chosen, str)


def _failed(error: BaseException) -> bool:
    """A run that raised this ended here, and is recorded so: an error, Ctrl-C
    (``KeyboardInterrupt``), a cancelled task, ``SystemExit``. A failed run may still be
    continued; a ``ThreadBusyError`` means another run holds the record, which is not ours
    to change."""
    return not isinstance(error, ThreadBusyError)


def _chunk_sink(sink: EventSink | None) -> EventSink | None:
    """The sink the innermost model call streams to: only if someone reads chunks."""
    return sink if sink is not None and sink.wants("messages") else None


def _once(drive: Callable[[Any], AgentResult]) -> Callable[[Any], AgentResult]:
    """The innermost ``wrap_run`` handler: a run happens once, whatever a hook does."""
    called = False

    def handler(request: Any) -> AgentResult:
        nonlocal called
        if called:
            raise PlaitError(_TWICE)
        called = True
        return drive(request)

    return handler


def _aonce(
    drive: Callable[[Any], Awaitable[AgentResult]],
) -> Callable[[Any], Awaitable[AgentResult]]:
    called = False

    async def handler(request: Any) -> AgentResult:
        nonlocal called
        if called:
            raise PlaitError(_TWICE)
        called = True
        return await drive(request)

    return handler


_TWICE = "a wrap_run hook called its handler a second time; a run happens once"


def _run_result(result: Any, request: Any, source: str) -> AgentResult:
    if isinstance(result, AgentResult):
        return result
    raise TypeError(
        f"middleware {source!r}: wrap_run returned {type(result).__name__}; "
        "expected the AgentResult its handler returned"
    )
