"""plait-langchain against real LangChain components that need no network: ``@tool``
functions, ``StructuredTool``s and LangChain's fake chat models, in plait agents."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, ToolException
from langchain_core.tools import tool as lc_tool

import plait
from plait.errors import ConfigError
from plait.messages import AIMessageChunk
from plait.testing import ai, call, scripted, tool_answers
from plait_langchain import LangChainChatModel, chat_model, tool


@lc_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@lc_tool(response_format="content_and_artifact")
def lookup(query: str) -> tuple[str, dict[str, Any]]:
    """Look rows up."""
    return f"found 2 rows for {query}", {"rows": [1, 2]}


def _down(city: str) -> str:
    """Weather service."""
    raise ToolException(f"the weather service is down for {city}")


weather = StructuredTool.from_function(_down, name="weather")


async def _fetch(url: str) -> str:
    await asyncio.sleep(0)
    return f"<html>{url}</html>"


fetch = StructuredTool.from_function(coroutine=_fetch, name="fetch", description="Fetch a URL.")


def _answers(*messages: AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(messages))


def test_langchain_tools_keep_their_name_description_and_schema() -> None:
    made = tool(add)
    assert (made.name, made.description) == ("add", "Add two numbers.")
    assert made.parameters["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert made.parameters["required"] == ["a", "b"]
    assert "runtime" not in made.parameters["properties"]
    assert tool(fetch).is_async and not made.is_async


def test_langchain_tools_run_in_a_plait_agent_given_directly() -> None:
    model = scripted(
        ai(
            "",
            call("add", "c1", a=1, b=2),
            call("lookup", "c2", query="x"),
            call("weather", "c3", city="Oslo"),
            call("add", "c4", a="one", b=2),
        ),
        "done",
    )
    result = plait.create_agent(model, [add, lookup, weather]).invoke("go")
    answers = tool_answers(result.messages)
    assert answers["c1"].text == "3"
    assert answers["c2"].text == "found 2 rows for x"
    assert answers["c2"].metadata == {"langchain": {"artifact": {"rows": [1, 2]}}}
    assert (answers["c3"].status, answers["c3"].text) == (
        "error",
        "Error: the weather service is down for Oslo",
    )
    assert answers["c4"].status == "error"
    assert "argument 'a': expected an int, got 'one'" in answers["c4"].text


def test_a_schema_the_tool_itself_refuses_reads_like_plaits_own() -> None:
    @lc_tool
    def scale(factor: float, items: list[int]) -> str:
        """Scale items."""
        return str([factor * i for i in items])

    model = scripted(ai("", call("scale", "c", factor=2, items=[1, "x"])), "ok")
    result = plait.create_agent(model, [tool(scale)]).invoke("go")
    text = tool_answers(result.messages)["c"].text
    assert text.startswith("Error: invalid arguments for tool 'scale': argument 'items[1]': ")
    assert "got 'x'" in text


def test_an_async_langchain_tool_runs_on_both_paths() -> None:
    def model() -> Any:
        return scripted(ai("", call("fetch", "c", url="http://x")), "ok")

    sync = plait.create_agent(model(), [fetch]).invoke("go")
    asynced = asyncio.run(plait.create_agent(model(), [fetch]).ainvoke("go"))
    for result in (sync, asynced):
        assert tool_answers(result.messages)["c"].text == "<html>http://x</html>"


def test_what_is_not_a_tool_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        tool(add.func)  # type: ignore[arg-type]
    assert str(info.value).startswith("plait_langchain.tool: expected a LangChain BaseTool, got")
    with pytest.raises(ConfigError) as info:
        plait.create_agent(scripted(), [42])
    assert str(info.value) == (
        "tools: expected a plait.Tool, a function, or a tool a plait.tool_adapters entry point "
        "takes (LangChain tools, with plait-langchain installed), got 42"
    )


def test_a_langchain_chat_model_drives_the_loop_with_its_usage() -> None:
    model = _answers(
        AIMessage(
            "",
            tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"}],
            usage_metadata={"input_tokens": 10, "output_tokens": 4, "total_tokens": 14},
        ),
        AIMessage("5", usage_metadata={"input_tokens": 20, "output_tokens": 1, "total_tokens": 21}),
    )
    result = plait.create_agent(chat_model(model), [add]).invoke("2+3?")
    assert [m.type for m in result.messages] == ["human", "ai", "tool", "ai"]
    assert result.text == "5"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 5)


def test_streaming_yields_langchains_chunks_as_plaits() -> None:
    model = chat_model(_answers(AIMessage("hello there world")))
    pairs = list(plait.create_agent(model).stream("hi", stream_mode="messages"))
    chunks = [c for c, _ in pairs if isinstance(c, AIMessageChunk)]
    assert len(chunks) > 1
    assert "".join(c.content for c in chunks) == "hello there world"

    async def astream() -> list[str]:
        again = chat_model(_answers(AIMessage("async words")))
        agent = plait.create_agent(again)
        return [c.content async for c, _ in agent.astream("hi", stream_mode="messages")]

    assert "".join(asyncio.run(astream())) == "async words"


class BindingFake(GenericFakeChatModel):
    """A fake that records what ``bind_tools`` was given, as a provider's model binds it."""

    bound: list[Any] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.bound.append((tools, kwargs))
        return self.bind(tools=tools, **kwargs)


