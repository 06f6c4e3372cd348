"""Errors blame the right thing: a tool's own failure goes to the model (told to fix its
arguments only when they were the problem), a bug in a ``wrap_tool_call`` middleware goes
to the developer, and a tool the model could not understand is refused at
``create_agent``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.messages import AIMessage, ToolCall
from plait.testing import ScriptedChatModel


def lookup(city: str) -> str:
    """Look up the weather.

    Args:
        city: the city.
    """
    raise ConnectionError("weather service unreachable")


def _call(name: str = "lookup", **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[ToolCall(name, args, "c1")])


@plait.wrap_tool_call
def buggy(request: plait.ToolCallRequest, handler: Any) -> Any:
    return handler(request).text.nonexistent  # a bug in the middleware


@plait.wrap_tool_call
def abuggy(request: plait.ToolCallRequest, handler: Any) -> Any:
    raise KeyError("audit-log")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_exception_raised_by_wrap_tool_call_middleware_reaches_the_caller(mode: str) -> None:
    def ok(city: str) -> str:
        """Look up the weather.

        Args:
            city: the city.
        """
        return "sunny"

    model = ScriptedChatModel([_call("ok", city="Oslo"), "never asked"])
    agent = plait.create_agent(model, tools=[ok], middleware=[buggy])
    with pytest.raises(AttributeError, match="nonexistent") as info:
        if mode == "sync":
            agent.invoke("weather?")
        else:
            asyncio.run(agent.ainvoke("weather?"))
    assert info.value.__notes__ == [
        "plait: raised by a wrap_tool_call middleware around the call to tool 'ok', not by "
        "the tool, so the run stops (a tool's own error is sent to the model)"
    ]
    assert model.calls == 1  # the model was never told the middleware's bug was its fault


def test_a_middleware_exception_stops_the_run_under_parallel_async_calls() -> None:
    async def ok(city: str) -> str:
        """Look up the weather.

        Args:
            city: the city.
        """
        return "sunny"

    two = AIMessage(
        "", tool_calls=[ToolCall("ok", {"city": "a"}, "c1"), ToolCall("ok", {"city": "b"}, "c2")]
    )
    model = ScriptedChatModel([two, "never asked"])
    agent = plait.create_agent(model, tools=[ok], middleware=[abuggy])
    with pytest.raises(KeyError, match="audit-log"):
        asyncio.run(agent.ainvoke("weather?"))
    assert model.calls == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tools_own_error_goes_to_the_model_without_blaming_the_arguments(mode: str) -> None:
    model = ScriptedChatModel([_call(city="Oslo"), "The service is down."])

    @plait.wrap_tool_call
    def passthrough(request: plait.ToolCallRequest, handler: Any) -> Any:
        return handler(request)  # the tool's error passes through it unchanged

    agent = plait.create_agent(model, tools=[lookup], middleware=[passthrough])
    result = agent.invoke("weather?") if mode == "sync" else asyncio.run(agent.ainvoke("weather?"))
    assert result.text == "The service is down."
    sent = result.messages[2]
    assert sent.status == "error"
    assert sent.text == (
        "Error: tool 'lookup' raised ConnectionError: weather service unreachable. Call it "
        "again only if something you can change caused it, or take another approach."
    )
    assert "arguments" not in sent.text


def test_arguments_that_do_not_fit_still_ask_the_model_to_correct_them() -> None:
    model = ScriptedChatModel([_call(town="Oslo"), "sorry"])
    agent = plait.create_agent(model, tools=[lookup])
    sent = agent.invoke("weather?").messages[2]
    assert sent.status == "error"
    assert sent.text.startswith("Error: invalid arguments for tool 'lookup': ")
    assert sent.text.endswith("Call it again with corrected arguments.")


def test_a_lambda_tool_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError) as info:
        plait.create_agent(ScriptedChatModel([]), tools=[lookup, lambda x: x])
    assert str(info.value) == (
        "tools[1]: expected a function with a name, a docstring and typed parameters, got a "
        "lambda, which the model would see as a tool named '<lambda>' with no description; "
        "define it with def, or wrap it: plait.tool(func, name=..., description=...)"
    )


def test_a_function_without_a_docstring_is_refused_naming_it() -> None:
    def fetch(url: str) -> str:
        return url

    with pytest.raises(ConfigError) as info:
        plait.create_agent(ScriptedChatModel([]), tools=[fetch])
    assert str(info.value) == (
        "tools[0]: tool 'fetch': expected a description of what it does, got none, so the "
        "model would know it only by its name; give the function a docstring, or pass "
        "plait.tool(func, description=...)"
    )
    described = plait.tool(fetch, description="Fetch a page.")
    assert plait.create_agent(ScriptedChatModel([]), tools=[described]).tools == (described,)


def test_a_parameter_without_a_type_hint_is_refused_naming_it() -> None:
    def fetch(url, retries: int = 0) -> str:  # type: ignore[no-untyped-def]
        """Fetch a page."""
        return str(url)

    with pytest.raises(ConfigError) as info:
        plait.create_agent(ScriptedChatModel([]), tools=[fetch])
    assert str(info.value) == (
        "tools[0]: tool 'fetch': parameter 'url': expected a type hint (url: str, int, an "
        "attrs class ...), got none, so the model would be sent no schema for it"
    )
