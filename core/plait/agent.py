"""``create_agent`` and the ``Agent`` it builds: invoke, stream, state, threads."""

from __future__ import annotations

import asyncio
import collections
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from plait import _entrypoints, _tool_threads, effects
from plait._bridge import LoopThread
from plait._compose import chain_async, chain_sync, transform_async, transform_sync
from plait._loop import Run, RunInfo, adrive, drive, stream_sink, tool_output
from plait._registry import Registry
from plait._resolve import resolve_middleware
from plait._state import RUN_KEY, ThreadState
from plait._structured import Structured
from plait.checkpoint import Checkpointer
from plait.errors import CheckpointerRequiredError, ConfigError, PlaitError, ThreadBusyError
from plait.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    Message,
    ToolMessage,
    Usage,
    assemble_chunks,
)
from plait.models import ChatModel, init_chat_model
from plait.store import Store
from plait.types import (
    AgentConfig,
    Command,
    Interrupt,
    ModelRequest,
    ModelResponse,
    Runtime,
    StateField,
    StreamEvent,
    ToolCallRequest,
    ToolRuntime,
)

__all__ = ["Agent", "AgentResult", "AsyncRunStream", "RunStream", "create_agent"]

STREAM_MODES = ("updates", "messages", "values", "custom")
THREAD_CACHE_SIZE = 256
"""Threads an agent keeps in memory between runs (the least recently served go first);
a thread not kept is loaded from the checkpointer on its next run, with the same result."""