@attrs.frozen
class Sum:
    total: int


def test_tools_are_bound_and_a_structured_answer_comes_through_the_answer_tool() -> None:
    answer = {"name": "Sum", "args": {"total": 5}, "id": "s"}
    fake = BindingFake(messages=iter([AIMessage("", tool_calls=[answer])]))
    result = plait.create_agent(chat_model(fake), [add], response_format=Sum).invoke("2+3")
    assert result.structured_response == Sum(5)
    tools, options = fake.bound[0]
    assert [t["function"]["name"] for t in tools] == ["add", "Sum"]
    assert options == {"tool_choice": "any"}


@pytest.mark.parametrize("choice", ["required", "add"])
def test_a_tool_choice_needing_a_tool_without_tools_is_refused(choice: str) -> None:
    """As plait's own providers refuse it: never dropped unsent."""

    @plait.wrap_model_call
    def force(request: Any, handler: Any) -> Any:
        return handler(request.override(tool_choice=choice))

    fake = BindingFake(messages=iter([AIMessage("never")]))
    agent = plait.create_agent(chat_model(fake), middleware=[force])
    with pytest.raises(ConfigError) as info:
        agent.invoke("hi")
    assert str(info.value) == (
        f"langchain: tool_choice: expected 'auto' or 'none' (no tool is offered), got {choice!r}"
    )


def test_tool_choice_auto_without_tools_calls_the_model_unbound() -> None:
    @plait.wrap_model_call
    def auto(request: Any, handler: Any) -> Any:
        return handler(request.override(tool_choice="auto"))

    fake = BindingFake(messages=iter([AIMessage("fine")]))
    fake.bound.clear()
    agent = plait.create_agent(chat_model(fake), middleware=[auto])
    assert agent.invoke("hi").text == "fine"
    assert fake.bound == []


def test_a_langchain_model_id_names_a_class_and_its_settings() -> None:
    with pytest.raises(ConfigError) as info:
        plait.create_agent(
            "langchain:langchain_core.language_models.fake_chat_models:FakeListChatModel"
        )
    assert str(info.value) == (
        "model 'langchain:langchain_core.language_models.fake_chat_models:FakeListChatModel': "
        "option 'responses': required, but missing"
    )
    model = plait.init_chat_model(
        "langchain:langchain_core.language_models.fake_chat_models:FakeListChatModel",
        responses=["from the id"],
    )
    assert isinstance(model, LangChainChatModel)
    assert plait.create_agent(model).invoke("hi").text == "from the id"
    assert model.model_name == "FakeListChatModel"


def test_a_model_id_that_names_no_chat_model_says_what_it_needs() -> None:
    with pytest.raises(ConfigError) as info:
        plait.init_chat_model("langchain:langchain_core.tools:tool")
    assert str(info.value).startswith(
        "model 'langchain:langchain_core.tools:tool': expected 'langchain:module:attr' naming a "
        "LangChain chat model"
    )
    with pytest.raises(ConfigError, match=r"^plait_langchain.chat_model: expected a LangChain"):
        chat_model(FakeListChatModel)  # type: ignore[arg-type]
