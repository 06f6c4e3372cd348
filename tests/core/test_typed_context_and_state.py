"""``create_agent(context_schema=..., state_schema=...)`` and ``@plait.dynamic_prompt``, as
LangChain v1 users write them: a run's context checked when it starts, ``ToolRuntime[C]``,
custom state keys with defaults and reducers that are checkpointed, and a system prompt
computed per call."""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import typing
from typing import Annotated, Any

import pydantic
import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ai, call, scripted


@dataclasses.dataclass
class Context:
    user_id: str
    tier: str = "free"


class PydanticContext(pydantic.BaseModel):
    user_id: str


class DictContext(typing.TypedDict):
    user_id: str


class State(plait.AgentState):
    visits: Annotated[list[str], operator.add]
    user_name: str


@plait.tool
def whoami(runtime: plait.ToolRuntime[Context]) -> str:
    """Who is asking."""
    return f"{runtime.context.user_id} ({runtime.context.tier})"


def test_the_context_reaches_tools_typed() -> None:
    model = scripted(ai("", call("whoami", "c1")), "done")
    agent = plait.create_agent(model, [whoami], context_schema=Context)
    assert "runtime" not in whoami.parameters["properties"]
    result = agent.invoke("who?", context=Context("u7", "pro"))
    assert [m.text for m in result.messages if m.type == "tool"] == ["u7 (pro)"]


@pytest.mark.parametrize("schema", [Context, PydanticContext, DictContext])
def test_a_context_of_the_wrong_type_is_refused_when_the_run_starts(schema: type) -> None:
    model = scripted("never")
    agent = plait.create_agent(model, context_schema=schema)
    with pytest.raises(ConfigError) as info:
        agent.invoke("hi", context={"user": 1} if schema is DictContext else "u1")
    text = str(info.value)
    if schema is DictContext:
        assert text == (
            "context: $.user_id: required, but missing; $: unknown key 'user' (valid: user_id)"
        )
    else:
        assert text == (
            f"context: expected an instance of {schema.__name__} (the agent's context_schema), "
            "got 'u1'"
        )
    assert model.requests == []  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"^context: expected"):
        asyncio.run(agent.ainvoke("hi", context=None))


def test_a_good_typed_dict_context_passes() -> None:
    agent = plait.create_agent(scripted("ok"), context_schema=DictContext)
    assert agent.invoke("hi", context={"user_id": "a"}).text == "ok"


def test_schemas_must_be_classes() -> None:
    with pytest.raises(ConfigError) as info:
        plait.create_agent(scripted("x"), context_schema=42)
    assert str(info.value) == (
        "context_schema: expected an attrs class, a dataclass, a TypedDict or a pydantic model, "
        "got 42"
    )
    with pytest.raises(ConfigError, match=r"^state_schema: expected an attrs class"):
        plait.create_agent(scripted("x"), state_schema={"visits": list})

    class WithDefault(pydantic.BaseModel):
        when: object = object()

    with pytest.raises(ConfigError) as info:
        plait.create_agent(scripted("x"), state_schema=WithDefault)
    assert str(info.value).startswith(
        "state_schema: WithDefault.when: default: expected a JSON value (state is checkpointed)"
    )


def test_state_schema_keys_have_defaults_reducers_and_are_checkpointed() -> None:
    @plait.before_model
    def visit(state: Any, runtime: plait.Runtime) -> dict[str, Any]:
        return {"visits": [f"seen by {state['user_name'] or 'nobody'}"]}

    model = scripted("one", "two")
    agent = plait.create_agent(
        model, middleware=[visit], state_schema=State, checkpointer="sqlite:///:memory:"
    )
    first = agent.invoke({"messages": [("user", "hi")], "user_name": "Ada"}, thread_id="t")
    assert first["visits"] == ["seen by Ada"]
    assert first["user_name"] == "Ada"
    second = agent.invoke("again", thread_id="t")
    assert second["visits"] == ["seen by Ada", "seen by Ada"]
    assert agent.get_state("t")["visits"] == ["seen by Ada", "seen by Ada"]

    fresh = plait.create_agent(scripted("x"), state_schema=State).invoke("hi")
    assert fresh["visits"] == []
    assert fresh["user_name"] is None


def test_dataclass_and_pydantic_state_schemas_give_their_defaults() -> None:
    @dataclasses.dataclass
    class DataState:
        count: int = 3
        notes: list[str] = dataclasses.field(default_factory=list)

    class ModelState(pydantic.BaseModel):
        mood: str = "calm"

    assert plait.create_agent(scripted("x"), state_schema=DataState).invoke("a")["count"] == 3
    assert plait.create_agent(scripted("x"), state_schema=ModelState).invoke("a")["mood"] == "calm"


def test_a_dynamic_prompt_writes_each_calls_system_prompt() -> None:
    @plait.dynamic_prompt
    def by_tier(request: plait.ModelRequest) -> str:
        return f"You help a {request.runtime.context.tier} user."

    @plait.dynamic_prompt
    def by_state(state: Any, runtime: plait.Runtime[Context]) -> str | None:
        return None if len(state["messages"]) < 2 else "Second call."

    model = scripted(ai("", call("whoami", "c")), "done")
    agent = plait.create_agent(
        model,
        [whoami],
        system_prompt="base",
        middleware=[by_tier, by_state],
        context_schema=Context,
    )
    agent.invoke("hi", context=Context("u", "pro"))
    prompts = [r.system_prompt for r in model.requests]  # type: ignore[attr-defined]
    assert prompts == ["You help a pro user.", "Second call."]


def test_an_async_dynamic_prompt_runs_on_both_paths() -> None:
    @plait.dynamic_prompt
    async def prompt(request: plait.ModelRequest) -> str:
        return "async prompt"

    model = scripted("a", "b")
    agent = plait.create_agent(model, middleware=[prompt])
    agent.invoke("x")
    asyncio.run(agent.ainvoke("y"))
    assert [r.system_prompt for r in model.requests] == ["async prompt"] * 2  # type: ignore[attr-defined]


def test_a_dynamic_prompt_that_returns_no_text_says_so() -> None:
    @plait.dynamic_prompt
    def broken(request: plait.ModelRequest) -> Any:
        return 3

    with pytest.raises(
        TypeError, match=r"^@dynamic_prompt 'broken': expected a string or None, got 3"
    ):
        plait.create_agent(scripted("x"), middleware=[broken]).invoke("x")
    with pytest.raises(TypeError, match=r"a function of \(request\) or \(state, runtime\)"):
        plait.dynamic_prompt(lambda: "x")