@attrs.frozen
class AgentResult:
    """What a run returns. ``messages`` is the thread's whole list after the run."""

    messages: list[AnyMessage]
    state: dict[str, Any]
    interrupts: list[Interrupt]
    structured_response: Any
    usage: Usage
    thread_id: str | None
    run_id: str

    @property
    def text(self) -> str:
        """The last AI message's text ("" if there is none)."""
        for message in reversed(self.messages):
            if isinstance(message, AIMessage):
                return message.text
        return ""


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
    :param response_format: an attrs class or a JSON schema for a structured answer.
    :param name: the agent's name, in traces, logs and errors (``runtime.agent_name``).
    :param tool_timeout: seconds a tool call may take unless its tool sets its own
        ``timeout``; past it the call is abandoned and the model gets an error message.
    """
    return Agent(
        model=model,
        tools=tools,
        system_prompt=system_prompt,
        middleware=middleware,
        checkpointer=checkpointer,
        store=store,
        response_format=response_format,
        name=name,
        tool_timeout=tool_timeout,
    )


def _by_url(value: Any, group: str, what: str) -> Any:
    if value is None or not isinstance(value, str):
        return value
    scheme = value.split(":", 1)[0] if ":" in value else value
    try:
        factory = _entrypoints.load(group, scheme, what=what)
    except ConfigError as exc:
        raise ConfigError(f"{what} URL {value!r}: {exc}") from None
    return factory(value)


def _as_tool(value: Any) -> Any:
    from plait.tools import Tool, tool

    if isinstance(value, Tool):
        return value
    if callable(value):
        return tool(value)
    raise ConfigError(f"tools must be plait.Tool objects or functions, got {value!r}")


class Agent:
    """A built agent. Thread-safe: runs on different threads may go on at once."""

    def __init__(
        self,
        *,
        model: str | ChatModel,
        tools: Sequence[Any],
        system_prompt: str | None,
        middleware: Sequence[Any],
        checkpointer: str | Checkpointer | None,
        store: str | Store | None,
        response_format: Any,
        name: str = "agent",
        tool_timeout: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"name must be a non-empty string, got {name!r}")
        if tool_timeout is not None and (
            isinstance(tool_timeout, bool)
            or not isinstance(tool_timeout, (int, float))
            or not tool_timeout > 0
        ):
            raise ConfigError(
                f"tool_timeout must be a positive number of seconds or None, got {tool_timeout!r}"
            )
        self.name = name
        self.tool_timeout: float | None = tool_timeout
        self.model = init_chat_model(model)
        self.system_prompt = system_prompt
        # Middleware and tools first: a mistake there must not leave a database file
        # behind (the checkpointer and store below may create one).
        resolved = resolve_middleware(middleware)
        self.middleware = tuple(obj for _, obj in resolved)
        self.registry = Registry(resolved)
        self.fields = self._collect_fields()
        own_tools = tuple(_as_tool(t) for t in tools)
        self.checkpointer: Checkpointer | None = _by_url(
            checkpointer, "plait.checkpointers", "checkpointer"
        )
        if self.checkpointer is not None and not isinstance(self.checkpointer, Checkpointer):
            raise ConfigError(f"checkpointer {checkpointer!r} is not a plait Checkpointer")
        self.store: Store | None = _by_url(store, "plait.stores", "store")
        if self.store is not None and not isinstance(self.store, Store):
            raise ConfigError(
                f"store {store!r} is not a plait Store (put, get, delete and search); "
                "pass a store URL such as 'memory' or an instance"
            )
        config = AgentConfig(
            self.model,
            own_tools,
            system_prompt,
            self.middleware,
            self.checkpointer,
            self.store,
            response_format,
            name,
        )
        added: list[Any] = []
        for impl in self.registry.impls("agent_tools"):
            for item in impl.call(config) or ():
                added.append(_as_tool(item))
        self.tools = own_tools + tuple(added)
        self.tools_by_name: dict[str, Any] = {}
        for item in self.tools:
            if item.name in self.tools_by_name:
                raise ConfigError(f"two tools are named {item.name!r}; tool names must be unique")
            self.tools_by_name[item.name] = item
        self.config = attrs.evolve(config, tools=self.tools)
        native = self.model.profile is None or self.model.profile.structured_output
        self.structured = Structured(response_format, native)
        for impl in self.registry.impls("validate_agent"):
            impl.call(self.config)
        self.loops = LoopThread()
        self._build_handlers()
        # The threads last served, newest last: a thread's next run skips loading it.
        self._cache: collections.OrderedDict[str, ThreadState] = collections.OrderedDict()
        self._active: set[str] = set()
        self._lock = threading.Lock()

    def _collect_fields(self) -> dict[str, StateField]:
        fields: dict[str, StateField] = {}
        owners: dict[str, type] = {}
        for impl in self.registry.impls("state_fields"):
            owner = type(self.middleware[self.registry.names.index(impl.middleware)])
            for key, spec in (impl.call() or {}).items():
                if key in ("messages", RUN_KEY):
                    raise ConfigError(
                        f"middleware {impl.middleware!r}: state key {key!r} is reserved"
                    )
                if not isinstance(spec, StateField):
                    raise ConfigError(
                        f"middleware {impl.middleware!r}: state_fields()[{key!r}] must be a "
                        f"plait.StateField, got {type(spec).__name__}"
                    )
                if key in fields and owners[key] is not owner:
                    if not (spec.shared and fields[key].shared and spec == fields[key]):
                        raise ConfigError(
                            f"state key {key!r} is declared by both {owners[key].__name__} and "
                            f"{owner.__name__} (middleware {impl.middleware!r}); a key belongs to "
                            "one middleware class unless both declare it shared=True, equally"
                        )
                fields[key] = spec
                owners.setdefault(key, owner)
        return fields

    # -- calls -----------------------------------------------------------------------------

    def _build_handlers(self) -> None:
        reg = self.registry
        model_layers = reg.pairs("wrap_model_call", "awrap_model_call")
        tool_layers = reg.pairs("wrap_tool_call", "awrap_tool_call")
        self._stream_layers = reg.pairs("transform_model_stream", "atransform_model_stream")
        self.model_handler = chain_sync(model_layers, self._call_model, _model_result, self.loops)
        self.amodel_handler = chain_async(model_layers, self._acall_model, _model_result)
        self.tool_handler = chain_sync(tool_layers, self._call_tool, _tool_result, self.loops)
        self.atool_handler = chain_async(tool_layers, self._acall_tool, _tool_result)
        self._run_layers = reg.pairs("wrap_run", "awrap_run")

    def model_request(self, thread: ThreadState, runtime: Runtime) -> ModelRequest:
        tools = self.tools
        if self.structured.tool is not None:
            tools = (*tools, self.structured.tool)
        return ModelRequest(
            model=self.model,
            messages=tuple(thread.messages),
            system_prompt=self.system_prompt,
            tools=tools,
            tool_choice=self.structured.tool_choice(self.tools),
            response_format=self.structured.request_format,
            state=thread.view,
            runtime=runtime,
        )

    @staticmethod
    def _model_kwargs(request: ModelRequest) -> dict[str, Any]:
        return dict(
            system_prompt=request.system_prompt,
            tools=request.tools,
            tool_choice=request.tool_choice,
            response_format=request.response_format,
            provider_options=request.provider_options or None,
            **request.model_settings,
        )

    def _call_model(self, request: ModelRequest) -> ModelResponse:
        sink = stream_sink.get()
        kwargs = self._model_kwargs(request)
        if sink is None:
            return ModelResponse([request.model.invoke(request.messages, **kwargs)])
        chunks = request.model.stream(request.messages, **kwargs)
        collected = []
        for chunk in transform_sync(self._stream_layers, iter(chunks), request, self.loops):
            collected.append(chunk)
            sink(StreamEvent("messages", chunk, "model"))
        return ModelResponse([assemble_chunks(collected)])

    async def _acall_model(self, request: ModelRequest) -> ModelResponse:
        sink = stream_sink.get()
        kwargs = self._model_kwargs(request)
        if sink is None:
            return ModelResponse([await request.model.ainvoke(request.messages, **kwargs)])
        chunks = request.model.astream(request.messages, **kwargs)
        collected = []
        async for chunk in transform_async(self._stream_layers, aiter(chunks), request):
            collected.append(chunk)
            sink(StreamEvent("messages", chunk, "model"))
        return ModelResponse([assemble_chunks(collected)])

    def _prepare(self, request: ToolCallRequest) -> tuple[Any, dict[str, Any]] | ToolMessage:
        from plait.tools import ToolArgumentError

        call, found = request.tool_call, request.tool
        if found is None:
            names = ", ".join(sorted(self.tools_by_name)) or "none"
            return _error(
                call.id,
                call.name,
                f"there is no tool named {call.name!r}. The available tools are: {names}.",
            )
        if found.func is None:
            return _error(
                call.id, call.name, f"tool {call.name!r} is run by the provider, not here."
            )
        try:
            kwargs = found.prepare(call.args, ToolRuntime(call, request.state, request.runtime))
        except ToolArgumentError as exc:
            return _error(
                call.id,
                call.name,
                f"invalid arguments for tool {call.name!r}: {exc}. "
                "Call it again with corrected arguments.",
            )
        return found, kwargs

    def _call_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        if effects.active():
            return effects.perform(effects.ToolRun(request), lambda: self._run_tool(request))
        return self._run_tool(request)

    async def _acall_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        if effects.active():
            return await effects.aperform(
                effects.ToolRun(request), lambda: self._arun_tool(request)
            )
        return await self._arun_tool(request)

    def _run_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        prepared = self._prepare(request)
        if isinstance(prepared, ToolMessage):
            return prepared
        found, kwargs = prepared
        limit = found.timeout or self.tool_timeout
        if limit is None:
            result = found.func(**kwargs)
            if found.is_async:
                result = self.loops.run(result)
        elif found.is_async:
            result = self.loops.run(
                _tool_threads.await_within(found.func(**kwargs), found.name, limit)
            )
        else:
            result = _tool_threads.call_within(found.func, kwargs, found.name, limit)
        return tool_output(result, request)

    async def _arun_tool(self, request: ToolCallRequest) -> ToolMessage | Command:
        prepared = self._prepare(request)
        if isinstance(prepared, ToolMessage):
            return prepared
        found, kwargs = prepared
        limit = found.timeout or self.tool_timeout
        if found.is_async:
            called = found.func(**kwargs)
            if limit is None:
                result = await called
            else:
                result = await _tool_threads.await_within(called, found.name, limit)
        elif limit is None:
            result = await asyncio.to_thread(_tool_threads.call, found.func, kwargs)
        else:
            result = await _tool_threads.acall_within(found.func, kwargs, found.name, limit)
        return tool_output(result, request)

    # -- runs ------------------------------------------------------------------------------

    def _begin(
        self,
        input: Any,
        thread_id: str | None,
        context: Any,
        recursion_limit: int,
        sink: Any,
    ) -> Run:
        if (
            not isinstance(recursion_limit, int)
            or isinstance(recursion_limit, bool)
            or recursion_limit < 1
        ):
            raise ConfigError(f"recursion_limit must be a positive int, got {recursion_limit!r}")
        if thread_id is not None and self.checkpointer is None:
            raise CheckpointerRequiredError(
                f"thread_id={thread_id!r} needs a checkpointer to keep the thread: "
                "create_agent(..., checkpointer='memory') in this process, or "
                "'sqlite:///agent.db' across restarts"
            )
        if thread_id is None and self.checkpointer is not None:
            thread_id = effects.new_id()
        thread = self._thread(thread_id)
        try:
            info, resumed = self._run_info(thread, thread_id, input)
        except BaseException:
            self._release(thread_id, None)
            raise
        runtime = Runtime(
            thread_id=thread_id,
            run_id=info.run_id,
            context=context,
            store=self.store,
            model=self.model,
            tools=self.tools,
            stream_writer=_writer(sink),
            agent_name=self.name,
        )
        return Run(
            self,
            thread,
            info,
            runtime,
            recursion_limit=recursion_limit,
            sink=sink,
            resumed=resumed,
            input=input,
        )

    def _run_info(
        self, thread: ThreadState, thread_id: str | None, input: Any
    ) -> tuple[RunInfo, bool]:
        """Continue the thread's unfinished run (resume, or ``None`` input) or start one;
        says which (``True`` for continuing)."""
        previous = thread.values.get(RUN_KEY)
        info = RunInfo.load(previous) if previous else None
        if isinstance(input, Command) and input.resume is not None:
            if info is None or info.status != "interrupted":
                raise PlaitError(
                    f"thread {thread_id!r} has no run paused at an interrupt, so there is "
                    "nothing to resume"
                )
            info.resume.update(_resume_values(input.resume, info.interrupts))
            info.status, info.interrupts = "running", []
            if input.update:
                thread.update(input.update, "input")
        elif input is None and info is not None and info.status != "done":
            info.status = "running"
        else:
            if info is not None and info.status != "done":
                _cancel_unanswered(thread, info, input)
            info = RunInfo(run_id=effects.new_id())
            thread.reset_run_fields()
            _apply_input(thread, input)
            return info, False
        return info, True

    def _thread(self, thread_id: str | None) -> ThreadState:
        if self.checkpointer is None or thread_id is None:
            return ThreadState(self.fields)
        with self._lock:
            if thread_id in self._active:
                raise ThreadBusyError(f"thread {thread_id!r} is being run by another call")
            self._active.add(thread_id)
            cached = self._cache.pop(thread_id, None)
        try:
            stored = self.checkpointer.step(thread_id)
            if cached is not None and cached.step == stored and not cached.dirty:
                return cached
            state = ThreadState(self.fields, self.checkpointer.load(thread_id))
        except BaseException:
            self._release(thread_id, None)
            raise
        return state

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

    def _result(self, run: Run) -> AgentResult:
        info = run.info
        return AgentResult(
            messages=list(run.thread.messages),
            state=run.thread.public(),
            interrupts=list(info.interrupts) if info.status == "interrupted" else [],
            structured_response=self.structured.load(info.structured_response),
            usage=info.usage,
            thread_id=run.runtime.thread_id,
            run_id=info.run_id,
        )

    def invoke(
        self,
        input: Any = None,
        *,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int = 25,
    ) -> AgentResult:
        """Run the agent until it answers, pauses at an interrupt, or fails.

        :param input: a string, a message, a list of messages, ``{"messages": [...]}``,
            ``Command(resume=...)`` to answer interrupts, or ``None`` to continue the
            thread's unfinished run.
        """
        return self._run_sync(input, thread_id, context, recursion_limit, None)

    def _run_sync(
        self, input: Any, thread_id: Any, context: Any, limit: int, sink: Any
    ) -> AgentResult:
        run = self._begin(input, thread_id, context, limit, sink)
        if not self._run_layers:
            return self._drive_sync(run)
        try:
            handler = chain_sync(
                self._run_layers, _once(lambda _r: self._drive_sync(run)), _run_result, self.loops
            )
            return handler(run.request)  # type: ignore[no-any-return]
        finally:
            if not run.started:  # a hook failed (or answered) before the run began
                self._release(run.runtime.thread_id, None)

    def _drive_sync(self, run: Run) -> AgentResult:
        run.started = True
        token = stream_sink.set(run.sink if _wants_messages(run.sink) else None)
        try:
            drive(run)
        except BaseException:
            self._release(run.runtime.thread_id, None)
            raise
        finally:
            stream_sink.reset(token)
        self._release(run.runtime.thread_id, run.thread)
        return self._result(run)

    async def ainvoke(
        self,
        input: Any = None,
        *,
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int = 25,
    ) -> AgentResult:
        """The async form of ``invoke``; never blocks the event loop."""
        return await self._run_async(input, thread_id, context, recursion_limit, None)

    async def _run_async(
        self, input: Any, thread_id: Any, context: Any, limit: int, sink: Any
    ) -> AgentResult:
        if self.checkpointer is not None and thread_id is not None:
            run = await asyncio.to_thread(self._begin, input, thread_id, context, limit, sink)
        else:
            run = self._begin(input, thread_id, context, limit, sink)
        if not self._run_layers:
            return await self._drive_async(run)
        try:
            handler = chain_async(
                self._run_layers, _aonce(lambda _r: self._drive_async(run)), _run_result
            )
            return await handler(run.request)  # type: ignore[no-any-return]
        finally:
            if not run.started:
                self._release(run.runtime.thread_id, None)

    async def _drive_async(self, run: Run) -> AgentResult:
        run.started = True
        token = stream_sink.set(run.sink if _wants_messages(run.sink) else None)
        try:
            await adrive(run)
        except BaseException:
            self._release(run.runtime.thread_id, None)
            raise
        finally:
            stream_sink.reset(token)
        self._release(run.runtime.thread_id, run.thread)
        return self._result(run)

    def stream(
        self,
        input: Any = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int = 25,
    ) -> RunStream:
        """Run like ``invoke``, yielding ``StreamEvent``s of the chosen mode(s) as they
        happen: ``updates`` (each state update, by source; a pause is an update from
        ``"interrupt"`` holding ``{"__interrupt__": [...]}``), ``messages`` (model chunks
        and tool messages), ``values`` (the state after each step), ``custom`` (what
        hooks and tools write with ``runtime.stream_writer``). Once the events are
        exhausted, the stream's ``result`` is the run's ``AgentResult``."""
        modes = _modes(mode)
        return RunStream(
            lambda sink: self._run_sync(input, thread_id, context, recursion_limit, sink), modes
        )

    def astream(
        self,
        input: Any = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        context: Any = None,
        recursion_limit: int = 25,
    ) -> AsyncRunStream:
        """The async form of ``stream`` (``async for``; then ``.result``)."""
        modes = _modes(mode)
        return AsyncRunStream(
            lambda sink: self._run_async(input, thread_id, context, recursion_limit, sink),
            modes,
        )

    def get_interrupts(self, thread_id: str) -> list[Interrupt]:
        """The interrupts the thread's run is paused at (``[]`` if it is not paused)."""
        data = self._need_checkpointer().load(thread_id)
        run = None if data is None else data.values.get(RUN_KEY)
        if not run:
            return []
        info = RunInfo.load(run)
        return list(info.interrupts) if info.status == "interrupted" else []

    # -- threads ---------------------------------------------------------------------------

    def _need_checkpointer(self) -> Checkpointer:
        if self.checkpointer is None:
            raise ConfigError("this agent has no checkpointer, so it keeps no threads")
        return self.checkpointer

    def get_state(self, thread_id: str) -> dict[str, Any]:
        """The thread's saved state: ``["messages"]`` plus every state key."""
        checkpoint = self._need_checkpointer().load(thread_id)
        return ThreadState(self.fields, checkpoint).public()

    def list_threads(self) -> list[str]:
        return self._need_checkpointer().list_threads()

    def delete_thread(self, thread_id: str) -> None:
        self._need_checkpointer().delete_thread(thread_id)
        with self._lock:
            self._cache.pop(thread_id, None)

    def close(self) -> None:
        """Release what the agent's middleware holds open (MCP sessions, shells …): each
        middleware object with a ``close()`` method has it called, last one first. Also
        ``with create_agent(...) as agent:``."""
        for obj in reversed(self.middleware):
            close = getattr(obj, "close", None)
            if callable(close):
                close()

    async def aclose(self) -> None:
        """``close`` for async code: a middleware's ``aclose()`` is awaited if it has one,
        else its ``close()`` runs in a worker thread."""
        for obj in reversed(self.middleware):
            aclose = getattr(obj, "aclose", None)
            close = getattr(obj, "close", None)
            if callable(aclose):
                await aclose()
            elif callable(close):
                await asyncio.to_thread(close)

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(self.registry.names)
        return f"<Agent model={self.model!r} tools={len(self.tools)} middleware=[{names}]>"


