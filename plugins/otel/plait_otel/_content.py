"""Messages as the GenAI conventions record them (``gen_ai.input.messages`` and
friends): a JSON list of ``{role, parts}``, each part ``text``, ``tool_call`` or
``tool_call_response``. Recorded only with ``capture_content=true``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from plait.messages import AIMessage, HumanMessage, Message, SystemMessage, ToolMessage

__all__ = ["finish_reason", "input_messages", "output_messages", "system_instructions"]

_ROLES = {
    SystemMessage: "system",
    HumanMessage: "user",
    AIMessage: "assistant",
    ToolMessage: "tool",
}


def _parts(message: Message) -> list[dict[str, Any]]:
    if isinstance(message, ToolMessage):
        return [
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.text}
        ]
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"type": "text", "content": message.text})
    if isinstance(message, AIMessage):
        parts.extend(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.args}
            for call in message.tool_calls
        )
    return parts


def _message(message: Message) -> dict[str, Any]:
    return {"role": _ROLES.get(type(message), message.type), "parts": _parts(message)}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def input_messages(messages: Iterable[Message]) -> str:
    return _dumps([_message(m) for m in messages])


def output_messages(message: AIMessage, reasons: Sequence[str]) -> str:
    out = _message(message)
    if reasons:
        out["finish_reason"] = reasons[0]
    return _dumps([out])


def system_instructions(prompt: str) -> str:
    return _dumps([{"type": "text", "content": prompt}])


def finish_reason(message: AIMessage) -> str:
    """The provider's reason, else what the answer shows (tool calls, or a stop)."""
    reason = message.response_metadata.get("finish_reason")
    if isinstance(reason, str):
        return reason
    return "tool_calls" if message.tool_calls else "stop"


def dumps(value: Any) -> str:
    return _dumps(value)
