"""plait: an agent loop whose every feature is a pluggy middleware.

The public API lives here; submodules are imported on first use, so ``import plait``
stays cheap and imports no plugin and no HTTP client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # agent
    "create_agent": "plait.agent",
    "Agent": "plait.agent",
    "AgentResult": "plait.agent",
    # hooks and middleware
    "hookimpl": "plait.hookspecs",
    "hookspec": "plait.hookspecs",
    "Middleware": "plait.middleware",
    "can_jump_to": "plait.middleware",
    "before_agent": "plait.middleware",
    "before_model": "plait.middleware",
    "after_model": "plait.middleware",
    "after_agent": "plait.middleware",
    "wrap_model_call": "plait.middleware",
    "wrap_tool_call": "plait.middleware",
    "transform_model_stream": "plait.middleware",
    "interrupt": "plait.interrupts",
    # tools
    "tool": "plait.tools",
    "Tool": "plait.tools",
    # types
    "AgentConfig": "plait.types",
    "Command": "plait.types",
    "Interrupt": "plait.types",
    "ModelRequest": "plait.types",
    "ModelResponse": "plait.types",
    "Runtime": "plait.types",
    "StateField": "plait.types",
    "StreamEvent": "plait.types",
    "ToolCallRequest": "plait.types",
    "ToolRuntime": "plait.types",
    # messages
    "AIMessage": "plait.messages",
    "AIMessageChunk": "plait.messages",
    "HumanMessage": "plait.messages",
    "REMOVE_ALL": "plait.messages",
    "RemoveMessage": "plait.messages",
    "SystemMessage": "plait.messages",
    "ToolCall": "plait.messages",
    "ToolMessage": "plait.messages",
    "Usage": "plait.messages",
    # models
    "ChatModel": "plait.models",
    "ModelProfile": "plait.models",
    "ScriptedChatModel": "plait.models",
    "init_chat_model": "plait.models",
    # errors
    "PlaitError": "plait.errors",
    "ConfigError": "plait.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'plait' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from plait.agent import Agent, AgentResult, create_agent
    from plait.errors import ConfigError, PlaitError
    from plait.hookspecs import hookimpl, hookspec
    from plait.interrupts import interrupt
    from plait.messages import (
        REMOVE_ALL,
        AIMessage,
        AIMessageChunk,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolCall,
        ToolMessage,
        Usage,
    )
    from plait.middleware import (
        Middleware,
        after_agent,
        after_model,
        before_agent,
        before_model,
        can_jump_to,
        transform_model_stream,
        wrap_model_call,
        wrap_tool_call,
    )
    from plait.models import ChatModel, ModelProfile, ScriptedChatModel, init_chat_model
    from plait.tools import Tool, tool
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