@attrs.frozen
class _Failure:
    error: BaseException


@attrs.frozen
class _Finished:
    result: AgentResult


class RunStream(Iterator[StreamEvent]):
    """The events of a streamed run, as they happen; the run starts on the first
    ``next()`` (in a worker thread, so tokens arrive while the model works) and, once the
    events are exhausted, ``result`` holds its ``AgentResult``."""

    def __init__(self, run: Any, modes: frozenset[str]) -> None:
        self._run = run
        self._events: queue.Queue[Any] = queue.Queue()
        self._sink = _Sink(modes, self._events.put)
        self._started = False
        self.result: AgentResult | None = None

    def _work(self) -> None:
        try:
            self._events.put(_Finished(self._run(self._sink)))
        except BaseException as exc:
            self._events.put(_Failure(exc))

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> StreamEvent:
        if not self._started:
            self._started = True
            context = contextvars.copy_context()
            threading.Thread(
                target=context.run, args=(self._work,), name="plait-stream", daemon=True
            ).start()
        if self.result is not None:
            raise StopIteration
        item = self._events.get()
        if isinstance(item, _Finished):
            self.result = item.result
            raise StopIteration
        if isinstance(item, _Failure):
            raise item.error
        event: StreamEvent = item
        return event


class AsyncRunStream(AsyncIterator[StreamEvent]):
    """The async form of ``RunStream``: the run is a task on the running loop, cancelled
    if the stream is closed early."""

    def __init__(self, run: Any, modes: frozenset[str]) -> None:
        self._run = run
        self._modes = modes
        self._events: asyncio.Queue[Any] | None = None
        self._task: asyncio.Future[None] | None = None
        self.result: AgentResult | None = None

    def _start(self) -> asyncio.Queue[Any]:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()
        loop_thread = threading.get_ident()

        def put(event: Any) -> None:
            if threading.get_ident() == loop_thread:
                events.put_nowait(event)
            else:
                loop.call_soon_threadsafe(events.put_nowait, event)

        async def work() -> None:
            try:
                put(_Finished(await self._run(_Sink(self._modes, put))))
            except BaseException as exc:
                put(_Failure(exc))

        self._task = asyncio.ensure_future(work())
        return events

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._events is None:
            self._events = self._start()
        if self.result is not None:
            raise StopAsyncIteration
        item = await self._events.get()
        if isinstance(item, _Finished):
            self.result = item.result
            raise StopAsyncIteration
        if isinstance(item, _Failure):
            raise item.error
        event: StreamEvent = item
        return event

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


