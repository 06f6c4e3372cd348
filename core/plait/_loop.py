"""The agent loop, written once as a generator of steps and driven sync or async.

``Run.steps`` decides what happens next (nodes, routing, jumps, checkpoints,
interrupts); it never calls a hook, a model or a tool itself but yields a ``Step``
(``AwaitHook``, ``AskModel``, ``RunTools``, ``SaveStep``), which the sync driver
(``drive``) or the async driver (``adrive``) performs and sends back. Steps are the
loop's own vocabulary; ``plait.effects`` (``ModelCall``, ``ToolRun``) is another, one
level down: what a performer (tracing, durable execution, recording) sees of each call
to a provider or a tool, whoever makes it.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from plait._plugin_errors import NAMEABLE, raise_named
from plait._state import RUN_KEY, ThreadState
from plait._stream import ToolCallScope, in_tool_call, run_sink, saved
from plait.errors import (
    CheckpointerRequiredError,
    ConfigError,
    RecursionLimitError,
    StopRun,
    StructuredOutputError,
)
from plait.interrupts import InterruptSignal, Scope, current_scope
from plait.lazy import define
from plait.messages import (
    AIMessage,
    HumanMessage,
    Message,
    ToolCall,
    ToolMessage,
    Usage,
    is_removal,
    persisted_converter,
    structure_message,
    unstructure_message,
)
from plait.tools import error_update, raised_by_tool, tool_error_message
from plait.types import (
    Command,
    ModelRequest,
    ModelResponse,
    RunRequest,
    Runtime,
    ToolCallRequest,
)
from plait.usage import RunUsage
from plait.usage import _current as current_usage

if TYPE_CHECKING:
    import asyncio

    import cattrs

    from plait._compiled import CompiledAgent
    from plait._interrupt import Interrupt
    from plait._stream import EventSink
    from plait._stream_event import StreamEvent


def _event(
    mode: str,
    data: Any,
    source: str,
    *,
    step: int | None = None,
    shown: tuple[Any, ...] | None = None,
) -> StreamEvent:
    """A ``StreamEvent`` for the run's sink (its class is made when a run first streams)."""
    from plait._stream_event import StreamEvent

    return StreamEvent(mode, data, source, step=step, shown=shown)


@define
class RunInfo:
    """The run in progress, checkpointed under ``RUN_KEY`` so it survives a crash."""

    run_id: str
    node: str = "before_agent"
    hook: int = 0
    model_calls: int = 0
    status: str = "running"  # running | interrupted | done
    interrupts: list[Interrupt] = attrs.field(factory=list)
    resume: dict[str, Any] = attrs.field(factory=dict)
    usage: Usage = attrs.field(factory=Usage)
    """Every model call's usage so far (``plait.usage``), nested runs' included."""
    calls: int = 0
    """Every model call made for the run so far: its own, middleware's, nested runs'."""
    structured_response: Any = None
    format_retries: int = 0
    """Answers not in the ``response_format`` the model was asked to redo so far."""
    finished: dict[str, Any] = attrs.field(factory=dict)
    """The answers of a tools step's calls that finished, by call id, saved as each
    finishes (when a step has several), so a crash re-runs only the calls in flight."""
    owner: str = ""
    """The run that saved the record last (``Run.owner``: its process and its drive) and
    when (``saved_at``, wall clock). A run of this process is live while it is being
    driven; one of another process, if it saved within ``checkpoint.RUN_LEASE``."""
    saved_at: float = 0.0

    def live_elsewhere(self, lease: float) -> bool:
        """Whether another run holds the thread: one driven in this process right now
        (another ``Agent`` object on the same database), or one another process saved
        within ``lease`` seconds."""
        if self.status != "running" or not self.owner:
            return False
        if self.of_this_process():
            with _live_lock:
                return self.owner in _live
        return time.time() - self.saved_at < lease

    def of_this_process(self) -> bool:
        return self.owner.partition("/")[0] == PROCESS

    def dump(self) -> Any:
        return _run_info_converter().unstructure(self)

    @classmethod
    def load(cls, data: Any) -> RunInfo:
        return _run_info_converter().structure(data, cls)


@functools.cache
def _run_info_converter() -> cattrs.Converter:
    """The persisted converter, once ``RunInfo``'s field types are resolved (a run's
    every save dumps it; this is done at its first): ``Interrupt`` is imported on first
    use (``plait._interrupt``), so it is not in this module's namespace, where the
    converter would look for it."""
    from plait._interrupt import Interrupt

    attrs.resolve_types(RunInfo, localns={"Interrupt": Interrupt})
    return persisted_converter()


