"""The scripted model's second turn for ``mcp_time.toml``: read the time server's answer."""

from __future__ import annotations

import json


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
