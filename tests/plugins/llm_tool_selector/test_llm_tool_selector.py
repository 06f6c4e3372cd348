"""``llm_tool_selector``: what the selector is asked, what the main call is offered, the
max_tools cut, always_include, unknown names, retries and on_parsing_failure, async."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import attrs
import pytest

import plait
from plait.errors import ConfigError
from plait.messages import HumanMessage
from plait.models import OPTIONAL_MODEL_FORMS
from plait.testing import ai, call, scripted
from plait_llm_tool_selector import LLMToolSelectorMiddleware, ToolSelectionError


@plait.tool
def search(q: str) -> str:
    """Search the web for pages.

    Args:
        q: the query.
    """
    return f"results for {q}"


@plait.tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: e.g. 2+2.
    """
    return "4"


@plait.tool
def send_email(to: str) -> str:
    """Send an email.

    Args:
        to: the recipient.
    """
    return "sent"


@plait.tool
def get_weather(city: str) -> str:
    """Get the weather for a city.

    Args:
        city: the city.
    """
    return "sunny"


TOOLS = [search, calculator, send_email, get_weather]


def selection(*names: str) -> str:
    return json.dumps({"tools": list(names)})


def offered(model: plait.ScriptedChatModel, index: int = -1) -> list[str]:
    return model.requests[index].tool_names


def test_the_main_call_sees_only_the_selected_tools(make_agent: Any) -> None:
    selector = scripted(selection("calculator", "get_weather"))
    agent = make_agent(
        ["It is 4."], tools=TOOLS, middleware=[LLMToolSelectorMiddleware(model=selector)]
    )
    agent.invoke([HumanMessage("earlier question"), "what is 2+2, and is it sunny?"])
    assert offered(agent.model) == ["calculator", "get_weather"]
    [asked] = selector.requests
    assert [m.text for m in asked.messages] == ["what is 2+2, and is it sunny?"]
    assert asked.tools == []
    assert asked.system_prompt is not None
    assert asked.system_prompt.startswith("Your goal is to select the tools most relevant")
    schema = asked.response_format
    assert schema is not None
    tools = schema["properties"]["tools"]
    assert tools["type"] == "array"
    assert tools["items"] == {
        "type": "string",
        "enum": ["search", "calculator", "send_email", "get_weather"],
    }
    assert "- calculator: Evaluate an arithmetic expression." in tools["description"]
    assert "- get_weather: Get the weather for a city." in tools["description"]
    assert schema["required"] == ["tools"]


def test_max_tools_keeps_the_first_after_dropping_duplicates(make_agent: Any) -> None:
    selector = scripted(selection("send_email", "send_email", "search", "calculator"))
    agent = make_agent(
        ["ok"],
        tools=TOOLS,
        middleware=[LLMToolSelectorMiddleware(model=selector, max_tools=2)],
    )
    agent.invoke("mail the results")
    # the first two distinct names, offered in the agent's own tool order
    assert offered(agent.model) == ["search", "send_email"]
    assert "only the first 2 will be used" in (selector.requests[0].system_prompt or "")


def test_always_include_is_offered_uncounted_and_not_asked_about(make_agent: Any) -> None:
    selector = scripted(selection("calculator", "search"))
    agent = make_agent(
        ["ok"],
        tools=TOOLS,
        middleware=[
            LLMToolSelectorMiddleware(model=selector, max_tools=1, always_include=["send_email"])
        ],
    )
    agent.invoke("compute")
    assert offered(agent.model) == ["calculator", "send_email"]
    enum = selector.requests[0].response_format["properties"]["tools"]["items"]["enum"]  # type: ignore[index]
    assert "send_email" not in enum


def test_unknown_names_are_dropped_with_a_warning_in_the_stream(make_agent: Any) -> None:
    selector = scripted(selection("calculator", "teleport", "send_email"))
    agent = make_agent(
        ["ok"],
        tools=TOOLS,
        middleware=[LLMToolSelectorMiddleware(model=selector, always_include=["send_email"])],
    )
    events = list(agent.stream("compute", mode=["custom"]))
    assert offered(agent.model) == ["calculator", "send_email"]
    assert [e.data for e in events] == [
        {
            "type": "warning",
            "middleware": "llm_tool_selector",
            "message": "llm_tool_selector: the selector model chose tools that are not "
            "available and were ignored: 'teleport'",
            "ignored_tools": ["teleport"],
        }
    ]