PROCESS = ""
"""This process, as ``RunInfo.owner`` names it (renewed in a forked child)."""


def _new_process() -> None:
    global PROCESS
    PROCESS = f"{os.getpid()}-{os.urandom(4).hex()}"


_new_process()
os.register_at_fork(after_in_child=_new_process)

_live: set[str] = set()
"""The owners (``Run.owner``) of the runs being driven in this process."""
_live_lock = threading.Lock()
_drives = itertools.count(1)


# -- steps: what the loop asks its driver to do -------------------------------------------
# Plain classes with slots rather than attrs classes or named tuples: one is made at every
# step of every run, and at import a plain class is made in a few microseconds, where an
# attrs class compiles its methods and a named tuple compiles each field's annotation.


class AwaitHook:
    """An ``async def`` node hook to await (sync ones the loop calls inline)."""

    __slots__ = ("args", "call")

    def __init__(self, call: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.call = call
        self.args = args


class AskModel:
    __slots__ = ("request",)

    def __init__(self, request: ModelRequest) -> None:
        self.request = request


def _no_save(_request: ToolCallRequest, _outcome: Any) -> SaveStep | None:
    return None


class RunTools:
    """The calls of a tools step, each with its interrupt scope. ``finished`` is called by
    the driver with each call's outcome as it comes; a ``SaveStep`` it returns is performed
    at once. ``path`` is the run's path (``RunUsage.path``): a run started inside a call
    nests below it."""

    __slots__ = ("finished", "path", "requests", "scopes", "sink")

    def __init__(
        self,
        requests: tuple[ToolCallRequest, ...],
        scopes: tuple[Scope, ...],
        finished: Callable[[ToolCallRequest, Any], SaveStep | None] = _no_save,
        path: tuple[str, ...] = (),
        sink: EventSink | None = None,
    ) -> None:
        self.requests = requests
        self.scopes = scopes
        self.finished = finished
        self.path = path
        self.sink = sink

    def nest(self, request: ToolCallRequest) -> ToolCallScope:
        call_id = request.tool_call.id
        return ToolCallScope((call_id,), (*self.path, call_id), self.sink)


class SaveStep:
    __slots__ = ("state", "thread_id")

    def __init__(self, thread_id: str, state: ThreadState) -> None:
        self.thread_id = thread_id
        self.state = state


Step = AwaitHook | AskModel | RunTools | SaveStep

_SAVES_INPUT = frozenset({"before_model", "model"})
"""The nodes that save what no node saved before they start (``Run.save_input``)."""
Steps = Generator[Step, Any, Any]


class Run:
    """One run of an agent on one thread: the nodes, in loop order."""

    def __init__(
        self,
        agent: CompiledAgent,
        thread: ThreadState,
        info: RunInfo,
        runtime: Runtime,
        *,
        recursion_limit: int,
        sink: EventSink | None,
        resumed: bool = False,
        input: Any = None,
        usage: RunUsage | None = None,
    ) -> None:
        self.agent = agent
        self.usage = usage if usage is not None else RunUsage(base=info.usage)
        self.thread = thread
        self.info = info
        self.runtime = runtime
        self.recursion_limit = recursion_limit
        self.sink = sink
        self.gate = sink.gate if sink is not None else None
        """Called before each step starts (``EventSink.gate``, through ``pace``): a
        stream's reader sets the pace, and a reader who left ends the run there."""
        self.request = RunRequest(
            input,
            runtime,
            resumed,
            streaming=sink is not None,
            usage=self.usage,
            state=thread.view,
        )
        self.started = False  # the drive began: from then on it releases the thread
        self.served = False
        """A served call (``plait._served``): the thread's last AI message was not the
        model's; the loop runs its hooks and tools, then ends without calling the model."""
        self.owner = f"{PROCESS}/{next(_drives)}"
        """This drive of the run, as ``RunInfo.owner`` names it: each ``invoke`` holds the
        thread on its own, so two ``Agent`` objects of one process exclude each other."""
        # Interrupt ids derive from where interrupt() is called; hooks and the model run
        # one at a time, so they share one scope the loop re-labels before each call.
        self.scope = Scope(info.run_id, "", info.resume)
        self.node_ran = info.node
        """The node running now: the one a step saved is recorded under in history."""

    # -- the loop --------------------------------------------------------------------------

    def steps(self) -> Steps:
        info = self.info
        nodes: dict[str, Callable[[], Steps]] = {
            "before_agent": lambda: self.node_hooks("before_agent", "before_model"),
            "before_model": lambda: self.node_hooks("before_model", "model"),
            "model": self.model_node,
            "after_model": lambda: self.node_hooks("after_model", None),
            "tools": self.tools_node,
            "after_agent": lambda: self.node_hooks("after_agent", "done"),
        }
        keeps = self.agent.keeps(self.runtime.thread_id)
        while info.node != "done":
            node = self.node_ran = info.node
            if node in _SAVES_INPUT and keeps and self.thread.dirty:
                yield from self.save_input()
            outcome = yield from nodes[node]()
            if outcome is None:  # paused at an interrupt (already checkpointed)
                return
            nxt, ran = outcome
            if self.served and nxt in ("before_model", "model"):
                nxt = "after_agent"
            info.node = nxt
            info.hook = 0
            if nxt == "done":
                info.status = "done"
                info.resume = {}
            if ran or nxt == "done":
                yield from self.save()
            if ran and self.sink is not None and self.sink.wants("values"):
                step = self.thread.step if self.agent.keeps(self.runtime.thread_id) else None
                self.sink(_event("values", self.thread.public(), node, step=step))

    def save(self) -> Steps:
        """Save the thread as a step of ``node_ran`` (history's name for it), and mark the
        step for the run log once it is stored (``plait._stream.SAVED``): every step a run
        saves is marked once, in order, whether or not ``values`` streams it."""
        if self.agent.keeps(self.runtime.thread_id):
            self.record()
            yield SaveStep(self.runtime.thread_id, self.thread)
            saved(self.sink, self.node_ran, self.thread.step)

    def record(self) -> None:
        """Put the run's record in the state, to be saved with the step."""
        with _live_lock:
            _live.add(self.owner)
        self.info.owner, self.info.saved_at = self.owner, time.time()
        self.info.usage, self.info.calls = self.usage.total, self.usage.calls
        self.thread.set(RUN_KEY, self.info.dump())
        self.thread.writer = (self.info.run_id, self.node_ran)

    def end(self) -> None:
        """The drive is over (returned, raised, or was abandoned): the run no longer
        holds its thread in this process."""
        with _live_lock:
            _live.discard(self.owner)

    def pace(self) -> Steps:
        """Before a step starts: wait for the stream's reader (``EventSink.gate``) — in
        the driver's thread on the sync path, as an awaited step on the async one."""
        assert self.gate is not None
        wait = self.gate()
        if wait is not None:
            yield AwaitHook(wait, ())

    def enter(self, key: str) -> None:
        self.scope.key = f"{self.info.model_calls}:{key}"
        self.scope.counter = 0

    def tool_scope(self, call_id: str) -> Scope:
        return Scope(self.info.run_id, f"{self.info.model_calls}:tools:{call_id}", self.info.resume)

    def pause(self, interrupts: list[Interrupt]) -> Steps:
        if self.agent.checkpointer is None and not self.served:
            raise CheckpointerRequiredError(
                "plait.interrupt() needs a checkpointer to pause and resume the run: "
                "pass checkpointer='memory' (or 'sqlite:///agent.db') to create_agent"
            )
        self.info.status = "interrupted"
        self.info.interrupts = interrupts
        yield from self.save()
        if self.sink is not None:
            shown = shown_interrupts(self.agent, interrupts, self.thread.view)
            self.sink(_event("updates", {"__interrupt__": shown}, "interrupt"))

    # -- nodes -----------------------------------------------------------------------------

    def node_hooks(self, hook: str, default_next: str | None) -> Steps:
        impls = self.agent.registry.impls(hook)
        args = (self.thread.view, self.runtime)
        start = self.info.hook
        jump: str | None = None
        for index in range(start, len(impls)):
            impl = impls[index]
            if self.gate is not None:
                yield from self.pace()
            self.info.hook = index
            self.enter(f"{hook}:{impl.middleware}")
            try:
                if impl.is_async:
                    result = yield AwaitHook(impl.call, args)
                else:
                    result = impl.call(*args)
            except InterruptSignal as signal:
                yield from self.pause([signal.interrupt])
                return None
            except StopRun as stop:
                if stop.update:  # what the hook counted up to the stop (a limiter's)
                    self.apply_update(stop.update, impl.middleware)
                    yield from self.save()
                raise
            except NAMEABLE as exc:
                raise_named(exc, impl.middleware, impl.owner)
            if result is None:
                continue
            jump = self.apply_result(result, impl.middleware, hook, impl.jumps)
            if jump is not None:
                break
        ran = bool(impls)
        if jump is not None:
            return self.jump_target(jump, hook), ran
        if default_next is None:
            return self.route_after_model(), ran
        return default_next, ran

    def apply_result(
        self, result: Any, source: str, hook: str, allowed: frozenset[str]
    ) -> str | None:
        if isinstance(result, Command):
            if result.jump_to is not None and result.jump_to not in allowed:
                declared = ", ".join(sorted(allowed)) or "none"
                raise ConfigError(
                    f"middleware {source!r}: {hook} returned jump_to={result.jump_to!r} "
                    f"but declares only: {declared}; decorate the hook with "
                    f"@plait.can_jump_to({result.jump_to!r})"
                )
            if result.update:
                self.apply_update(result.update, source)
            return result.jump_to
        if isinstance(result, Mapping):
            if "jump_to" in result:
                # LangChain's form, {"messages": [...], "jump_to": "end"}: a jump, as
                # Command(update=..., jump_to=...) is, never a state key of that name
                update = {key: value for key, value in result.items() if key != "jump_to"}
                command = Command(update=update or None, jump_to=result["jump_to"])
                return self.apply_result(command, source, hook, allowed)
            self.apply_update(result, source)
            return None
        raise TypeError(
            f"middleware {source!r}: {hook} returned {type(result).__name__}; expected a dict "
            "update, a plait.Command or None"
        )

    def apply_update(self, update: Mapping[str, Any], source: str) -> None:
        self.thread.update(update, source)
        if self.sink is not None and self.sink.wants("updates"):
            shown = self.shown_update(update.get("messages"))
            self.sink(_event("updates", {source: dict(update)}, source, shown=shown))

    def shown_update(self, messages: Any) -> tuple[Any, ...] | None:
        """An update's messages as a caller reads them (``StreamEvent.shown``), or
        ``None`` if no ``show_messages`` hook changed any."""
        if not isinstance(messages, (list, tuple)) or not self.agent.registry.impls(
            "show_messages"
        ):
            return None
        whole = [m for m in messages if isinstance(m, Message)]
        shown = iter(self.shown(whole))
        out = tuple(next(shown) if isinstance(m, Message) else m for m in messages)
        return out if any(a is not b for a, b in zip(out, messages, strict=True)) else None

    def jump_target(self, jump: str, hook: str) -> str:
        if jump == "end":
            return "done" if hook == "after_agent" else "after_agent"
        if jump == "model":
            return "model" if hook == "before_model" else "before_model"
        return "tools"

    def route_after_model(self) -> str:
        """Tools if the model's calls await answers; the model again if hooks answered
        them all (e.g. a limit blocked them); else the end."""
        if self.info.structured_response is not None:
            return "after_agent"
        message, pending = self.last_calls()
        if pending:
            return "tools"
        return "before_model" if message is not None and message.tool_calls else "after_agent"

    def pending_calls(self) -> list[ToolCall]:
        return self.last_calls()[1]

    def last_calls(self) -> tuple[AIMessage | None, list[ToolCall]]:
        return self.thread.last_calls()

    def model_node(self) -> Steps:
        info = self.info
        if self.gate is not None:
            yield from self.pace()
        if info.model_calls >= self.recursion_limit:
            raise RecursionLimitError(
                f"the run reached its recursion limit of {self.recursion_limit} model calls "
                "without finishing; raise recursion_limit= in invoke() if the task needs more"
            )
        info.model_calls += 1
        request = self.agent.model_request(self.thread, self.runtime)
        streamed = self.sink.streamed_calls if self.sink is not None else 0
        try:
            self.enter("model")
            response = yield AskModel(request)
        except InterruptSignal as signal:
            info.model_calls -= 1
            yield from self.pause([signal.interrupt])
            return None
        except StopRun as stop:
            if stop.update:  # what a wrap hook recorded of the stop (a guardrail's trip)
                self.apply_update(stop.update, "model")
                yield from self.save()
            raise
        self.emit_unstreamed(response, streamed)
        self.apply_update({"messages": list(response.messages)}, "model")
        message = response.message
        structured = self.agent.structured
        try:
            if response.structured_response is not None:
                info.structured_response = structured.dump(response.structured_response)
            elif structured.native and message is not None and not message.tool_calls:
                info.structured_response = structured.dump(structured.parse_text(message.text))
            elif message is not None:
                structured.check_answered(message)
        except StructuredOutputError as error:
            self.redo_answer(error)  # or raise, once the retries are spent
            return "before_model", True
        return "after_model", True

    def save_input(self) -> Steps:
        """Save, as the ``before_model`` or ``model`` node starts, what the run changed
        that no node saved: the input of a run with no ``before_agent`` hook (a node that
        ran saved its own), or a resume's update. A run stopped from then on (a
        ``StopRun``, a provider's error, the process killed, in a ``before_model`` hook's
        model call or the run's own) leaves the thread with its input, as LangGraph's
        checkpoint before a failing node holds it, and ``invoke(None, ...)`` runs that
        node again. Never saved before the ``before_agent`` hooks: one that rewrites or
        refuses the input (``pii``, ``guardrails``) acts before anything is stored. The
        step is recorded under ``"input"`` (LangGraph's ``source`` for it), and streamed
        as the ``values`` after it, as LangGraph streams its input's (the run log's
        ``step`` event for it)."""
        node, self.node_ran = self.node_ran, "input"
        try:
            yield from self.save()
        finally:
            self.node_ran = node
        if self.sink is not None and self.sink.wants("values"):
            self.sink(_event("values", self.thread.public(), "input", step=self.thread.step))

    def redo_answer(self, error: StructuredOutputError) -> None:
        """Ask the model again for an answer in the format, telling it what was wrong —
        or raise ``error`` when the agent's ``output_retries`` are spent."""
        if self.info.format_retries >= self.agent.structured.retries:
            raise error
        self.info.format_retries += 1
        tool = self.agent.structured.tool
        how = f"call {tool.name!r} with it" if tool is not None else "reply with JSON only"
        self.apply_update(
            {
                "messages": [
                    HumanMessage(
                        f"Your answer is not in the required format: {error}. Give the "
                        f"final answer again in that format ({how}).",
                        metadata={"plait": {"format_retry": self.info.format_retries}},
                    )
                ]
            },
            "model",
        )

    def tools_node(self) -> Steps:
        calls = self.pending_calls()
        if not calls:
            return "before_model", False
        if self.gate is not None:
            yield from self.pace()
        tools = self.agent.tools_by_name
        structured = self.agent.structured
        answers: dict[str, Any] = {}
        requests: list[ToolCallRequest] = []
        scopes: list[Scope] = []
        for call in calls:
            if call.id in self.info.finished:  # finished before a crash: not run again
                answers[call.id] = _load_outcome(self.info.finished[call.id])
            elif call.error is not None:
                answers[call.id] = ToolMessage.error(
                    call,
                    f"Error: the call to {call.name!r} was not run because {call.error}. "
                    "Call the tool again with arguments that are one valid JSON object.",
                )
            elif structured.tool is not None and call.name == structured.tool.name:
                answers[call.id] = self.final_answer(call)
            else:
                requests.append(
                    ToolCallRequest(call, tools.get(call.name), self.thread.view, self.runtime)
                )
                scopes.append(self.tool_scope(call.id))
        if requests:
            durable = self.agent.keeps(self.runtime.thread_id)
            effect = RunTools(
                tuple(requests),
                tuple(scopes),
                self.tool_finished if durable and len(requests) > 1 else _no_save,
                self.usage.path,
                self.sink,
            )
            outcomes = yield effect
            for request, outcome in zip(requests, outcomes, strict=True):
                answers[request.tool_call.id] = outcome
        self.info.finished = {}
        interrupts: list[Interrupt] = []
        stop: BaseException | None = None
        jump: str | None = None
        for outcome in answers.values():
            if isinstance(outcome, MiddlewareFailure):
                raise outcome.error
        for call in calls:
            outcome = answers[call.id]
            if isinstance(outcome, InterruptSignal):
                interrupts.append(outcome.interrupt)
                continue
            if isinstance(outcome, StopRun):
                stop = stop or outcome
                # the error's own full stop gives way to the sentence's
                reason = str(outcome).removesuffix(".")
                if getattr(outcome, _CALLED, False):  # the tool may have done what it does
                    text = f"The tool was called, but the run was stopped ({reason})."
                else:
                    text = f"Not run: the run was stopped ({reason})."
                outcome = ToolMessage.error(call, text)
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome
            jump = self.apply_tool_outcome(call, outcome) or jump
        if stop is not None:
            yield from self.save()
            raise stop
        if interrupts:
            yield from self.pause(interrupts)
            return None
        if self.info.structured_response is not None or jump == "end":
            return "after_agent", True
        return "before_model", True

    def tool_finished(self, request: ToolCallRequest, outcome: Any) -> SaveStep | None:
        """Record one finished call of a tools step, to be saved before the others end."""
        assert self.runtime.thread_id is not None
        dumped = _dump_outcome(request.tool_call, outcome)
        if dumped is None:
            return None
        self.info.finished[request.tool_call.id] = dumped
        self.record()
        return SaveStep(self.runtime.thread_id, self.thread)

    def apply_tool_outcome(self, call: ToolCall, outcome: Any) -> str | None:
        source = call.name
        if isinstance(outcome, Exception):
            outcome = _error_outcome(call, outcome)
        if isinstance(outcome, ToolMessage):
            self.apply_update({"messages": [outcome]}, source)
            self.count_usage(outcome)
            self.emit_message(outcome, source)
            return None
        assert isinstance(outcome, Command)
        update = dict(outcome.update or {})
        messages = update.get("messages", [])
        if isinstance(messages, Message) or is_removal(messages):
            messages = [messages]
        answered = any(isinstance(m, ToolMessage) and m.tool_call_id == call.id for m in messages)
        if not answered:
            messages = [*messages, ToolMessage("", tool_call_id=call.id, name=call.name)]
        update["messages"] = messages
        self.apply_update(update, source)
        for message in messages:
            if isinstance(message, ToolMessage):
                self.count_usage(message)
                self.emit_message(message, source)
        return outcome.jump_to

    def count_usage(self, message: ToolMessage) -> None:
        """A tool's usage the ledger did not see (a model called outside plait)."""
        if message.usage is not None:
            self.usage.add(message.usage)

    def emit_unstreamed(self, response: ModelResponse, streamed: int) -> None:
        """In ``messages`` mode, the AI messages of a model call that streamed no chunk (a
        cached answer, a ``wrap_model_call`` hook that answered itself, a handoff's
        receiver) once, whole — as LangGraph sends a node's message it saw no token of —
        so a reader of the stream sees every answer."""
        sink = self.sink
        if sink is None or not sink.wants("messages") or sink.streamed_calls != streamed:
            return
        answers = [m for m in response.messages if isinstance(m, AIMessage)]
        for message in self.shown(answers):
            sink(_event("messages", message, "model"))

    def emit_message(self, message: Message, source: str) -> None:
        if self.sink is not None and self.sink.wants("messages"):
            (shown,) = self.shown([message])
            self.sink(_event("messages", shown, source))

    def shown(self, messages: Sequence[Message]) -> list[Message]:
        """Whole messages as the ``messages`` stream shows them: through every
        ``show_messages`` hook in middleware order (``pii`` shows real values where the
        thread holds placeholders)."""
        impls = self.agent.registry.impls("show_messages")
        shown = list(messages)
        if not impls or not shown:
            return shown
        for impl in impls:
            shown = list(impl.call(shown, self.thread.view))
            if len(shown) != len(messages):
                raise TypeError(
                    f"middleware {impl.middleware!r}: show_messages returned {len(shown)} "
                    f"messages for {len(messages)}; expected one per message"
                )
        return shown

    def final_answer(self, call: ToolCall) -> ToolMessage:
        structured = self.agent.structured
        try:
            value = structured.parse_args(call.args)
        except StructuredOutputError as exc:
            if self.info.format_retries >= structured.retries:
                raise
            self.info.format_retries += 1
            return ToolMessage.error(
                call,
                f"Error: the answer does not match the required format: {exc}. "
                f"Call {call.name!r} again with a corrected answer.",
            )
        self.info.structured_response = structured.dump(value)
        return ToolMessage("Final answer recorded.", tool_call_id=call.id, name=call.name)


def shown_interrupts(
    agent: CompiledAgent, interrupts: Sequence[Interrupt], state: Mapping[str, Any]
) -> list[Interrupt]:
    """``interrupts`` as a caller or reviewer reads them: through every ``show_interrupts``
    hook in middleware order (``pii`` shows real values where the thread holds
    placeholders). The checkpoint keeps what was raised."""
    shown = list(interrupts)
    for impl in agent.registry.impls("show_interrupts"):
        shown = list(impl.call(shown, state))
    return shown


def _dump_outcome(call: ToolCall, outcome: Any) -> dict[str, Any] | None:
    """A finished call's outcome as JSON-ready data; ``None`` for what is not recorded
    (interrupts and stops, which the step handles, and updates holding other objects)."""
    if isinstance(outcome, (InterruptSignal, StopRun)) or not isinstance(
        outcome, (Exception, ToolMessage, Command)
    ):
        return None
    if isinstance(outcome, Exception):
        outcome = _error_outcome(call, outcome)
    if isinstance(outcome, ToolMessage):
        return {"message": unstructure_message(outcome)}
    update = dict(outcome.update or {})
    messages = update.get("messages", [])
    if isinstance(messages, Message):
        messages = [messages]
    if any(not isinstance(m, Message) and is_removal(m) for m in messages):
        return None
    update["messages"] = [unstructure_message(m) for m in messages]
    return {"update": update, "jump_to": outcome.jump_to}


def _error_outcome(call: ToolCall, error: Exception) -> ToolMessage | Command:
    """The error message the model is told for a tool's ``error``, with the state keys a
    hook set for it (``plait.tools.set_error_update``) as an update of the same step."""
    message = tool_error_message(call, error)
    update = error_update(error)
    return Command(update={**update, "messages": [message]}) if update else message


def _load_outcome(data: Mapping[str, Any]) -> ToolMessage | Command:
    if "message" in data:
        message = structure_message(data["message"])
        assert isinstance(message, ToolMessage)
        return message
    update = dict(data["update"])
    update["messages"] = [structure_message(m) for m in update["messages"]]
    return Command(update=update, jump_to=data.get("jump_to"))


# -- drivers ---------------------------------------------------------------------------------


def drive(run: Run) -> Any:
    """Run the loop synchronously, performing each effect in this thread."""
    steps = run.steps()
    agent = run.agent
    token = current_scope.set(run.scope)
    usage = current_usage.set(run.usage)
    calling = in_tool_call.set(None)  # the tool call this run may be nested in is done with
    sink = run_sink.set(run.sink)
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                effect = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as stop:
                return stop.value
            error = None
            try:
                value = _perform(effect, agent)
            except BaseException as exc:  # handed to the loop, which decides
                value, error = None, exc
    finally:
        run.info.usage, run.info.calls = run.usage.total, run.usage.calls
        run_sink.reset(sink)
        in_tool_call.reset(calling)
        current_usage.reset(usage)
        current_scope.reset(token)
        run.end()


def _perform(effect: Step, agent: CompiledAgent) -> Any:
    if isinstance(effect, AwaitHook):
        return agent.loops.run(effect.call(*effect.args))
    if isinstance(effect, AskModel):
        return agent.model_handler(effect.request)
    if isinstance(effect, RunTools):
        outcomes: list[Any] = []
        for request, scope in zip(effect.requests, effect.scopes, strict=True):
            token = current_scope.set(scope)
            nest = effect.nest(request)
            nesting = in_tool_call.set(nest)
            try:
                outcomes.append(agent.tool_handler(request))
            except (Exception, InterruptSignal) as exc:
                outcomes.append(_outcome_of(exc, request, called=nest.called))
                if isinstance(exc, StopRun) or isinstance(outcomes[-1], MiddlewareFailure):
                    break
            finally:
                in_tool_call.reset(nesting)
                current_scope.reset(token)
            save = effect.finished(request, outcomes[-1])
            if save is not None:
                _save(save, agent)
                saved(effect.sink, save.state.writer[1], save.state.step)
        outcomes.extend(_not_run(effect.requests[len(outcomes) :]))
        return outcomes
    _save(effect, agent)
    return None


class MiddlewareFailure:
    """A tool call's outcome when a ``wrap_tool_call`` middleware around it raised: the
    tools step raises ``error`` to the caller once the step's calls are done. A plain
    class, as the loop's steps are."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


_CALLED = "_plait_tool_called"
"""Set on a ``StopRun`` raised around a call that reached its tool (``ToolCallScope.called``)."""


def _outcome_of(
    error: Exception | InterruptSignal, request: ToolCallRequest, *, called: bool
) -> Any:
    """What a tool call that raised ``error`` answers: the error itself, which the model is
    told of, if the tool raised it (or it stops or pauses the run, noting whether the tool
    was ``called``); a ``MiddlewareFailure`` if a middleware around the call did."""
    if isinstance(error, StopRun):
        if called:
            setattr(error, _CALLED, True)
        return error
    if isinstance(error, InterruptSignal) or raised_by_tool(error):
        return error
    with contextlib.suppress(Exception):
        error.add_note(
            f"plait: raised by a wrap_tool_call middleware around the call to tool "
            f"{request.tool_call.name!r}, not by the tool, so the run stops (a tool's own "
            "error is sent to the model)"
        )
    return MiddlewareFailure(error)


def _not_run(requests: Sequence[ToolCallRequest]) -> list[ToolMessage]:
    return [
        ToolMessage.error(r.tool_call, "Not run: the run was stopped before this call.")
        for r in requests
    ]


def _save(effect: SaveStep, agent: CompiledAgent) -> None:
    assert agent.checkpointer is not None
    delta = effect.state.take_delta()
    agent.checkpointer.save(effect.thread_id, delta)
    effect.state.step = delta.step


async def adrive(run: Run) -> Any:
    """Run the loop on the running event loop; tool calls of one message run concurrently."""
    steps = run.steps()
    agent = run.agent
    # Reset on the way out: a tool that awaits another agent's ainvoke in its own task
    # (a sub-agent) must get its own interrupt scope back.
    token = current_scope.set(run.scope)
    usage = current_usage.set(run.usage)
    calling = in_tool_call.set(None)  # the tool call this run may be nested in is done with
    sink = run_sink.set(run.sink)
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                effect = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as stop:
                return stop.value
            error = None
            try:
                value = await _aperform(effect, agent)
            except BaseException as exc:
                value, error = None, exc
    finally:
        run.info.usage, run.info.calls = run.usage.total, run.usage.calls
        run_sink.reset(sink)
        in_tool_call.reset(calling)
        current_usage.reset(usage)
        current_scope.reset(token)
        run.end()


async def _aperform(effect: Step, agent: CompiledAgent) -> Any:
    import asyncio

    if isinstance(effect, AwaitHook):
        return await effect.call(*effect.args)
    if isinstance(effect, AskModel):
        return await agent.amodel_handler(effect.request)
    if isinstance(effect, RunTools):
        lock = asyncio.Lock()
        if len(effect.requests) == 1:  # no task to start: a third of the loop's turns
            outer, outer_call = current_scope.get(), in_tool_call.get()
            try:
                request, scope = effect.requests[0], effect.scopes[0]
                return [await _acall_tool(agent, effect, request, scope, lock)]
            finally:
                current_scope.set(outer)
                in_tool_call.set(outer_call)
        return await asyncio.gather(
            *(
                _acall_tool(agent, effect, r, s, lock)
                for r, s in zip(effect.requests, effect.scopes, strict=True)
            )
        )
    await _asave(effect, agent)
    return None


async def _asave(effect: SaveStep, agent: CompiledAgent) -> None:
    import asyncio
    import contextvars

    assert agent.checkpointer is not None
    delta = effect.state.take_delta()  # on the loop's thread, where the state changes
    save = functools.partial(agent.checkpointer.save, effect.thread_id, delta)
    saving = asyncio.get_running_loop().run_in_executor(
        None, functools.partial(contextvars.copy_context().run, save)
    )
    try:
        await asyncio.shield(saving)
    except asyncio.CancelledError:
        # Cancelled mid-save (a stream's aclose(), a cancelled task): the save goes on in
        # its thread, and the run ends once it has, so the thread holds the step or not
        # and no write of this run lands after the next run on the thread began.
        await asyncio.wait([saving])
        raise
    effect.state.step = delta.step


async def _acall_tool(
    agent: CompiledAgent,
    effect: RunTools,
    request: ToolCallRequest,
    scope: Scope,
    lock: asyncio.Lock,
) -> Any:
    current_scope.set(scope)  # this task's own context copy
    nest = effect.nest(request)
    in_tool_call.set(nest)
    try:
        outcome: Any = await agent.atool_handler(request)
    except (Exception, InterruptSignal) as exc:
        outcome = _outcome_of(exc, request, called=nest.called)
    async with lock:  # the calls' saves, one at a time, each a step of its own
        save = effect.finished(request, outcome)
        if save is not None:
            await _asave(save, agent)
            saved(effect.sink, save.state.writer[1], save.state.step)
    return outcome
