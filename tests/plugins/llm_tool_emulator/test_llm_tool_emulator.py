"""``llm_tool_emulator``: which tools are emulated, that the real function never runs, that
emulated results look like real ones, what the emulator is asked, and the async path."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

import plait
from plait.errors import ConfigError, ProviderError
from plait.messages import ToolMessage
from plait.models import OPTIONAL_MODEL_FORMS
from plait.testing import ai, call, scripted
from plait_llm_tool_emulator import LLMToolEmulatorMiddleware

really_ran: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    really_ran.clear()


@plait.tool
def book_flight(origin: str, destination: str) -> str:
    """Book a flight and charge the card on file.

    Args:
        origin: IATA code of the departure airport.
        destination: IATA code of the arrival airport.
    """
    really_ran.append("book_flight")
    raise AssertionError("the real book_flight must not run under emulation")


@plait.tool
async def get_weather(city: str) -> str:
    """Get the current weather.

    Args:
        city: the city.
    """
    really_ran.append("get_weather")
    return f"real weather in {city}"


TOOLS = [book_flight, get_weather]
BOOK = call("book_flight", "c_book", origin="CDG", destination="JFK")
WEATHER = call("get_weather", "c_weather", city="Paris")


def tool_messages(messages: list[Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def shape(message: ToolMessage) -> dict[str, Any]:
    """Everything of a tool message but its id and text."""
    fields = attrs.asdict(message, recurse=False)
    del fields["id"], fields["content"]
    return fields


def test_every_tool_is_emulated_by_default_and_never_runs(make_agent: Any) -> None:
    emulator = scripted("Booked: AF006 CDG→JFK, confirmation ZX81Q", "Sunny, 21°C")
    agent = make_agent(
        [ai("", BOOK, WEATHER), "All set."],
        tools=TOOLS,
        middleware=[LLMToolEmulatorMiddleware(model=emulator)],
    )
    result = agent.invoke("book me to New York and check Paris weather")
    assert really_ran == []
    answers = tool_messages(result.messages)
    assert answers["c_book"].text == "Booked: AF006 CDG→JFK, confirmation ZX81Q"
    assert answers["c_weather"].text == "Sunny, 21°C"
    assert result.text == "All set."
    assert agent.model.requests[-1].messages[-1].type == "tool"


def test_emulated_results_are_shaped_like_real_ones(make_agent: Any) -> None:
    real = make_agent([ai("", WEATHER), "ok"], tools=TOOLS)
    real_answer = tool_messages(real.invoke("weather").messages)["c_weather"]
    assert really_ran == ["get_weather"]
    emulated = make_agent(
        [ai("", WEATHER), "ok"],
        tools=TOOLS,
        middleware=[LLMToolEmulatorMiddleware(model=scripted("Rainy, 12°C"))],
    )
    fake_answer = tool_messages(emulated.invoke("weather").messages)["c_weather"]
    assert really_ran == ["get_weather"]  # not again
    assert shape(fake_answer) == shape(real_answer)
    assert shape(fake_answer) == {
        "metadata": {},
        "tool_call_id": "c_weather",
        "name": "get_weather",
        "status": "success",
        "usage": None,
    }
    assert type(fake_answer) is type(real_answer)
    assert isinstance(fake_answer.content, str)


def test_what_the_emulator_is_asked(make_agent: Any) -> None:
    emulator = scripted("Booked.")
    agent = make_agent(
        [ai("", BOOK), "ok"], tools=TOOLS, middleware=[LLMToolEmulatorMiddleware(model=emulator)]
    )
    agent.invoke("book")
    [asked] = emulator.requests
    assert asked.tools == []
    assert asked.system_prompt is not None
    assert "Reply with the output only" in asked.system_prompt
    [prompt] = asked.messages
    assert prompt.type == "human"
    assert "Tool name: book_flight" in prompt.text
    assert "Description: Book a flight and charge the card on file." in prompt.text
    assert '"origin": {"type": "string", "description": "IATA code of the departure' in (
        prompt.text
    )
    assert 'Arguments of this call: {"origin": "CDG", "destination": "JFK"}' in prompt.text


@pytest.mark.parametrize("selected", [["book_flight"], [book_flight]])
def test_only_the_listed_tools_are_emulated(make_agent: Any, selected: list[Any]) -> None:
    emulator = scripted("Booked.")
    agent = make_agent(
        [ai("", BOOK, WEATHER), "ok"],
        tools=TOOLS,
        middleware=[LLMToolEmulatorMiddleware(tools=selected, model=emulator)],
    )
    answers = tool_messages(agent.invoke("go").messages)
    assert really_ran == ["get_weather"]
    assert answers["c_book"].text == "Booked."
    assert answers["c_weather"].text == "real weather in Paris"
    assert emulator.calls == 1


def test_an_empty_list_emulates_nothing(make_agent: Any) -> None:
    emulator = scripted()
    agent = make_agent(
        [ai("", WEATHER), "ok"],
        tools=TOOLS,
        middleware=[LLMToolEmulatorMiddleware(tools=[], model=emulator)],
    )
    agent.invoke("weather")
    assert really_ran == ["get_weather"]
    assert emulator.calls == 0


def test_the_agents_model_emulates_by_default(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", BOOK), "Booked: XY1", "Done."],
        tools=TOOLS,
        middleware=[("llm_tool_emulator", {"tools": ["book_flight"]})],
    )
    result = agent.invoke("book")
    assert really_ran == []
    assert tool_messages(result.messages)["c_book"].text == "Booked: XY1"
    assert agent.model.requests[1].messages[0].text.startswith("Tool name: book_flight")
    assert result.text == "Done."


def test_unknown_tool_names_are_left_to_the_kernel(make_agent: Any) -> None:
    emulator = scripted()
    agent = make_agent(
        [ai("", call("teleport", "c_t")), "ok"],
        tools=TOOLS,
        middleware=[LLMToolEmulatorMiddleware(model=emulator)],
    )
    answer = tool_messages(agent.invoke("go").messages)["c_t"]
    assert answer.status == "error"
    assert "no tool named 'teleport'" in answer.text
    assert emulator.calls == 0


def test_a_failing_emulator_becomes_an_error_message(make_agent: Any) -> None:
    emulator = scripted(ProviderError("overloaded", status_code=529))
    agent = make_agent(
        [ai("", BOOK), "ok"], tools=TOOLS, middleware=[LLMToolEmulatorMiddleware(model=emulator)]
    )
    answer = tool_messages(agent.invoke("go").messages)["c_book"]
    assert answer.status == "error"
    assert "overloaded" in answer.text
    assert really_ran == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"tools": ["book_flight", "fax"]},
            "plugin 'llm_tool_emulator': option 'tools' names a tool the agent does not have: "
            "'fax'; the agent's tools are: book_flight, get_weather",
        ),
        ({"model": "nowhere:m"}, "option 'model': unknown model provider 'nowhere'"),
        ({"tools": "book_flight"}, "option 'tools'"),
        (
            {"model": "llama3"},
            f"plugin 'llm_tool_emulator': option 'model': expected {OPTIONAL_MODEL_FORMS}, "
            "got 'llama3'",
        ),
        (
            {"tools": ["book_flight", ""]},
            "plugin 'llm_tool_emulator': option 'tools': expected a list of tool names or Tool "
            "objects, or None for every tool, got ('book_flight', '')",
        ),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["x"], tools=TOOLS, middleware=[("llm_tool_emulator", options)])
    assert message in str(info.value)
    if message.startswith("plugin") and "got " in message:  # the whole sentence
        assert str(info.value) == message


def test_async_path_emulates_without_running_the_tools(make_agent: Any) -> None:
    emulator = scripted("Booked.", "Foggy.")
    agent = make_agent(
        [ai("", BOOK, WEATHER), "ok"],
        tools=TOOLS,
        middleware=[LLMToolEmulatorMiddleware(model=emulator)],
    )
    result = asyncio.run(agent.ainvoke("go"))
    assert really_ran == []
    answers = tool_messages(result.messages)
    assert sorted(m.text for m in answers.values()) == ["Booked.", "Foggy."]
    assert {m.name for m in answers.values()} == {"book_flight", "get_weather"}
    assert emulator.calls == 2