def test_the_selector_defaults_to_the_agents_model_and_runs_before_every_call(
    make_agent: Any,
) -> None:
    agent = make_agent(
        [
            selection("search"),
            ai("", call("search", "s1", q="plait")),
            selection("calculator"),
            "done",
        ],
        tools=TOOLS,
        middleware=[LLMToolSelectorMiddleware()],
    )
    result = agent.invoke("find plait")
    assert result.text == "done"
    requests = agent.model.requests
    assert [r.response_format is not None for r in requests] == [True, False, True, False]
    assert [r.tool_names for r in requests[1::2]] == [["search"], ["calculator"]]
    # the second selection still sees only the latest user message
    assert [m.text for m in requests[2].messages] == ["find plait"]


def test_a_selection_given_as_a_tool_call_is_understood(make_agent: Any) -> None:
    selector = scripted(ai("", call("tool_selection", tools=["get_weather"])))
    agent = make_agent(
        ["sunny"], tools=TOOLS, middleware=[LLMToolSelectorMiddleware(model=selector)]
    )
    agent.invoke("weather?")
    assert offered(agent.model) == ["get_weather"]


def test_a_malformed_selection_is_asked_for_again(make_agent: Any) -> None:
    selector = scripted("I think calculator", selection("calculator"))
    agent = make_agent(["4"], tools=TOOLS, middleware=[LLMToolSelectorMiddleware(model=selector)])
    agent.invoke("2+2?")
    assert offered(agent.model) == ["calculator"]
    retry = selector.requests[1].messages
    assert [m.type for m in retry] == ["human", "ai", "human"]
    assert retry[2].text.startswith(
        "That selection could not be used: the answer is not valid JSON"
    )


def test_on_parsing_failure_error_raises_after_the_retries(make_agent: Any) -> None:
    selector = scripted("nope", '{"tools": "calculator"}', "never asked")
    agent = make_agent(
        ["4"], tools=TOOLS, middleware=[LLMToolSelectorMiddleware(model=selector, max_retries=1)]
    )
    with pytest.raises(ToolSelectionError) as info:
        agent.invoke("2+2?")
    assert str(info.value).startswith(
        "llm_tool_selector: the selector model gave no valid tool selection after 2 attempt(s):"
    )
    assert "$.tools" in str(info.value)
    assert selector.calls == 2
    assert agent.model.calls == 0


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("all", ["search", "calculator", "send_email", "get_weather"]),
        ("none", ["send_email"]),
        (["get_weather"], ["send_email", "get_weather"]),
    ],
)
def test_on_parsing_failure_fallbacks(make_agent: Any, policy: Any, expected: list[str]) -> None:
    selector = scripted("garbage")
    agent = make_agent(
        ["ok"],
        tools=TOOLS,
        middleware=[
            LLMToolSelectorMiddleware(
                model=selector,
                max_retries=0,
                always_include=["send_email"],
                on_parsing_failure=policy,
            )
        ],
    )
    agent.invoke("hi")
    assert offered(agent.model) == expected


def test_on_parsing_failure_function_gets_the_exception(make_agent: Any) -> None:
    seen: list[Exception] = []

    def choose(exc: Exception) -> list[str]:
        seen.append(exc)
        return ["search", "ghost"]

    selector = scripted("garbage")
    agent = make_agent(
        ["ok"],
        tools=TOOLS,
        middleware=[
            LLMToolSelectorMiddleware(model=selector, max_retries=0, on_parsing_failure=choose)
        ],
    )
    events = list(agent.stream("hi", mode=["custom"]))
    assert offered(agent.model) == ["search"]
    assert isinstance(seen[0], ValueError)
    assert "not valid JSON" in str(seen[0])
    assert "on_parsing_failure chose tools that are not available" in events[0].data["message"]


