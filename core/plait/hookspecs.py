"""The hook specifications: one per point of the agent's lifecycle, in loop order.

A middleware implements any of these as methods marked ``@plait.hookimpl`` (or as
methods of a ``plait.Middleware`` subclass, marked for it). An implementation may accept
any subset of a spec's arguments. The kernel calls implementations itself, in the order
of the agent's ``middleware`` list — never pluggy's — so each hook's docstring says how
results combine. ``tryfirst``, ``trylast`` and ``wrapper`` are not allowed on plait hooks.

Node hooks (``before_*``, ``after_*``) may be ``def`` or ``async def``. Wrap hooks have a
sync name and an ``a``-prefixed async name; the kernel bridges whichever is missing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from plait._jobs import RunHandle, RunJob
    from plait.messages import AIMessage, AIMessageChunk, Message, ToolMessage
    from plait.tools import Tool
    from plait.types import (
        AgentConfig,
        AgentResult,
        Command,
        Interrupt,
        ModelRequest,
        ModelResponse,
        RunRequest,
        Runtime,
        StateField,
        ToolCallRequest,
    )

hookspec = pluggy.HookspecMarker("plait")
"""Declares a hook of project ``"plait"`` (``pluggy.HookspecMarker``): each hook below is
declared with it."""
hookimpl = pluggy.HookimplMarker("plait")
"""Marks a hook implementation of project ``"plait"`` (``pluggy.HookimplMarker``): a
``plait.Middleware``'s methods named after hooks need none; a plain object's do."""

__all__ = ["HOOKS", "HookFacts", "hookimpl", "hookspec"]

# -------------------------------------------------------------------------------------------
# Building the agent (once, inside ``create_agent``)
# -------------------------------------------------------------------------------------------


@hookspec
def state_fields() -> Mapping[str, StateField]:
    """Declare the state keys this middleware owns. Runs before ``agent_tools``.

    :return: a mapping of key → ``plait.StateField(default, reducer=None, scope="thread",
        private=False, shared=False)``. Instances of one class share their keys; another
        class declaring the same key is a ``ConfigError`` unless both declare it
        ``shared=True`` with equal declarations. ``scope="run"`` resets the value when a run
        starts; ``reducer(old, new)`` merges updates instead of replacing the value. Values
        must be JSON-serializable (they are checkpointed). ``private=True`` keeps the value
        out of the state's ``repr``, so ``PLAIT_TRACE`` logs ``<private>`` in its place
        (hooks still read it, the checkpoint still stores it).
    """
    raise AssertionError  # pragma: no cover - specs are never called


@hookspec
def agent_tools(agent_config: AgentConfig) -> list[Tool]:
    """Add tools to the agent. Runs after ``state_fields``.

    :param agent_config: the ``plait.AgentConfig`` as the caller configured it — ``model``,
        ``tools``, ``system_prompt``, ``middleware``, ``checkpointer``, ``store``,
        ``response_format``. Tools added by other middleware are not in it yet.
    :return: a list of tools (``plait.Tool`` objects or plain functions). The lists of all
        middleware are concatenated in middleware order; a tool name already taken is a
        ``ConfigError``.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def validate_agent(agent_config: AgentConfig) -> None:
    """Refuse a setup this middleware cannot serve. Runs after ``agent_tools``, for every
    middleware.

    :param agent_config: the agent with every tool, those added by ``agent_tools`` included.
    :return: nothing. Raise ``plait.errors.ConfigError`` naming the problem (for example
        "needs a checkpointer", or "tool 'x' is not one of the agent's tools").
    """
    raise AssertionError  # pragma: no cover


# -------------------------------------------------------------------------------------------
# Running: once per run, then around the model → tools loop
# -------------------------------------------------------------------------------------------


