"""Parity with LangChain 1.5: agents ported from LangChain's documentation run in plait and
in LangChain's own ``create_agent`` on the same scripted answers (one LangChain fake chat
model each, answering alike), and end with the same final message, the same tool results
and the same structured response. Skipped where LangChain itself is not installed (tox's
``tests`` env installs it)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pytest

lc_agents = pytest.importorskip("langchain.agents")
lc_middleware = pytest.importorskip("langchain.agents.middleware")
memory = pytest.importorskip("langgraph.checkpoint.memory")
types = pytest.importorskip("langgraph.types")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

import plait  # noqa: E402
import plait_summarization  # noqa: E402
from plait_human_in_the_loop import HumanInTheLoopMiddleware  # noqa: E402
from plait_langchain import chat_model  # noqa: E402


class Scripted(GenericFakeChatModel):
    """LangChain's fake chat model, with the ``bind_tools`` LangChain's agent needs."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def _model(*answers: AIMessage) -> Scripted:
    return Scripted(messages=iter(answers))


def _calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)]
    )


def _summary(messages: Sequence[Any]) -> tuple[str, list[str]]:
    """The final AI text and the results of the agent's own tools, in order."""
    final = [m for m in messages if m.type == "ai"][-1]
    tools = [m for m in messages if m.type == "tool" and not _is_answer(m)]
    text = final.text if isinstance(final.text, str) else final.text()
    return text, [str(t.content) for t in tools]


def _is_answer(message: Any) -> bool:
    return message.name in ("ResponseFormat",)


@tool
def get_weather_for_location(city: str) -> str:
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"


@dataclass
class ResponseFormat:
    """Response schema for the agent."""

    punny_response: str
    weather_conditions: str | None = None


def test_the_weather_agent_with_a_structured_answer() -> None:
    answers = (
        _calls(("get_weather_for_location", {"city": "Florida"})),
        _calls(
            (
                "ResponseFormat",
                {"punny_response": "Sun-derful!", "weather_conditions": "sunny"},
            )
        ),
    )
    question = {"messages": [{"role": "user", "content": "weather in Florida?"}]}
    ours = plait.create_agent(
        chat_model(_model(*answers)),
        tools=[get_weather_for_location],
        response_format=ResponseFormat,
    ).invoke(question)
    theirs = lc_agents.create_agent(
        _model(*answers), tools=[get_weather_for_location], response_format=ResponseFormat
    ).invoke(question)
    assert ours["structured_response"] == theirs["structured_response"]
    assert _summary(ours["messages"])[1] == _summary(theirs["messages"])[1]


def test_human_approval_pauses_and_resumes_alike() -> None:
    @tool
    def execute_sql(query: str) -> str:
        """Run a SQL statement."""
        return "3 rows deleted"

    answers = (_calls(("execute_sql", {"query": "DELETE FROM old"})), AIMessage("Deleted."))
    config = {"configurable": {"thread_id": "t"}}
    question = {"messages": [("user", "Delete old records")]}
    ours = plait.create_agent(
        chat_model(_model(*answers)),
        tools=[execute_sql],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"execute_sql": True})],
        checkpointer="memory",
    )
    theirs = lc_agents.create_agent(
        _model(*answers),
        tools=[execute_sql],
        middleware=[lc_middleware.HumanInTheLoopMiddleware(interrupt_on={"execute_sql": True})],
        checkpointer=memory.InMemorySaver(),
    )
    results = []
    for agent, command in ((ours, plait.Command), (theirs, types.Command)):
        paused = agent.invoke(question, config=config)
        request = paused["__interrupt__"][0].value["action_requests"][0]
        done = agent.invoke(command(resume={"decisions": [{"type": "approve"}]}), config=config)
        results.append(((request["name"], request["args"]), _summary(done["messages"])))
    assert results[0] == results[1]
    assert results[0][1] == ("Deleted.", ["3 rows deleted"])