def test_tools_the_kernel_adds_are_kept(make_agent: Any) -> None:
    @attrs.frozen
    class Answer:
        value: int

    selector = scripted(selection("calculator"))
    # without native structured output the kernel offers an extra answer tool
    model = scripted(ai("", call("Answer", "a1", value=4)), native_structured_output=False)
    agent = make_agent(
        model,
        tools=TOOLS,
        response_format=Answer,
        middleware=[LLMToolSelectorMiddleware(model=selector)],
    )
    result = agent.invoke("2+2?")
    assert result.structured_response == Answer(4)
    assert offered(model) == ["calculator", "Answer"]
    enum = selector.requests[0].response_format["properties"]["tools"]["items"]["enum"]  # type: ignore[index]
    assert "Answer" not in enum


def test_nothing_to_choose_means_no_selector_call(make_agent: Any) -> None:
    selector = scripted()
    agent = make_agent(
        ["ok"],
        tools=[search],
        middleware=[LLMToolSelectorMiddleware(model=selector, always_include=["search"])],
    )
    agent.invoke("hi")
    assert selector.calls == 0
    assert offered(agent.model) == ["search"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"always_include": ["search", "fax"]},
            "plugin 'llm_tool_selector': option 'always_include' names a tool the agent does "
            "not have: 'fax'; the agent's tools are: calculator, get_weather, search, send_email",
        ),
        (
            {"on_parsing_failure": ["fax"]},
            "option 'on_parsing_failure' names a tool the agent does not have: 'fax'",
        ),
        ({"max_tools": 0}, "max_tools': expected an int >= 1 or None, got 0"),
        ({"max_retries": -1}, "max_retries': expected an int >= 0, got -1"),
        (
            {"on_parsing_failure": "skip"},
            "plugin 'llm_tool_selector': option 'on_parsing_failure': expected one of 'error', "
            "'all', 'none', a list, a callable or a 'module:attr' string, got 'skip'",
        ),
        (
            {"model": "llama3"},
            f"plugin 'llm_tool_selector': option 'model': expected {OPTIONAL_MODEL_FORMS}, "
            "got 'llama3'",
        ),
        (
            {"always_include": ["search", ""]},
            "plugin 'llm_tool_selector': option 'always_include': expected a list of tool "
            "names, got ('search', '')",
        ),
        ({"model": "nowhere:small"}, "option 'model': unknown model provider 'nowhere'"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["x"], tools=TOOLS, middleware=[("llm_tool_selector", options)])
    assert message in str(info.value)
    assert "llm_tool_selector" in str(info.value)
    if message.startswith("plugin") and "got " in message:  # the whole sentence
        assert str(info.value) == message


def test_bad_values_given_in_python_are_worded_like_every_option() -> None:
    with pytest.raises(ValueError) as info:
        LLMToolSelectorMiddleware(on_parsing_failure=3)  # type: ignore[arg-type]
    assert str(info.value) == (
        "on_parsing_failure: expected one of 'error', 'all', 'none', a list of tool names or a "
        "callable (exception -> names), got 3"
    )
    with pytest.raises(ValueError) as info:
        LLMToolSelectorMiddleware(model="llama3")
    assert str(info.value) == (f"model: expected {OPTIONAL_MODEL_FORMS}, got 'llama3'")


def test_async_path(make_agent: Any) -> None:
    selector = scripted(selection("get_weather", "get_weather", "nope"))
    agent = make_agent(
        ["sunny"], tools=TOOLS, middleware=[LLMToolSelectorMiddleware(model=selector)]
    )

    async def scenario() -> list[Any]:
        return [event async for event in agent.astream("weather?", mode=["custom"])]

    events = asyncio.run(scenario())
    assert offered(agent.model) == ["get_weather"]
    assert events[0].data["ignored_tools"] == ["nope"]


def test_async_failure_policy(make_agent: Any) -> None:
    selector = scripted("bad", "worse")
    agent = make_agent(
        ["ok"],
        tools=TOOLS,
        middleware=[LLMToolSelectorMiddleware(model=selector, on_parsing_failure="none")],
    )
    asyncio.run(agent.ainvoke("hi"))
    assert selector.calls == 2
    assert offered(agent.model) == []