@hookspec
def wrap_run(request: RunRequest, handler: Callable[[RunRequest], AgentResult]) -> AgentResult:
    """Runs around one whole run — ``invoke``, or ``stream`` — on the sync path: the place to
    see a run start, pause, resume, fail and end exactly once (a trace span, a durable
    workflow, an audit record). It runs after the thread is loaded and the run is known (new
    or resumed), before ``before_agent``; everything else happens inside ``handler``.

    :param request: the ``plait.RunRequest`` — ``input`` as the caller gave it, ``runtime``
        (thread and run ids, context, ``agent_name``…), ``resumed`` (true when the call
        continues a paused or unfinished run, under the same ``run_id``), ``streaming``.
    :param handler: runs the next middleware and, at the end, the run. Call it exactly once;
        a second call raises ``PlaitError``.
    :return: the ``plait.AgentResult`` the handler returned (``result.interrupts`` non-empty
        means the run paused). An error of the run propagates out of ``handler``: record it
        and let it go on, or raise your own. Nested, first middleware outermost,
        A(B(C(run))). A hook can install a performer (``plait.effects.performing``) around
        the handler to see or perform every model call and tool run inside it — see
        [internals](internals.md).
    """
    raise AssertionError  # pragma: no cover


@hookspec
async def awrap_run(
    request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
) -> AgentResult:
    """The async form of ``wrap_run``, used by ``ainvoke`` and ``astream``.

    :param request: as for ``wrap_run``.
    :param handler: an async function: ``await handler(request)``, exactly once.
    :return: as for ``wrap_run``.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def before_agent(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | Command | None:
    """Runs once per run, after the caller's input is in state, before the first model call.
    Not run again when a paused run is resumed.

    :param state: the thread's state, read-only: ``state["messages"]`` and every declared
        key.
    :param runtime: the run's ``plait.Runtime`` — ``thread_id``, ``run_id``, ``context``,
        ``store``, ``model``, ``tools``, ``stream_writer``.
    :return: ``None``, a ``dict`` state update, or ``plait.Command(update=...,
        jump_to=...)``. Implementations run in middleware order (A, B, C), each seeing the
        previous updates applied; a ``jump_to`` skips the rest.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def before_model(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | Command | None:
    """Runs before every model call.

    :param state: the thread's state, read-only.
    :param runtime: the run's ``Runtime``.
    :return: a state update or ``None``, chained in middleware order (A, B, C) like
        ``before_agent``. ``jump_to="end"`` ends the run without calling the model.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def wrap_model_call(
    request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
) -> ModelResponse | AIMessage:
    """Runs around every model call on the sync path (``invoke``, ``stream``).

    :param request: the ``plait.ModelRequest`` about to be sent — ``model``, ``messages``,
        ``system_prompt``, ``tools``, ``tool_choice``, ``response_format``,
        ``model_settings``, ``provider_options``, ``state``, ``runtime``. It is frozen: make
        a changed copy with ``request.override(...)``.
    :param handler: calls the next middleware and, at the end, the model. Call it zero times
        (answer yourself: a cache, an emulator), once, or many times (retry, fallback).
    :return: a ``plait.ModelResponse`` (or an ``AIMessage``, wrapped for you). Nested: the
        first middleware is outermost, A(B(C(model))).
    """
    raise AssertionError  # pragma: no cover


@hookspec
async def awrap_model_call(
    request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
) -> ModelResponse | AIMessage:
    """The async form of ``wrap_model_call``, used by ``ainvoke`` and ``astream``.

    :param request: as for ``wrap_model_call``.
    :param handler: an async function: ``await handler(request)``.
    :return: as for ``wrap_model_call``. A middleware should implement both forms to be
        native on both paths; otherwise the kernel bridges the missing one.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def transform_model_stream(
    chunks: Iterator[AIMessageChunk], request: ModelRequest
) -> Iterator[AIMessageChunk]:
    """Runs around each *streamed* model call (``stream`` with the ``"messages"`` mode), as a
    generator pipeline, on the sync path.

    :param chunks: an iterator of ``AIMessageChunk``s from the model (or from the next
        middleware).
    :param request: the ``ModelRequest`` being streamed.
    :return: an iterator of chunks — hold back, rewrite or drop them. The first middleware
        sees the chunks last, A(B(C(model stream))); what it yields is what the caller of
        ``stream`` sees and what the final message is assembled from.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def atransform_model_stream(
    chunks: AsyncIterator[AIMessageChunk], request: ModelRequest
) -> AsyncIterator[AIMessageChunk]:
    """The async form of ``transform_model_stream``: an async generator.

    :param chunks: an async iterator of chunks.
    :param request: the model call being streamed.
    :return: an async iterator of chunks.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def after_model(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | Command | None:
    """Runs after every model call, before its tool calls run.

    :param state: the thread's state with the model's answer appended.
    :param runtime: the run's ``Runtime``.
    :return: a state update or ``None``, chained in *reverse* middleware order (C, B, A).
        Answering a tool call here with a ``ToolMessage`` keeps it from running; calling
        ``plait.interrupt(...)`` here is how approvals pause before tools run.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def wrap_tool_call(
    request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command]
) -> ToolMessage | Command:
    """Runs around every tool call on the sync path.

    :param request: the ``plait.ToolCallRequest`` — ``tool_call`` (name, args, id), ``tool``
        (``None`` when the model named a tool the agent does not have), ``state``,
        ``runtime``. Frozen: ``request.override(...)``.
    :param handler: runs the next middleware and finally the tool; call it zero, one or many
        times. An exception the tool raises reaches you unchanged, so a retry hook can
        decide on it.
    :return: a ``ToolMessage`` answering the call, or a ``plait.Command`` whose ``update``
        holds one in ``"messages"``. Nested, first middleware outermost. An exception
        escaping every hook becomes an error ``ToolMessage``, except interrupts and
        ``StopRun`` errors.
    """
    raise AssertionError  # pragma: no cover


@hookspec
async def awrap_tool_call(
    request: ToolCallRequest,
    handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
) -> ToolMessage | Command:
    """The async form of ``wrap_tool_call``. Several tool calls of one AI message run
    concurrently on the async path.

    :param request: as for ``wrap_tool_call``.
    :param handler: an async function: ``await handler(request)``.
    :return: as for ``wrap_tool_call``.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def after_agent(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | Command | None:
    """Runs once per run, when the loop ends: no tool calls left, or a ``jump_to="end"``.

    :param state: the thread's final state.
    :param runtime: the run's ``Runtime``.
    :return: a state update or ``None``, chained in reverse middleware order (C, B, A).
    """
    raise AssertionError  # pragma: no cover


# -------------------------------------------------------------------------------------------
# What a caller reads: a paused run (outside the loop), a stream's messages
# -------------------------------------------------------------------------------------------


@hookspec
def show_interrupts(interrupts: list[Interrupt], state: Mapping[str, Any]) -> list[Interrupt]:
    """Rewrite the interrupts of a paused run as a caller or reviewer reads them:
    ``result.interrupts``, the stream's ``__interrupt__`` event and
    ``agent.get_interrupts(thread_id)`` (a reviewer in another process, a server). The
    checkpoint keeps the interrupts as they were raised; only what is read changes — a
    middleware that puts placeholders in the thread (``pii``'s ``pseudonymize``) shows the
    real values here, from what it keeps in ``state``.

    :param interrupts: the interrupts as the previous middleware left them.
    :param state: the thread's state as stored, private keys included. Read it, never
        change it.
    :return: the interrupts to show, one per interrupt given, same ids, same order.
        Chained in middleware order (A, then B, then C); sync only, no I/O.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def show_messages(messages: list[Message], state: Mapping[str, Any]) -> list[Message]:
    """Rewrite the whole messages of a run's ``messages`` stream as its caller reads them:
    a tool's answer, and a model answer that streamed no token (a cached one, one a
    ``wrap_model_call`` hook wrote); and an ``updates`` event's messages, shown beside it
    (``StreamEvent.shown``, what ``plait serve`` relays). The thread, the ``updates`` and
    ``values`` events' data keep the messages as written; a middleware that puts
    placeholders in the thread (``pii``'s ``pseudonymize``) shows the real values here,
    as its ``transform_model_stream`` does for the tokens of a streamed answer.

    :param messages: the messages as the previous middleware left them.
    :param state: the thread's state with the messages in it, private keys included. Read
        it, never change it.
    :return: the messages to show, one per message given, same ids, same order (another
        number of messages fails the run with a ``TypeError`` naming the middleware);
        return a message itself to leave it as it is — an ``updates`` event none of whose
        messages a hook replaced carries no ``shown``. Chained in middleware order (A,
        then B, then C), each given what the one before returned, only while someone
        streams ``messages`` or ``updates`` (never for ``invoke``); sync only, no I/O.
    """
    raise AssertionError  # pragma: no cover


# -------------------------------------------------------------------------------------------
# Starting a recorded run (outside the loop)
# -------------------------------------------------------------------------------------------


@hookspec
def submit_run(job: RunJob, agent: Any) -> RunHandle | None:
    """Take over *running* a run whose events go to the thread's run log, instead of
    this process running it. Called by ``plait.runlog.start_run`` — what ``plait serve``
    calls for every run it starts, and ``subagents``' background tasks — before the run
    begins, once its ``run_started`` event is in the log. The ``dbos`` middleware
    queues the run here, for a worker process to run and record.

    :param job: the ``plait.runlog.RunJob`` — ``thread_id``, ``input`` (a prompt,
        messages or ``Command(resume=...)``; ``job.to_json()`` for a queue), ``run_id``
        (the id its log events carry) and ``start`` (the number of its ``run_started``
        event: the runner appends its other events after it, with
        ``plait.runlog.LogWriter``, ending with ``run_finished`` or ``run_error``).
    :param agent: the ``plait.Agent`` whose middleware this is (its ``name`` says which
        agent a worker must run).
    :return: a ``plait.runlog.RunHandle`` (``await handle.wait()`` until the run ended,
        ``await handle.cancel()`` to stop it) when this middleware runs the run, or
        ``None`` to leave it to the next middleware; when none takes it, it runs in this
        process as an asyncio task. The first handle in middleware order wins. May be
        ``def`` (called in a worker thread: blocking I/O is fine) or ``async def``.
    """
    raise AssertionError  # pragma: no cover


class HookFacts:
    """What the kernel knows of one hook besides its signature (read from pluggy). A plain
    class: the table below is made at import, where an attrs class compiles its methods
    and a named tuple each field's annotation.

    :param stage: ``"build"`` (once in ``create_agent``), ``"run"`` (around a whole run),
        ``"node"`` (a step of the loop), ``"wrap"``/``"stream"`` (around one call) or
        ``"read"`` (when a caller reads a paused run or a stream's messages) or
        ``"submit"`` (when a recorded run is started).
    :param twin: the async form of a sync wrap hook, or the sync form of an async one.
    :param is_async: implementations must be ``async def``.
    :param unwinds: implementations run in reverse middleware order (C, B, A).
    :param jumps: where ``Command(jump_to=...)`` may send the loop from this hook.
    """

    __slots__ = ("is_async", "jumps", "stage", "twin", "unwinds")

    def __init__(
        self,
        stage: str,
        twin: str | None = None,
        is_async: bool = False,
        unwinds: bool = False,
        jumps: bool = False,
    ) -> None:
        self.stage = stage
        self.twin = twin
        self.is_async = is_async
        self.unwinds = unwinds
        self.jumps = jumps


HOOKS: dict[str, HookFacts] = {
    "state_fields": HookFacts("build"),
    "agent_tools": HookFacts("build"),
    "validate_agent": HookFacts("build"),
    "wrap_run": HookFacts("run", twin="awrap_run"),
    "awrap_run": HookFacts("run", twin="wrap_run", is_async=True),
    "before_agent": HookFacts("node", jumps=True),
    "before_model": HookFacts("node", jumps=True),
    "wrap_model_call": HookFacts("wrap", twin="awrap_model_call"),
    "awrap_model_call": HookFacts("wrap", twin="wrap_model_call", is_async=True),
    "transform_model_stream": HookFacts("stream", twin="atransform_model_stream"),
    "atransform_model_stream": HookFacts("stream", twin="transform_model_stream", is_async=True),
    "after_model": HookFacts("node", unwinds=True, jumps=True),
    "wrap_tool_call": HookFacts("wrap", twin="awrap_tool_call"),
    "awrap_tool_call": HookFacts("wrap", twin="wrap_tool_call", is_async=True),
    "after_agent": HookFacts("node", unwinds=True, jumps=True),
    "show_interrupts": HookFacts("read"),
    "show_messages": HookFacts("read"),
    "submit_run": HookFacts("submit"),
}
"""Every hook, in the order it is declared (its place in the loop)."""


def _named(stage: str) -> tuple[str, ...]:
    return tuple(name for name, facts in HOOKS.items() if facts.stage == stage)


def _twins(*stages: str) -> dict[str, str]:
    return {
        name: facts.twin
        for name, facts in HOOKS.items()
        if facts.stage in stages and facts.twin and not facts.is_async
    }


ALL_HOOKS = tuple(HOOKS)
BUILD_HOOKS = _named("build")
NODE_HOOKS = _named("node")
WRAP_HOOKS = _twins("wrap")
RUN_HOOKS = _twins("run")
STREAM_HOOKS = _twins("stream")
