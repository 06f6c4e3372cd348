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

import attrs
import pluggy

if TYPE_CHECKING:
    from plait.agent import AgentResult
    from plait.messages import AIMessage, AIMessageChunk, ToolMessage
    from plait.tools import Tool
    from plait.types import (
        AgentConfig,
        Command,
        ModelRequest,
        ModelResponse,
        RunRequest,
        Runtime,
        StateField,
        ToolCallRequest,
    )

hookspec = pluggy.HookspecMarker("plait")
hookimpl = pluggy.HookimplMarker("plait")

__all__ = ["HOOKS", "HookFacts", "hookimpl", "hookspec"]

# -------------------------------------------------------------------------------------------
# Building the agent (once, inside ``create_agent``)
# -------------------------------------------------------------------------------------------


@hookspec
def state_fields() -> Mapping[str, StateField]:
    """Declare the state keys this middleware owns.

    Runs once when the agent is built, before ``agent_tools``.

    :return: a mapping of key → ``StateField`` (default, reducer, ``"thread"``/``"run"``
        scope, ``shared``). All instances of one middleware class share their keys;
        another class declaring the same key is a ``ConfigError`` unless both declare it
        ``shared=True`` with equal declarations.
    """
    raise AssertionError  # pragma: no cover - specs are never called


