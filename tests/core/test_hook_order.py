"""Hooks run in the documented order and wrap hooks nest with the first outermost."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import pytest

import plait
from plait.errors import ConfigError, ProviderError
from plait.testing import HookRecorder, ai, call, scripted, transcript


@plait.tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: what to echo.
    """
    return text


def test_three_middleware_run_in_documented_order(make_agent: Any) -> None:
    log: list[tuple[str, str]] = []
    a, b, c = (HookRecorder(label, log) for label in "ABC")
    agent = make_agent([ai("", call("echo", text="x")), "done"], tools=[echo], middleware=[a, b, c])

    agent.invoke("go")

    model_round = (
        [(x, "before_model") for x in "ABC"]
        + [(x, "wrap_model_call:enter") for x in "ABC"]
        + [(x, "wrap_model_call:exit") for x in "CBA"]
        + [(x, "after_model") for x in "CBA"]
    )
    tool_round = [(x, "wrap_tool_call:enter") for x in "ABC"] + [
        (x, "wrap_tool_call:exit") for x in "CBA"
    ]
    assert log == (
        [(x, "before_agent") for x in "ABC"]
        + model_round
        + tool_round
        + model_round
        + [(x, "after_agent") for x in "CBA"]
    )


def test_before_hooks_see_previous_updates(make_agent: Any) -> None:
    seen: list[int] = []

    @attrs.frozen
    class Counter(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {"n": plait.StateField(default=0)}

        def before_model(self, state: Any) -> dict[str, Any]:
            seen.append(state["n"])
            return {"n": state["n"] + 1}

    agent = make_agent(["ok"], middleware=[Counter(), Counter()])
    result = agent.invoke("hi")

    assert seen == [0, 1]
    assert result.state["n"] == 2


def test_wrap_can_short_circuit_without_calling_the_model(make_agent: Any) -> None:
    @plait.wrap_model_call
    def cache(request: plait.ModelRequest, handler: Any) -> plait.AIMessage:
        return plait.AIMessage("from cache")

    agent = make_agent([], middleware=[cache])
    result = agent.invoke("hi")

    assert result.text == "from cache"
    assert agent.model.calls == 0


def test_wrap_can_retry_calling_handler_three_times(make_agent: Any) -> None:
    attempts: list[int] = []

    @plait.wrap_model_call
    def retry(request: plait.ModelRequest, handler: Any) -> Any:
        for attempt in range(3):
            attempts.append(attempt)
            try:
                return handler(request)
            except ProviderError:
                if attempt == 2:
                    raise
        raise AssertionError

    boom = ProviderError("overloaded", status_code=529)
    agent = make_agent([boom, boom, "third time lucky"], middleware=[retry])

    assert agent.invoke("hi").text == "third time lucky"
    assert attempts == [0, 1, 2]
    assert agent.model.calls == 3


def test_wrap_can_fall_back_to_another_model(make_agent: Any) -> None:
    backup = scripted("backup answer")

    @plait.wrap_model_call
    def fallback(request: plait.ModelRequest, handler: Any) -> Any:
        try:
            return handler(request)
        except ProviderError:
            return handler(request.override(model=backup))

    agent = make_agent([ProviderError("down", status_code=503)], middleware=[fallback])

    assert agent.invoke("hi").text == "backup answer"
    assert backup.requests[0].messages[0].text == "hi"


def test_wrap_tool_call_can_rewrite_the_result(make_agent: Any) -> None:
    @plait.wrap_tool_call
    def shout(request: plait.ToolCallRequest, handler: Any) -> Any:
        message = handler(request)
        return attrs.evolve(message, content=message.text.upper())

    agent = make_agent(
        [ai("", call("echo", text="quiet")), "done"], tools=[echo], middleware=[shout]
    )
    result = agent.invoke("go")

    assert transcript(result.messages) == [
        ("human", "go"),
        ("ai", ""),
        ("tool", "QUIET"),
        ("ai", "done"),
    ]


def test_same_class_twice_gets_distinct_names_even_when_equal(make_agent: Any) -> None:
    log: list[str] = []

    @attrs.frozen
    class Limit(plait.Middleware):
        tool: str = "search"

        def before_agent(self) -> None:
            log.append(self.tool)

    first, second = Limit(), Limit()
    assert first == second  # attrs value equality must not make them collide

    agent = make_agent(["ok"], middleware=[first, second])
    agent.invoke("hi")

    assert agent.compiled.registry.names == ["Limit", "Limit#2"]
    assert log == ["search", "search"]


def test_unmarked_hook_method_on_a_plain_object_is_an_error(make_agent: Any) -> None:
    class Forgotten:
        def before_model(self, state: Any) -> None:
            return None

    with pytest.raises(ConfigError, match=r"before_model.*not marked @plait\.hookimpl"):
        make_agent(["ok"], middleware=[Forgotten()])


def test_misspelt_hook_name_is_an_error(make_agent: Any) -> None:
    class Typo:
        @plait.hookimpl
        def before_modle(self, state: Any) -> None:
            return None

    with pytest.raises(ConfigError, match="before_modle"):
        make_agent(["ok"], middleware=[Typo()])


def test_argument_not_in_spec_is_an_error(make_agent: Any) -> None:
    class Wrong:
        @plait.hookimpl
        def before_model(self, state: Any, request: Any) -> None:
            return None

    with pytest.raises(ConfigError, match="request"):
        make_agent(["ok"], middleware=[Wrong()])


@pytest.mark.parametrize("flag", ["tryfirst", "trylast", "wrapper"])
def test_pluggy_ordering_flags_are_refused(make_agent: Any, flag: str) -> None:
    class Ordered:
        @plait.hookimpl(**{flag: True})
        def before_model(self, state: Any) -> Any:
            return None

    with pytest.raises(ConfigError, match=f"{flag}=True"):
        make_agent(["ok"], middleware=[Ordered()])


def test_passing_a_class_or_plain_function_is_explained(make_agent: Any) -> None:
    def not_decorated(state: Any) -> None:
        return None

    with pytest.raises(ConfigError, match=r"pass an instance, e.g. HookRecorder\(\)"):
        make_agent(["ok"], middleware=[HookRecorder])
    with pytest.raises(ConfigError, match="decorate it with a hook decorator"):
        make_agent(["ok"], middleware=[not_decorated])


def test_unknown_middleware_name_lists_installed_names(make_agent: Any) -> None:
    with pytest.raises(ConfigError, match=r"unknown middleware 'no_such_thing'; installed: "):
        make_agent(["ok"], middleware=["no_such_thing"])


def test_a_refused_middleware_leaves_no_trace_for_later_agents(make_agent: Any) -> None:
    """Middleware are checked on one plugin manager per process: a refusal half-way
    through registering must not make the next agent's middleware of that name collide."""

    def named_wrong(take_request: bool) -> Any:
        if take_request:

            class Wrong:
                @plait.hookimpl
                def after_model(self, state: Any) -> None:
                    return None

                @plait.hookimpl
                def before_model(self, state: Any, request: Any) -> None:
                    return None

        else:

            class Wrong:  # type: ignore[no-redef]
                @plait.hookimpl
                def before_model(self, state: Any) -> Any:
                    return {"messages": [plait.HumanMessage("checked")]}

        return Wrong()

    for _ in range(2):
        with pytest.raises(ConfigError, match="request"):
            make_agent(["ok"], middleware=[named_wrong(True)])

    agent = make_agent(["ok"], middleware=[named_wrong(False)])
    agent.invoke("hi")
    assert [m.text for m in agent.model.requests[0].messages] == ["hi", "checked"]


def test_agents_built_on_many_threads_at_once_each_get_their_middleware() -> None:
    """A server builds an agent per request on several threads: each first build of a
    middleware class is checked once, whatever the others do meanwhile."""

    def build(i: int) -> list[str]:
        class Tag:
            @plait.hookimpl
            def before_model(self, state: Any) -> Any:
                return {"messages": [plait.HumanMessage(f"tag {i}")]}

        model = plait.ScriptedChatModel(["ok"])
        plait.create_agent(model, middleware=[Tag()]).invoke("hi")
        return [m.text for m in model.requests[0].messages]

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads interleave inside the checks, as under load
    try:
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(build, range(32)))
    finally:
        sys.setswitchinterval(switch)

    assert results == [["hi", f"tag {i}"] for i in range(32)]
