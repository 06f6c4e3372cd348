"""A run that fails in its model call keeps the user's input on the thread, as
LangGraph's checkpoint before a failing node holds it: a ``StopRun`` raised around the
call (a refusal, a limit), a provider's error, the process killed while the model
thinks, or in a ``before_model`` hook's own model call. ``get_state`` shows the input;
``invoke(None)`` runs the failed step again; new input is added after it. What a
``before_agent`` hook refuses is never stored."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_server import fresh_postgres_schema

import plait
from plait.errors import ProviderError, StopRun
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from plait.testing import ScriptedChatModel, ai, call, transcript


class RefusedError(StopRun):
    """What a refusal middleware raises to end the run."""


class RefuseFirst(plait.Middleware):
    """Ends the run with ``RefusedError`` instead of the model's first answer."""

    def __init__(self) -> None:
        self.refused = 0

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        response = handler(request)
        if self.refused == 0:
            self.refused += 1
            raise RefusedError("the model refused: scripted (refusal)")
        return response


def _agent(tmp_path: Path, model: ScriptedChatModel, **kwargs: Any) -> plait.Agent:
    return plait.create_agent(model, checkpointer=f"sqlite:///{tmp_path / 'agent.db'}", **kwargs)


def test_a_stop_in_the_model_call_keeps_the_input_and_none_asks_the_model_again(
    tmp_path: Path,
) -> None:
    model = ScriptedChatModel(["I can't help with that.", "Lisbon, then Porto."])
    agent = _agent(tmp_path, model, middleware=[RefuseFirst()])
    with pytest.raises(RefusedError, match="the model refused"):
        agent.invoke("Plan my trip", thread_id="t")
    assert transcript(agent.get_state("t")["messages"]) == [("human", "Plan my trip")]
    # the input's own step, then the failed run's record (nothing of the refused answer)
    assert [step.node for step in agent.get_state_history("t")] == ["failed", "input"]

    result = agent.invoke(None, thread_id="t")  # LangGraph: the failed node runs again
    assert result.text == "Lisbon, then Porto."
    assert transcript(result.messages) == [("human", "Plan my trip"), ("ai", "Lisbon, then Porto.")]
    assert [m.text for m in model.requests[1].messages] == ["Plan my trip"]
    assert transcript(agent.get_state("t")["messages"]) == transcript(result.messages)


def test_new_input_after_a_stopped_run_comes_after_the_kept_input(tmp_path: Path) -> None:
    model = ScriptedChatModel(["refused", "Both: Lisbon in May."])
    agent = _agent(tmp_path, model, middleware=[RefuseFirst()])
    with pytest.raises(RefusedError):
        agent.invoke("Plan my trip", thread_id="t")
    result = agent.invoke({"messages": [HumanMessage("In May, please")]}, thread_id="t")
    assert transcript(result.messages) == [
        ("human", "Plan my trip"),
        ("human", "In May, please"),
        ("ai", "Both: Lisbon in May."),
    ]
    assert [m.text for m in model.requests[1].messages] == ["Plan my trip", "In May, please"]


def test_an_async_run_stopped_in_its_model_call_keeps_its_input(tmp_path: Path) -> None:
    model = ScriptedChatModel(["refused", "answered"])
    agent = _agent(tmp_path, model, middleware=[RefuseFirst()])
    with pytest.raises(RefusedError):
        asyncio.run(agent.ainvoke("Plan my trip", thread_id="t"))
    assert transcript(agent.get_state("t")["messages"]) == [("human", "Plan my trip")]
    assert asyncio.run(agent.ainvoke(None, thread_id="t")).text == "answered"


def test_a_provider_error_keeps_the_input_and_the_steps_before_it(tmp_path: Path) -> None:
    ran: list[str] = []

    def lookup(city: str) -> str:
        """Look up the weather.

        Args:
            city: the city.
        """
        ran.append(city)
        return f"sunny in {city}"

    outage = ProviderError("openai: 503 Service Unavailable", status_code=503)
    model = ScriptedChatModel(
        [ai("", call("lookup", id="c1", city="Oslo")), outage, "Sunny in Oslo."]
    )
    agent = _agent(tmp_path, model, tools=[lookup])
    with pytest.raises(ProviderError, match="503"):
        agent.invoke("Weather in Oslo?", thread_id="t")
    assert transcript(agent.get_state("t")["messages"]) == [
        ("human", "Weather in Oslo?"),
        ("ai", ""),
        ("tool", "sunny in Oslo"),
    ]
    assert agent.invoke(None, thread_id="t").text == "Sunny in Oslo."
    assert ran == ["Oslo"]  # the finished tool call is not made again