@hookspec
def agent_tools(agent_config: AgentConfig) -> list[Tool]:
    """Add tools to the agent.

    Runs once when the agent is built, after ``state_fields``.

    :param agent_config: the agent as configured by the caller (tools added by other
        middleware are not in it yet).
    :return: the tools this middleware adds; results of all middleware are concatenated
        in middleware order. A name already taken is a ``ConfigError``.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def validate_agent(agent_config: AgentConfig) -> None:
    """Check the agent can be served, raising ``ConfigError`` if not.

    Runs once when the agent is built, after ``agent_tools``, for every middleware.

    :param agent_config: the agent with every tool (``agent_tools`` results included).
    :return: nothing; raise ``plait.errors.ConfigError`` naming the problem.
    """
    raise AssertionError  # pragma: no cover


# -------------------------------------------------------------------------------------------
# Running: once per run, then around the model → tools loop
# -------------------------------------------------------------------------------------------


@hookspec
def wrap_run(request: RunRequest, handler: Callable[[RunRequest], AgentResult]) -> AgentResult:
    """Runs around one whole run (``invoke`` or ``stream``, sync path): the place to see
    a run start, pause, resume, fail and end exactly once (tracing, durable execution,
    audit logs).

    Runs for every call, a resume included (``request.resumed`` is true), before the
    thread is touched: ``before_agent`` and everything else happen inside ``handler``.

    :param request: the run about to happen: ``input`` as the caller gave it, ``runtime``
        (thread and run ids, context, the agent's name…), ``resumed``, ``streaming``.
    :param handler: runs the next middleware and at the end the run itself. Call it
        exactly once; a second call raises ``PlaitError``.
    :return: the ``AgentResult`` (``result.interrupts`` non-empty means the run paused).
        An error of the run propagates out of ``handler``; let it go on (after recording
        it) or raise your own. Nested, first middleware outermost: A(B(C(run))).
    """
    raise AssertionError  # pragma: no cover


@hookspec
async def awrap_run(
    request: RunRequest, handler: Callable[[RunRequest], Awaitable[AgentResult]]
) -> AgentResult:
    """The async form of ``wrap_run``, used by ``ainvoke``/``astream``.

    :param request: as for ``wrap_run``.
    :param handler: an async function; ``await handler(request)`` exactly once.
    :return: as for ``wrap_run``.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def before_agent(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | Command | None:
    """Runs once per run, after the caller's input is in state, before the first model call.

    Not run again when a paused run is resumed.

    :param state: the thread's state (read-only): ``state["messages"]`` and every key.
    :param runtime: the run's ``Runtime`` (thread and run ids, context, store, model…).
    :return: a state update (a dict, or ``Command(update=..., jump_to=...)``) or ``None``.
        Implementations run in middleware order (A, B, C), each seeing the previous
        updates applied; a ``jump_to`` skips the rest.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def before_model(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | Command | None:
    """Runs before every model call.

    :param state: the thread's state (read-only).
    :param runtime: the run's ``Runtime``.
    :return: a state update or ``None``; chained in middleware order (A, B, C) like
        ``before_agent``. ``jump_to="end"`` ends the run without calling the model.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def wrap_model_call(
    request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
) -> ModelResponse | AIMessage:
    """Runs around every model call (sync path).

    :param request: the call about to be made: model, messages, system prompt, tools,
        tool choice, response format, settings (frozen; ``request.override(...)``).
    :param handler: calls the next middleware, and at the end the model. Call it zero
        times (answer yourself: cache, emulator), once, or many times (retry, fallback).
    :return: a ``ModelResponse`` or an ``AIMessage``. Nested: the first middleware is
        outermost, A(B(C(model))).
    """
    raise AssertionError  # pragma: no cover


@hookspec
async def awrap_model_call(
    request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
) -> ModelResponse | AIMessage:
    """The async form of ``wrap_model_call``, used by ``ainvoke``/``astream``.

    :param request: as for ``wrap_model_call``.
    :param handler: an async function; ``await handler(request)``.
    :return: as for ``wrap_model_call``.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def transform_model_stream(
    chunks: Iterator[AIMessageChunk], request: ModelRequest
) -> Iterator[AIMessageChunk]:
    """Runs around each streamed model call, as a generator pipeline (sync path).

    :param chunks: the chunks coming from the model (or from the next middleware).
    :param request: the model call being streamed.
    :return: an iterator of chunks: may hold back, rewrite or drop chunks. The first
        middleware sees the chunks last (A(B(C(model stream)))); what it yields is what
        the caller of ``stream`` sees and what the final message is assembled from.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def atransform_model_stream(
    chunks: AsyncIterator[AIMessageChunk], request: ModelRequest
) -> AsyncIterator[AIMessageChunk]:
    """The async form of ``transform_model_stream`` (an async generator).

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
    :return: a state update or ``None``. Chained in reverse middleware order (C, B, A).
    """
    raise AssertionError  # pragma: no cover


@hookspec
def wrap_tool_call(
    request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command]
) -> ToolMessage | Command:
    """Runs around every tool call (sync path).

    :param request: the call (``tool_call``), the ``tool`` (``None`` if the model named
        an unknown tool), ``state`` and ``runtime``.
    :param handler: runs the next middleware and finally the tool; call it zero, one or
        many times. An exception the tool raises reaches you unchanged.
    :return: a ``ToolMessage`` answering the call, or a ``Command`` whose update holds
        one. Nested, first middleware outermost. An exception escaping every hook
        becomes an error ``ToolMessage`` (except interrupts and ``StopRun`` errors).
    """
    raise AssertionError  # pragma: no cover


@hookspec
async def awrap_tool_call(
    request: ToolCallRequest,
    handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
) -> ToolMessage | Command:
    """The async form of ``wrap_tool_call``.

    :param request: as for ``wrap_tool_call``.
    :param handler: an async function; ``await handler(request)``.
    :return: as for ``wrap_tool_call``.
    """
    raise AssertionError  # pragma: no cover


@hookspec
def after_agent(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | Command | None:
    """Runs once per run, when the loop ends (no tool calls left, or ``jump_to="end"``).

    :param state: the thread's final state.
    :param runtime: the run's ``Runtime``.
    :return: a state update or ``None``; chained in reverse middleware order (C, B, A).
    """
    raise AssertionError  # pragma: no cover


@attrs.frozen
class HookFacts:
    """What the kernel knows of one hook besides its signature (read from pluggy).

    :param stage: ``"build"`` (once in ``create_agent``), ``"run"`` (around a whole run),
        ``"node"`` (a step of the loop) or ``"wrap"``/``"stream"`` (around one call).
    :param twin: the async form of a sync wrap hook, or the sync form of an async one.
    :param is_async: implementations must be ``async def``.
    :param unwinds: implementations run in reverse middleware order (C, B, A).
    :param jumps: where ``Command(jump_to=...)`` may send the loop from this hook.
    """

    stage: str
    twin: str | None = None
    is_async: bool = False
    unwinds: bool = False
    jumps: bool = False


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
