"""The tool the live provider checks give a real model (tests/live, the providers' live
tests): one definition, so that every live check asks every model the same thing."""

from __future__ import annotations

import plait

calls: list[str] = []
"""The cities ``get_weather`` was called with; a test clears it before its run."""


@plait.tool
def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: the city's name, e.g. "Paris".
    """
    calls.append(city)
    return f"It is 21 degrees and sunny in {city}."
