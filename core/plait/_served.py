"""Tool calls made by someone other than the model (an MCP client of ``plait mcp-serve``),
run through the same guards as the model's: ``agent.tool_session()``.

A session is one thread and one run kept in memory: each call is added to the thread as
an AI message asking for it, then the loop goes ``after_model`` → tools → ``after_agent``
(``Run(served=True)`` never calls the model). So ``after_model`` hooks decide on it as on
a model's call (a ``human_in_the_loop`` review, a ``tool_call_limit`` count, pii), the
``wrap_tool_call`` chain runs it (retry, guardrails, pii), and run- and thread-scoped
counts add up across the session's calls. A call that would pause the run for a human is
not run: a session cannot be resumed, so the pause is the answer.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plait import _ids
from plait._loop import Run, RunInfo, adrive, drive
from plait._state import ThreadState
from plait.lazy import frozen
from plait.messages import AIMessage, ToolCall, ToolMessage
from plait.types import Interrupt, Runtime

if TYPE_CHECKING:
    from plait._compiled import CompiledAgent

__all__ = ["ServedCall", "ToolSession"]


@frozen
class ServedCall:
    """What became of one served call: the ``message`` answering it (``None`` when it did
    not run), or the ``interrupts`` the run paused at instead (the call was not run)."""

    message: ToolMessage | None
    interrupts: tuple[Interrupt, ...] = ()

    @property
    def paused(self) -> bool:
        return bool(self.interrupts)


class ToolSession:
    """Calls of the agent's tools, each checked and run as if the model had asked for it.

    Made by ``agent.tool_session()``; calls of one session run one at a time and share
    one thread and one run (a per-run limit caps the whole session).
    """

    def __init__(self, agent: CompiledAgent, context: Any = None) -> None:
        import asyncio

        self._agent = agent
        self._thread = ThreadState(agent.fields)
        self._info = RunInfo(run_id=_ids.new_id())
        self._runtime = Runtime(
            thread_id=None,
            run_id=self._info.run_id,
            context=context,
            store=agent.store,
            model=agent.model,
            tools=agent.tools,
            stream_writer=_discard,
            agent_name=agent.name,
        )
        self._lock = threading.Lock()
        self._alock = asyncio.Lock()

    def call(self, name: str, args: Mapping[str, Any]) -> ServedCall:
        """Run ``name(**args)`` through the agent's guards (sync); a ``StopRun`` a guard
        raises (a limit with ``exit_behavior='error'``) propagates."""
        with self._lock:
            call, run = self._start(name, args)
            try:
                drive(run)
            finally:
                self._settle()
            return self._outcome(call)

    async def acall(self, name: str, args: Mapping[str, Any]) -> ServedCall:
        """The async form of ``call``."""
        async with self._alock:
            call, run = self._start(name, args)
            try:
                await adrive(run)
            finally:
                self._settle()
            return self._outcome(call)

    def _start(self, name: str, args: Mapping[str, Any]) -> tuple[ToolCall, Run]:
        call = ToolCall(name, dict(args))
        info = self._info
        info.node, info.hook, info.status = "after_model", 0, "running"
        info.interrupts, info.resume = [], {}
        info.model_calls += 1  # a turn of its own: interrupt ids and scopes stay apart
        self._thread.add_messages(
            [AIMessage("", tool_calls=[call], metadata={"plait": {"served": True}})], "served"
        )
        run = Run(self._agent, self._thread, info, self._runtime, recursion_limit=1, sink=None)
        run.served = True
        return call, run

    def _settle(self) -> None:
        """Answer every call the step left unanswered (a pause, an error), so the thread's
        history stays valid for the next call and its hooks."""
        _, pending = self._thread.last_calls()
        why = (
            "it needs a human's answer, which a served call cannot wait for"
            if self._info.status == "interrupted"
            else "the call failed before it ran"
        )
        self._thread.add_messages(
            [
                ToolMessage.error(c, f"Not run: {why}.", metadata={"plait": {"served": "not run"}})
                for c in pending
            ],
            "served",
        )

    def _outcome(self, call: ToolCall) -> ServedCall:
        info = self._info
        if info.status == "interrupted":
            return ServedCall(None, tuple(info.interrupts))
        for message in reversed(self._thread.messages):
            if isinstance(message, ToolMessage) and message.tool_call_id == call.id:
                return ServedCall(message)
        return ServedCall(None)  # pragma: no cover - every path answers the call


def _discard(_data: Any) -> None:
    """``runtime.stream_writer``: nobody streams a served call."""