def test_a_provider_error_in_the_first_call_keeps_the_input(tmp_path: Path) -> None:
    outage = ProviderError("openai: 503 Service Unavailable", status_code=503)
    model = ScriptedChatModel([outage, "Hello!"])
    agent = _agent(tmp_path, model)
    with pytest.raises(ProviderError):
        agent.invoke("Hi", thread_id="t")
    assert transcript(agent.get_state("t")["messages"]) == [("human", "Hi")]
    assert transcript(agent.invoke(None, thread_id="t").messages) == [
        ("human", "Hi"),
        ("ai", "Hello!"),
    ]


def test_a_hook_refusing_the_input_stores_nothing(tmp_path: Path) -> None:
    """A hook before the model acts before the input is stored: its refusal (``pii``'s
    block) leaves the thread without it."""

    class Block(plait.Middleware):
        def before_agent(self, state: Any) -> None:
            raise RefusedError("found an email address in the user input")

    model = ScriptedChatModel(["never"])
    agent = _agent(tmp_path, model, middleware=[Block()])
    with pytest.raises(RefusedError):
        agent.invoke("mail me at ann@example.com", thread_id="t")
    assert agent.get_state("t")["messages"] == []
    assert agent.get_state_history("t") == []
    assert model.calls == 0


def test_a_before_agent_hook_saves_the_input_with_its_own_step(tmp_path: Path) -> None:
    """With a ``before_agent`` hook the input is saved with that hook's step (after it
    could refuse or rewrite it): no step of its own."""

    class Note(plait.Middleware):
        def before_agent(self, state: Any) -> dict[str, Any]:
            return {"messages": [AIMessage("(noted)")]}

    agent = _agent(tmp_path, ScriptedChatModel(["answer"]), middleware=[Note()])
    agent.invoke("hi", thread_id="t")
    assert [step.node for step in agent.get_state_history("t")] == [
        "after_agent",
        "model",
        "before_agent",
    ]


def test_a_before_model_hook_failing_in_its_own_model_call_keeps_the_input(
    tmp_path: Path,
) -> None:
    """A ``before_model`` hook that calls a model (``summarization``) fails as the run's
    model call does: the input is saved before it, and ``invoke(None)`` runs it again."""
    outage = ProviderError("openai: 503 Service Unavailable", status_code=503)
    summaries: list[str] = []

    class Summarize(plait.Middleware):
        def __init__(self) -> None:
            self.summarizer = ScriptedChatModel([outage, "a short summary"])

        def before_model(self, state: Any) -> None:
            summaries.append(self.summarizer.invoke(state["messages"]).text)

    agent = _agent(tmp_path, ScriptedChatModel(["answer"]), middleware=[Summarize()])
    with pytest.raises(ProviderError):
        agent.invoke("hi", thread_id="t")
    assert transcript(agent.get_state("t")["messages"]) == [("human", "hi")]
    assert [step.node for step in agent.get_state_history("t")] == ["failed", "input"]
    assert agent.invoke(None, thread_id="t").text == "answer"
    assert summaries == ["a short summary"]
    assert [step.node for step in agent.get_state_history("t")][:3] == [
        "after_agent",
        "model",
        "before_model",
    ]


CRASH_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    import plait
    from plait.testing import ScriptedChatModel

    url, marker = sys.argv[1:3]

    def think(messages, tools):
        Path(marker).write_text("")
        while True:  # the test kills this process here, mid model call
            time.sleep(1)

    agent = plait.create_agent(ScriptedChatModel([think]), checkpointer=url)
    agent.invoke("Plan my trip", thread_id="t")
    """
)


@pytest.fixture(params=["sqlite", "postgresql"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'agent.db'}"
    else:
        with fresh_postgres_schema() as url:
            yield url


def test_a_process_killed_mid_model_call_leaves_the_input_to_resume_from(
    durable_url: str, tmp_path: Path
) -> None:
    url = durable_url
    script = tmp_path / "crash.py"
    script.write_text(CRASH_SCRIPT)
    marker = tmp_path / "thinking"
    child = subprocess.Popen(
        [sys.executable, str(script), url, str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        if child.poll() is not None:
            pytest.fail(f"the child exited early ({child.returncode}): {child.communicate()[1]}")
        if time.monotonic() > deadline:
            child.kill()
            pytest.fail("the child never called the model")
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL

    def answer(messages: list[AnyMessage], tools: list[Any]) -> AIMessage:
        assert not any(isinstance(m, ToolMessage) for m in messages)
        return AIMessage(f"Answering: {messages[-1].text}")

    agent = plait.create_agent(ScriptedChatModel([answer]), checkpointer=url)
    assert transcript(agent.get_state("t")["messages"]) == [("human", "Plan my trip")]
    result = agent.invoke(None, thread_id="t")
    assert transcript(result.messages) == [
        ("human", "Plan my trip"),
        ("ai", "Answering: Plan my trip"),
    ]
