"""create_agent refuses what is not middleware or not a store, naming what it got."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ScriptedChatModel


@pytest.mark.parametrize("item", [42, None, {}, object(), b"x"])
def test_an_object_implementing_no_hook_is_not_middleware(item: Any) -> None:
    with pytest.raises(ConfigError, match=r"implements no plait hook") as info:
        plait.create_agent(model=ScriptedChatModel([]), middleware=[item])
    assert f"middleware {item!r} ({type(item).__name__})" in str(info.value)


def test_an_empty_middleware_subclass_is_still_accepted() -> None:
    class Quiet(plait.Middleware):
        pass

    agent = plait.create_agent(model=ScriptedChatModel(["hi"]), middleware=[Quiet()])
    assert agent.invoke("hello").text == "hi"


@pytest.mark.parametrize("store", [{}, [], 7])
def test_a_store_that_is_not_a_store_is_refused(store: Any) -> None:
    with pytest.raises(ConfigError, match=r"is not a plait Store") as info:
        plait.create_agent(model=ScriptedChatModel([]), store=store)
    assert str(info.value).startswith(f"store {store!r}")


def _weather(city: str) -> str:
    """The weather.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


def _forcing(choice: str) -> Any:
    """An OpenAI model made to force ``choice`` on every call (it is never called here)."""
    from plait.models import init_chat_model

    return init_chat_model("openai:gpt-4.1", api_key="test-key", tool_choice=choice)


@pytest.mark.parametrize("choice", ["required", "any", "nosuch"])
def test_a_models_tool_choice_needing_a_tool_is_refused_for_an_agent_without_tools(
    choice: str,
) -> None:
    with pytest.raises(ConfigError) as info:
        plait.create_agent(_forcing(choice), tools=[])
    assert str(info.value) == (
        f"openai: tool_choice: expected 'auto' or 'none' (no tool is offered), got {choice!r}"
    )


def test_a_models_tool_choice_naming_no_tool_of_the_agent_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        plait.create_agent(_forcing("nosuch"), tools=[_weather])
    assert str(info.value) == (
        "openai: tool_choice: expected 'auto', 'none', 'required' or the name of a tool "
        "(_weather), got 'nosuch'"
    )


def test_a_models_tool_choice_may_name_a_tool_its_middleware_adds() -> None:
    class Notes(plait.Middleware):
        def agent_tools(self, agent_config: Any) -> list[plait.Tool]:
            return [plait.Tool.from_function(_weather, name="take_note")]

    agent = plait.create_agent(_forcing("take_note"), middleware=[Notes()])
    assert [t.name for t in agent.tools] == ["take_note"]
    assert plait.create_agent(_forcing("required"), middleware=[Notes()]).tools
    assert plait.create_agent(_forcing("auto"), tools=[]).tools == ()


def test_a_models_required_tool_choice_is_met_by_the_answer_tool() -> None:
    """A ``response_format`` answered through its tool (a model without native structured
    output) offers that tool on every call, so ``"required"`` has a tool to call."""
    import attrs

    from plait.models import init_chat_model

    @attrs.define
    class Weather:
        city: str

    model = init_chat_model(
        "openai:gpt-4.1",
        api_key="test-key",
        tool_choice="required",
        profile={"structured_output": False},
    )
    assert plait.create_agent(model, response_format=Weather).tools == ()
    with pytest.raises(ConfigError, match=r"\(no tool is offered\), got 'required'"):
        plait.create_agent(model)