class _Sink:
    """Delivers the events of the chosen modes; ``_wants_messages`` lets the kernel skip
    streaming the model when no one reads its chunks."""

    def __init__(self, modes: frozenset[str], put: Any) -> None:
        self.modes = modes
        self.put = put

    def __call__(self, event: StreamEvent) -> None:
        if event.mode in self.modes:
            self.put(event)


def _wants_messages(sink: Any) -> bool:
    return isinstance(sink, _Sink) and "messages" in sink.modes


def _writer(sink: Any) -> Any:
    if sink is None:
        return lambda _data: None

    def write(data: Any) -> None:
        sink(StreamEvent("custom", data, "custom"))

    return write


def _modes(mode: str | Sequence[str]) -> frozenset[str]:
    modes = frozenset((mode,) if isinstance(mode, str) else mode)
    unknown = modes - set(STREAM_MODES)
    if unknown or not modes:
        raise ConfigError(
            f"unknown stream mode(s) {sorted(unknown)}; choose from {', '.join(STREAM_MODES)}"
        )
    return modes


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


def _error(call_id: str, name: str, text: str) -> ToolMessage:
    return ToolMessage(f"Error: {text}", tool_call_id=call_id, name=name, status="error")


def _model_result(result: Any, request: Any, source: str) -> ModelResponse:
    if isinstance(result, ModelResponse):
        return result
    if isinstance(result, AIMessage):
        return ModelResponse([result])
    raise TypeError(
        f"middleware {source!r}: wrap_model_call returned {type(result).__name__}; "
        "expected a ModelResponse or an AIMessage"
    )


