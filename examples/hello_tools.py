"""Tools for the hello agent: plain typed functions with Google-style docstrings.

plait turns each into a tool (its JSON schema comes from the signature, the description
from the docstring). Nothing here calls the network, so the example runs offline.
"""

from __future__ import annotations

import re

from plait import AIMessage, ToolCall

_FORECASTS = {
    "paris": ("sunny", 21),
    "london": ("light rain", 14),
    "tokyo": ("cloudy", 18),
}


def get_weather(city: str) -> str:
    """Get today's weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    sky, celsius = _FORECASTS.get(city.strip().lower(), ("clear", 20))
    return f"{city}: {sky}, {celsius} °C"


def weather_brain(messages: list[object], tools: list[object]) -> AIMessage | str:
    """The scripted model, one call at a time: after a tool result, phrase the answer;
    after a question, call ``get_weather`` for the city it names (Paris if none).

    It reads the conversation instead of following a fixed script, so every turn of
    ``plait chat`` gets an answer.
    """
    last = messages[-1]
    if getattr(last, "type", None) == "tool":
        return answer_from_weather(messages, tools)
    question = str(getattr(last, "text", ""))
    return AIMessage(tool_calls=[ToolCall("get_weather", {"city": _city_in(question)})])


def _city_in(question: str) -> str:
    for city in _FORECASTS:
        if re.search(rf"\b{city}\b", question, flags=re.IGNORECASE):
            return city.title()
    named = re.search(r"\b(?:in|for|at)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)", question)
    return named.group(1) if named else "Paris"


def answer_from_weather(messages: list[object], tools: list[object]) -> str:
    """A scripted model turn: read the last tool result and phrase the answer.

    The scripted model calls this with the conversation so far, which lets the offline
    demo answer with what the tool actually returned.
    """
    for message in reversed(messages):
        if getattr(message, "type", None) == "tool":
            report = str(getattr(message, "text", ""))
            city, _, weather = report.partition(": ")
            return f"In {city} today it is {weather}. Enjoy your day!"
    return "I could not find a weather report."
