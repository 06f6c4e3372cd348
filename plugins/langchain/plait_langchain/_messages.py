"""Messages both ways between plait and LangChain (one job: the field-by-field mapping)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core import messages as lc

from plait.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    Usage,
)


def to_langchain(messages: Sequence[AnyMessage], system_prompt: str | None) -> list[lc.BaseMessage]:
    """A plait conversation as LangChain messages, the system prompt first."""
    found: list[lc.BaseMessage] = []
    if system_prompt:
        found.append(lc.SystemMessage(system_prompt))
    for message in messages:
        content: Any = message.content
        if isinstance(message, SystemMessage):
            found.append(lc.SystemMessage(content, id=message.id))
        elif isinstance(message, HumanMessage):
            found.append(lc.HumanMessage(content, id=message.id))
        elif isinstance(message, AIMessage):
            calls = [
                lc.ToolCall(name=c.name, args=dict(c.args), id=c.id, type="tool_call")
                for c in message.tool_calls
            ]
            found.append(lc.AIMessage(content, tool_calls=calls, id=message.id))
        elif isinstance(message, ToolMessage):
            found.append(
                lc.ToolMessage(
                    content,
                    tool_call_id=message.tool_call_id,
                    name=message.name,
                    status=message.status,
                    id=message.id,
                )
            )
    return found


def usage(metadata: Mapping[str, Any] | None) -> Usage | None:
    """LangChain's ``usage_metadata`` as plait's ``Usage``."""
    if not metadata:
        return None
    given = metadata.get("input_token_details") or {}
    made = metadata.get("output_token_details") or {}
    return Usage(
        input_tokens=int(metadata.get("input_tokens") or 0),
        output_tokens=int(metadata.get("output_tokens") or 0),
        cache_read_tokens=int(given.get("cache_read") or 0),
        cache_write_tokens=int(given.get("cache_creation") or 0),
        reasoning_tokens=int(made.get("reasoning") or 0),
    )


def _content(message: lc.BaseMessage) -> Any:
    content = message.content
    return content if isinstance(content, str) else message.text


def from_langchain(message: lc.BaseMessage) -> AIMessage:
    """A LangChain answer as plait's ``AIMessage`` (text, tool calls, usage, metadata)."""
    calls = [
        ToolCall(call["name"], dict(call["args"]), call.get("id") or f"call_{index}")
        for index, call in enumerate(getattr(message, "tool_calls", None) or ())
    ]
    kwargs: dict[str, Any] = {"id": message.id} if message.id else {}
    return AIMessage(
        _content(message),
        tool_calls=calls,
        usage=usage(getattr(message, "usage_metadata", None)),
        response_metadata=dict(message.response_metadata or {}),
        **kwargs,
    )


def chunk_from_langchain(chunk: lc.AIMessageChunk) -> AIMessageChunk:
    """A LangChain stream chunk as plait's ``AIMessageChunk``."""
    calls = tuple(
        ToolCallChunk(
            index=int(part.get("index") or 0),
            id=part.get("id"),
            name=part.get("name"),
            args=part.get("args") or "",
        )
        for part in chunk.tool_call_chunks or ()
    )
    return AIMessageChunk(
        _content(chunk),
        tool_call_chunks=calls,
        usage=usage(chunk.usage_metadata),
        response_metadata=dict(chunk.response_metadata or {}),
        id=chunk.id,
    )