def test_custom_state_with_a_reducer() -> None:
    class CustomState(lc_agents.AgentState):  # type: ignore[misc, name-defined]
        topics: Annotated[list[str], operator.add]

    class OurState(plait.AgentState):
        topics: Annotated[list[str], operator.add]

    config = {"configurable": {"thread_id": "s"}}
    ours_agent = plait.create_agent(
        chat_model(_model(AIMessage("one"), AIMessage("two"))),
        state_schema=OurState,
        checkpointer="memory",
    )
    theirs_agent = lc_agents.create_agent(
        _model(AIMessage("one"), AIMessage("two")),
        state_schema=CustomState,
        checkpointer=memory.InMemorySaver(),
    )
    for agent in (ours_agent, theirs_agent):
        agent.invoke({"messages": [("user", "a")], "topics": ["x"]}, config=config)
    ours = ours_agent.invoke({"messages": [("user", "b")], "topics": ["y"]}, config=config)
    theirs = theirs_agent.invoke({"messages": [("user", "b")], "topics": ["y"]}, config=config)
    assert ours["topics"] == theirs["topics"] == ["x", "y"]
    assert [m.text for m in ours["messages"]] == [m.text for m in theirs["messages"]]


def test_a_dynamic_prompt_reaches_the_model_alike() -> None:
    seen: dict[str, list[str]] = {}

    def prompt_for(kind: str) -> Any:
        def role_prompt(request: Any) -> str:
            text = f"You help a {request.runtime.context['user_role']}."
            seen.setdefault(kind, []).append(text)
            return text

        return role_prompt

    ours = plait.create_agent(
        chat_model(_model(AIMessage("ok"))),
        middleware=[plait.dynamic_prompt(prompt_for("plait"))],
    ).invoke({"messages": [("user", "hi")]}, context={"user_role": "expert"})
    theirs = lc_agents.create_agent(
        _model(AIMessage("ok")),
        middleware=[lc_middleware.dynamic_prompt(prompt_for("langchain"))],
    ).invoke({"messages": [("user", "hi")]}, context={"user_role": "expert"})
    assert seen["plait"] == seen["langchain"] == ["You help a expert."]
    assert _summary(ours["messages"]) == _summary(theirs["messages"])


def test_streamed_tokens_are_the_same() -> None:
    question = {"messages": [("user", "hi")]}
    ours = plait.create_agent(chat_model(_model(AIMessage("hello there world"))))
    theirs = lc_agents.create_agent(_model(AIMessage("hello there world")))
    our_tokens = [t.content for t, _ in ours.stream(question, stream_mode="messages")]
    their_tokens = [t.content for t, _ in theirs.stream(question, stream_mode="messages")]
    assert "".join(our_tokens) == "".join(their_tokens) == "hello there world"


def test_summarization_under_its_trigger_changes_nothing_alike() -> None:
    config = {"configurable": {"thread_id": "m"}}
    ours = plait.create_agent(
        chat_model(_model(AIMessage("Hi Bob!"), AIMessage("Your name is Bob."))),
        middleware=[
            plait_summarization.SummarizationMiddleware(
                model=chat_model(_model()), trigger=("tokens", 4000), keep=("messages", 20)
            )
        ],
        checkpointer="memory",
    )
    theirs = lc_agents.create_agent(
        _model(AIMessage("Hi Bob!"), AIMessage("Your name is Bob.")),
        middleware=[
            lc_middleware.SummarizationMiddleware(
                model=_model(), trigger=("tokens", 4000), keep=("messages", 20)
            )
        ],
        checkpointer=memory.InMemorySaver(),
    )
    for agent in (ours, theirs):
        agent.invoke({"messages": "hi, my name is bob"}, config=config)
    mine = ours.invoke({"messages": "what's my name?"}, config=config)
    other = theirs.invoke({"messages": "what's my name?"}, config=config)
    assert [m.text for m in mine["messages"]] == [m.text for m in other["messages"]]
    assert mine["messages"][-1].text == "Your name is Bob."
