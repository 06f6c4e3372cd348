"""Tools for the hello agent: plain typed functions with Google-style docstrings.

plait turns each into a tool (its JSON schema comes from the signature, the description
from the docstring). Nothing here calls the network, so the example runs offline.
"""

from __future__ import annotations

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
