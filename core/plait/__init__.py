"""plait: an agent loop whose every feature is a pluggy middleware.

The public API lives here; submodules are imported on first use, so ``import plait``
stays cheap and imports no plugin and no HTTP client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__: str  # read on first use, by __getattr__ below

_EXPORTS: dict[str, str] = {
    # agent
    "create_agent": "plait.agent",
    "Agent": "plait.agent",
    "AgentResult": "plait.types",
    # hooks and middleware
    "hookimpl": "plait.hookspecs",
    "hookspec": "plait.hookspecs",
    "Middleware": "plait.middleware",
    "RequestMiddleware": "plait.middleware",
    "can_jump_to": "plait.middleware",
    "before_agent": "plait.middleware",
    "before_model": "plait.middleware",
    "after_model": "plait.middleware",
    "after_agent": "plait.middleware",
    "wrap_run": "plait.middleware",
    "dynamic_prompt": "plait.middleware",
    "wrap_model_call": "plait.middleware",
    "wrap_tool_call": "plait.middleware",
    "transform_model_stream": "plait.middleware",
    "interrupt": "plait.interrupts",
    "new_id": "plait._ids",
    # tools
    "tool": "plait.tools",
    "Tool": "plait.tools",
    # types
    "AgentConfig": "plait.types",
    "AgentState": "plait.types",
    "Command": "plait.types",
    "Interrupt": "plait.types",
    "ModelRequest": "plait.types",
    "ModelResponse": "plait.types",
    "RunRequest": "plait.types",
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
    if name == "__version__":
        globals()[name] = version = _version()
        return version
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'plait' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _version() -> str:
    """The installed distribution's version, read when first asked: importing
    ``importlib.metadata`` costs more than the rest of ``import plait``."""
    import importlib.metadata

    try:
        return importlib.metadata.version("plait")
    except importlib.metadata.PackageNotFoundError:  # a source tree that is not installed
        return "0+unknown"


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | {"__version__"})


if TYPE_CHECKING:
    from plait._ids import new_id as new_id
    from plait.agent import Agent as Agent
    from plait.agent import create_agent as create_agent
    from plait.errors import ConfigError as ConfigError
    from plait.errors import PlaitError as PlaitError
    from plait.hookspecs import hookimpl as hookimpl
    from plait.hookspecs import hookspec as hookspec
    from plait.interrupts import interrupt as interrupt
    from plait.messages import REMOVE_ALL as REMOVE_ALL
    from plait.messages import AIMessage as AIMessage
    from plait.messages import AIMessageChunk as AIMessageChunk
    from plait.messages import HumanMessage as HumanMessage
    from plait.messages import RemoveMessage as RemoveMessage
    from plait.messages import SystemMessage as SystemMessage
    from plait.messages import ToolCall as ToolCall
    from plait.messages import ToolMessage as ToolMessage
    from plait.messages import Usage as Usage
    from plait.middleware import Middleware as Middleware
    from plait.middleware import RequestMiddleware as RequestMiddleware
    from plait.middleware import after_agent as after_agent
    from plait.middleware import after_model as after_model
    from plait.middleware import before_agent as before_agent
    from plait.middleware import before_model as before_model
    from plait.middleware import can_jump_to as can_jump_to
    from plait.middleware import dynamic_prompt as dynamic_prompt
    from plait.middleware import transform_model_stream as transform_model_stream
    from plait.middleware import wrap_model_call as wrap_model_call
    from plait.middleware import wrap_run as wrap_run
    from plait.middleware import wrap_tool_call as wrap_tool_call
    from plait.models import ChatModel as ChatModel
    from plait.models import ModelProfile as ModelProfile
    from plait.models import ScriptedChatModel as ScriptedChatModel
    from plait.models import init_chat_model as init_chat_model
    from plait.tools import Tool as Tool
    from plait.tools import tool as tool
    from plait.types import AgentConfig as AgentConfig
    from plait.types import AgentResult as AgentResult
    from plait.types import AgentState as AgentState
    from plait.types import Command as Command
    from plait.types import Interrupt as Interrupt
    from plait.types import ModelRequest as ModelRequest
    from plait.types import ModelResponse as ModelResponse
    from plait.types import RunRequest as RunRequest
    from plait.types import Runtime as Runtime
    from plait.types import StateField as StateField
    from plait.types import StreamEvent as StreamEvent
    from plait.types import ToolCallRequest as ToolCallRequest
    from plait.types import ToolRuntime as ToolRuntime