def _tool_result(result: Any, request: ToolCallRequest, source: str) -> ToolMessage | Command:
    if isinstance(result, (ToolMessage, Command)):
        return result
    raise TypeError(
        f"middleware {source!r}: wrap_tool_call returned {type(result).__name__}; "
        "expected a ToolMessage or a plait.Command"
    )


def _apply_input(thread: ThreadState, input: Any) -> None:
    if input is None:
        return
    if isinstance(input, Command):
        if input.update:
            thread.update(input.update, "input")
        return
    if isinstance(input, str):
        input = [HumanMessage(input)]
    elif isinstance(input, Message):
        input = [input]
    elif isinstance(input, Mapping):
        thread.update(input, "input")
        return
    elif isinstance(input, Sequence):
        input = [HumanMessage(m) if isinstance(m, str) else m for m in input]
    else:
        raise TypeError(
            "input must be a string, a message, a list of messages, a dict update, "
            f"a Command or None; got {type(input).__name__}"
        )
    thread.add_messages(input, "input")


def _cancel_unanswered(thread: ThreadState, info: RunInfo, input: Any) -> None:
    """New input on a thread whose run did not finish (paused at an interrupt, or stopped
    between steps) starts a new run: the old run's tool calls that have no answer get an
    error ToolMessage first, so the model is never sent calls without results (which
    providers reject)."""
    given = input if isinstance(input, Sequence) and not isinstance(input, str) else [input]
    answered = {m.tool_call_id for m in given if isinstance(m, ToolMessage)}
    why = "waiting for a human's answer" if info.status == "interrupted" else "not finished"
    thread.add_messages(
        [
            ToolMessage(
                f"Not run: this call was {why} when new input arrived, so it was cancelled.",
                tool_call_id=call.id,
                name=call.name,
                status="error",
                metadata={"plait": {"cancelled": True}},
            )
            for call in thread.last_calls()[1]
            if call.id not in answered
        ],
        "input",
    )


def _resume_values(resume: Any, pending: list[Interrupt]) -> dict[str, Any]:
    ids = [i.id for i in pending]
    if isinstance(resume, Mapping) and resume and set(resume) <= set(ids):
        return dict(resume)
    if len(ids) == 1:
        return {ids[0]: resume}
    raise PlaitError(
        f"{len(ids)} interrupts are pending ({', '.join(ids)}); resume with "
        "Command(resume={interrupt_id: value, ...})"
    )
