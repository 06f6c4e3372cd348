"""``llm_tool_emulator``: a model plays the agent's tools, for testing without side effects.

In ``wrap_tool_call``, a call to an emulated tool never reaches ``handler`` (so the real
function never runs): the emulator model is given the tool's name, description, argument
schema and the call's arguments, and its text becomes the call's ``ToolMessage`` — with
the same ``tool_call_id``, ``name`` and ``status`` a real result has. Other tools, and
names the agent does not have (the kernel answers those with an error), pass through.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from plait.errors import ConfigError, StopRun
from plait.lazy import frozen
from plait.messages import HumanMessage, ToolMessage
from plait.middleware import Middleware
from plait.models import ChatModel, init_chat_model
from plait.options import FieldError, chat_model, check_tool_names, expected
from plait.tools import Tool, tool_error_message
from plait.types import AgentConfig, Command, ToolCallRequest

__all__ = ["LLMToolEmulator", "LLMToolEmulatorMiddleware"]


SYSTEM_PROMPT = (
    "You are emulating a software tool for a test. Given the tool's name, description, "
    "parameters and the arguments of one call, reply with the output the real tool would "
    "most plausibly return for that call. Reply with the output only: no explanation, no "
    "preamble, no code fences."
)


def _tools(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or not all(
        isinstance(item, Tool) or (isinstance(item, str) and item) for item in value
    ):
        raise FieldError(
            attribute.name,
            expected("a list of tool names or Tool objects, or None for every tool", value),
        )


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@frozen(kw_only=True)
class LLMToolEmulatorMiddleware(Middleware):
    """Answers calls of ``tools`` with ``model``'s idea of their output instead of running
    them."""

    tools: tuple[str | Tool, ...] | None = attrs.field(
        default=None, converter=_tuple, validator=_tools
    )
    """``None``: emulate every tool; ``[]``: none; names or ``Tool`` objects: those."""
    model: str | ChatModel | None = attrs.field(default=None, validator=chat_model(optional=True))
    """The emulator: a ``"provider:model"`` id or a ``ChatModel``; ``None`` is the agent's."""
    _resolved: list[ChatModel] = attrs.field(init=False, factory=list, eq=False, repr=False)

    @property
    def _names(self) -> frozenset[str] | None:
        if self.tools is None:
            return None
        return frozenset(item.name if isinstance(item, Tool) else item for item in self.tools)

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if self._names is not None:
            check_tool_names(sorted(self._names), agent_config, option="tools")
        if isinstance(self.model, str) and not self._resolved:
            try:
                self._resolved.append(init_chat_model(self.model))
            except ConfigError as exc:
                raise ConfigError(str(exc), option="model") from exc

    def _emulates(self, request: ToolCallRequest) -> bool:
        if request.tool is None:
            return False
        names = self._names
        return names is None or request.tool.name in names

    def _emulator(self, request: ToolCallRequest) -> ChatModel:
        if isinstance(self.model, ChatModel):
            return self.model
        if isinstance(self.model, str):
            if not self._resolved:
                self._resolved.append(init_chat_model(self.model))
            return self._resolved[0]
        if request.runtime.model is None:
            raise ConfigError("no model given and the run has none")
        return request.runtime.model

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        if not self._emulates(request):
            return handler(request)
        emulator = self._emulator(request)
        try:
            answer = emulator.invoke([_prompt(request)], system_prompt=SYSTEM_PROMPT)
        except StopRun:
            raise
        except Exception as exc:  # the emulator stands in for the tool: its failure is the tool's
            return tool_error_message(request.tool_call, exc)
        return _result(request, answer.content)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        if not self._emulates(request):
            return await handler(request)
        emulator = self._emulator(request)
        try:
            answer = await emulator.ainvoke([_prompt(request)], system_prompt=SYSTEM_PROMPT)
        except StopRun:
            raise
        except Exception as exc:
            return tool_error_message(request.tool_call, exc)
        return _result(request, answer.content)


def _prompt(request: ToolCallRequest) -> HumanMessage:
    tool = request.tool
    assert tool is not None
    call = request.tool_call
    return HumanMessage(
        f"Tool name: {tool.name}\n"
        f"Description: {tool.description or '(none)'}\n"
        f"Parameters (JSON schema): {json.dumps(tool.parameters, ensure_ascii=False)}\n"
        f"Arguments of this call: {json.dumps(call.args, ensure_ascii=False)}\n\n"
        "Reply with only the output this call would return."
    )


def _result(request: ToolCallRequest, content: Any) -> ToolMessage:
    """A result shaped as the kernel shapes a real one."""
    call = request.tool_call
    return ToolMessage(content, tool_call_id=call.id, name=call.name)


LLMToolEmulator = LLMToolEmulatorMiddleware
"""LangChain's name for this middleware, so ported code imports it unchanged."""
