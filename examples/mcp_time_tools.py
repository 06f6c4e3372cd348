"""The scripted model for ``mcp_time.toml``: ask the time server, then read its answer."""

from __future__ import annotations

import json

from plait import AIMessage, ToolCall

_ZONES = {
    "tokyo": "Asia/Tokyo",
    "paris": "Europe/Paris",
    "london": "Europe/London",
    "new york": "America/New_York",
    "sydney": "Australia/Sydney",
}


def time_brain(messages: list[object], tools: list[object]) -> AIMessage | str:
    """One scripted call: after the server's answer, phrase it; after a question, call
    ``time_get_current_time`` for the city it names (UTC if none it knows)."""
    last = messages[-1]
    if getattr(last, "type", None) == "tool":
        return answer_from_time(messages, tools)
    question = str(getattr(last, "text", "")).lower()
    zone = next((z for city, z in _ZONES.items() if city in question), "UTC")
    return AIMessage(tool_calls=[ToolCall("time_get_current_time", {"timezone": zone})])


def answer_from_time(messages: list[object], tools: list[object]) -> str:
    """Phrase the last tool result (the time server's JSON) as an answer."""
    for message in reversed(messages):
        if getattr(message, "type", None) == "tool":
            text = str(getattr(message, "text", ""))
            try:
                now = json.loads(text)
            except ValueError:
                return f"The time server said: {text}"
            clock = now["datetime"][11:16]
            return f"In {now['timezone']} it is {clock} on {now['day_of_week']}."
    return "I could not reach the time server."
