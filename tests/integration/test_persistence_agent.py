"""Agents on durable checkpointers: thread state, listing and deletion, interrupts
resumed by another agent object or another process, a run killed with SIGKILL and
finished by a new process, and a second writer on a thread never interleaving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from postgres_server import fresh_postgres_schema

import plait
from plait.checkpoint import Checkpointer, MemoryCheckpointer
from plait.errors import StoreError, ThreadBusyError
from plait.messages import AIMessage, AnyMessage, ToolCall, ToolMessage
from plait.models import ScriptedChatModel
from plait.persistence import SQLiteCheckpointer
from plait.testing import transcript


@attrs.define
class Backend:
    """Where threads live: ``url`` (None for memory) and a factory of checkpointers on it."""

    kind: str
    url: str | None
    make: Callable[[], Checkpointer]


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "memory":
        shared = MemoryCheckpointer()
        yield Backend("memory", None, lambda: shared)
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'agent.db'}"
        yield Backend("sqlite", url, lambda: SQLiteCheckpointer.from_url(url))
    else:
        from plait_postgres import PostgresCheckpointer

        with fresh_postgres_schema() as url:
            yield Backend("postgresql", url, lambda: PostgresCheckpointer.from_url(url))


@pytest.fixture(params=["sqlite", "postgresql"])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'agent.db'}"
        yield Backend("sqlite", url, lambda: SQLiteCheckpointer.from_url(url))
    else:
        from plait_postgres import PostgresCheckpointer

        with fresh_postgres_schema() as url:
            yield Backend("postgresql", url, lambda: PostgresCheckpointer.from_url(url))


@attrs.frozen
class CountModelCalls(plait.Middleware):
    """Counts model calls per thread in a checkpointed state key."""

    def state_fields(self) -> dict[str, plait.StateField]:
        return {"model_calls_seen": plait.StateField(default=0)}

    def after_model(self, state: Any) -> dict[str, Any]:
        return {"model_calls_seen": state["model_calls_seen"] + 1}


@plait.tool
def lookup(city: str) -> str:
    """Look up the weather.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


def weather_answers(messages: list[AnyMessage], tools: list[Any]) -> AIMessage:
    """Call ``lookup`` once per human question, then answer with its result."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"It is {last.text}.")
    return AIMessage("", tool_calls=[ToolCall("lookup", {"city": last.text}, uuid.uuid4().hex)])


def weather_agent(checkpointer: Checkpointer, **kwargs: Any) -> Any:
    return plait.create_agent(
        model=ScriptedChatModel([weather_answers] * 20),
        tools=[lookup],
        middleware=[CountModelCalls()],
        checkpointer=checkpointer,
        **kwargs,
    )


def test_get_state_and_a_second_agent_continue_the_thread(backend: Backend) -> None:
    first = weather_agent(backend.make())
    first.invoke("Paris", thread_id="t1")
    state = first.get_state("t1")
    assert transcript(state["messages"]) == [
        ("human", "Paris"),
        ("ai", ""),
        ("tool", "sunny in Paris"),
        ("ai", "It is sunny in Paris."),
    ]
    assert state["model_calls_seen"] == 2

    # Another agent (no shared cache) on the same storage sees and extends the thread.
    second = weather_agent(backend.make())
    assert second.get_state("t1") == state
    result = second.invoke("Oslo", thread_id="t1")
    assert transcript(result.messages)[4:] == [
        ("human", "Oslo"),
        ("ai", ""),
        ("tool", "sunny in Oslo"),
        ("ai", "It is sunny in Oslo."),
    ]
    assert second.get_state("t1")["model_calls_seen"] == 4
    # The first agent's cached copy is stale; it notices and reloads.
    again = first.invoke("Rome", thread_id="t1")
    assert [m.text for m in again.messages if m.type == "human"] == ["Paris", "Oslo", "Rome"]
    assert first.get_state("t1")["model_calls_seen"] == 6


def test_list_and_delete_threads(backend: Backend) -> None:
    agent = weather_agent(backend.make())
    for thread in ("a", "b", "c"):
        agent.invoke(thread.upper(), thread_id=thread)
    assert agent.list_threads() == ["a", "b", "c"]
    agent.delete_thread("b")
    assert agent.list_threads() == ["a", "c"]
    assert weather_agent(backend.make()).list_threads() == ["a", "c"]
    assert agent.get_state("b")["messages"] == []
    # A deleted thread starts from scratch.
    result = agent.invoke("B again", thread_id="b")
    assert [m.text for m in result.messages if m.type == "human"] == ["B again"]
    assert agent.get_state("b")["model_calls_seen"] == 2


@plait.tool
def book(train: str) -> str:
    """Book a train after a human approves.

    Args:
        train: the departure time.
    """
    answer = plait.interrupt({"question": f"Book the {train} train?"})
    return f"booked the {train}" if answer == "yes" else f"not booked: {answer}"


def booking_answers(messages: list[AnyMessage], tools: list[Any]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done: {last.text}.")
    return AIMessage("", tool_calls=[ToolCall("book", {"train": "9:40"}, "call-book")])


def booking_agent(checkpointer: Any) -> Any:
    return plait.create_agent(
        model=ScriptedChatModel([booking_answers] * 4), tools=[book], checkpointer=checkpointer
    )


def test_an_interrupt_is_resumed_by_another_agent_object(backend: Backend) -> None:
    paused = booking_agent(backend.make()).invoke("Book me a train", thread_id="trip")
    assert [i.value for i in paused.interrupts] == [{"question": "Book the 9:40 train?"}]
    result = booking_agent(backend.make()).invoke(plait.Command(resume="yes"), thread_id="trip")
    assert result.interrupts == []
    assert transcript(result.messages) == [
        ("human", "Book me a train"),
        ("ai", ""),
        ("tool", "booked the 9:40"),
        ("ai", "Done: booked the 9:40."),
    ]


def test_a_run_that_lost_the_race_fails_with_thread_busy_and_writes_nothing(
    backend: Backend,
) -> None:
    intruder = weather_agent(backend.make())

    class Intrude(plait.Middleware):
        def before_agent(self, state: Any) -> None:
            # Another run takes the thread while this one's first hook runs, before this
            # run saved anything that could show it live (its input is saved with the
            # step of this hook, before its model call).
            intruder.invoke("Lima", thread_id="race")

    loser = plait.create_agent(
        model=ScriptedChatModel(["Quito is sunny."]),
        middleware=[Intrude()],
        checkpointer=backend.make(),
    )
    with pytest.raises(ThreadBusyError, match="another run wrote to it"):
        loser.invoke("Quito", thread_id="race")
    messages = intruder.get_state("race")["messages"]
    assert [m.text for m in messages if m.type == "human"] == ["Lima"]  # the loser wrote nothing
    assert "Quito is sunny." not in [m.text for m in messages]


def test_new_input_from_another_agent_object_waits_for_the_live_run(backend: Backend) -> None:
    intruder = weather_agent(backend.make())
    refusals: list[str] = []

    @plait.tool
    def slow_lookup(city: str) -> str:
        """Look up the weather while another agent object sends input to the same thread.

        Args:
            city: the city.
        """
        with pytest.raises(ThreadBusyError) as info:
            intruder.invoke("Lima", thread_id="race")
        refusals.append(str(info.value))
        return f"sunny in {city}"

    def answers(messages: list[AnyMessage], tools: list[Any]) -> AIMessage:
        if messages[-1].type == "tool":
            return AIMessage("Quito: " + messages[-1].text)
        return AIMessage("", tool_calls=[ToolCall("slow_lookup", {"city": "Quito"}, "c-race")])

    owner = plait.create_agent(
        model=ScriptedChatModel([answers] * 2), tools=[slow_lookup], checkpointer=backend.make()
    )
    assert owner.invoke("Quito", thread_id="race").text == "Quito: sunny in Quito"
    assert len(refusals) == 1 and "has a run in progress in this process" in refusals[0]
    assert transcript(intruder.get_state("race")["messages"]) == [
        ("human", "Quito"),
        ("ai", ""),
        ("tool", "sunny in Quito"),
        ("ai", "Quito: sunny in Quito"),
    ]


# -- across processes ----------------------------------------------------------------------

CRASH_SCRIPT = textwrap.dedent(
    '''
    import json, os, sys, time
    from pathlib import Path

    import plait
    from plait.messages import AIMessage, ToolCall, ToolMessage
    from plait.models import ScriptedChatModel

    mode, url, thread_id, workdir = sys.argv[1:5]
    work = Path(workdir)
    ROUNDS = 5
    BLOCK_AT = int(os.environ.get("BLOCK_AT", "-1"))

    @plait.tool
    def record(n: int) -> str:
        """Record that step n happened.

        Args:
            n: the step number.
        """
        with open(work / "tool.log", "a") as log:
            log.write(f"{n}\\n")
        if n == BLOCK_AT:
            (work / f"blocked-{n}").write_text("")
            while True:  # the test kills this process here
                time.sleep(1)
        return f"recorded {n}"

    def answer(messages, tools):
        done = sum(1 for m in messages if isinstance(m, ToolMessage))
        if done < ROUNDS:
            call = ToolCall("record", {"n": done}, f"call-{done}")
            return AIMessage(f"step {done}", tool_calls=[call])
        return AIMessage("all steps recorded")

    agent = plait.create_agent(
        model=ScriptedChatModel([answer] * (2 * ROUNDS + 2)), tools=[record], checkpointer=url
    )
    if mode == "start":
        result = agent.invoke("record five steps", thread_id=thread_id)
    else:
        result = agent.invoke(None, thread_id=thread_id)
    print(json.dumps({"text": result.text}))
    '''
)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Wait until ``path`` exists (the child reached the point to kill it at)."""
    deadline = time.monotonic() + 120
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the child exited early ({proc.returncode}): {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the child never reached {path.name}")
        time.sleep(0.05)


def test_a_killed_run_resumes_in_a_new_process_losing_and_repeating_nothing(
    durable: Backend, tmp_path: Path
) -> None:
    assert durable.url is not None
    script = tmp_path / "crash_agent.py"
    script.write_text(CRASH_SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    args = [sys.executable, str(script)]
    child = subprocess.Popen(
        [*args, "start", durable.url, "crashy", str(work)],
        env={**os.environ, "BLOCK_AT": "3"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(work / "blocked-3", child)
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL

    checkpointer = durable.make()
    before = checkpointer.load("crashy")
    assert before is not None
    # Every finished step is durable: the input, three model/tool rounds, and the model
    # call whose tool was running when the process died.
    assert transcript(before.messages) == [
        ("human", "record five steps"),
        *[pair for n in range(3) for pair in (("ai", f"step {n}"), ("tool", f"recorded {n}"))],
        ("ai", "step 3"),
    ]

    resumed = subprocess.run(
        [*args, "resume", durable.url, "crashy", str(work)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"text": "all steps recorded"}

    after = checkpointer.load("crashy")
    assert after is not None
    assert after.messages[: len(before.messages)] == before.messages  # nothing lost or changed
    assert transcript(after.messages) == [
        ("human", "record five steps"),
        *[pair for n in range(5) for pair in (("ai", f"step {n}"), ("tool", f"recorded {n}"))],
        ("ai", "all steps recorded"),
    ]
    assert len({m.id for m in after.messages}) == len(after.messages)
    # Finished tool calls never ran again; only the one cut off by the kill did.
    assert (work / "tool.log").read_text().split() == ["0", "1", "2", "3", "3", "4"]


INTERRUPT_SCRIPT = textwrap.dedent(
    '''
    import json, sys

    import plait
    from plait.messages import AIMessage, ToolCall, ToolMessage
    from plait.models import ScriptedChatModel

    mode, url, thread_id = sys.argv[1:4]

    @plait.tool
    def book(train: str) -> str:
        """Book a train after a human approves.

        Args:
            train: the departure time.
        """
        answer = plait.interrupt({"question": f"Book the {train} train?"})
        return f"booked the {train}" if answer == "yes" else f"not booked: {answer}"

    def answers(messages, tools):
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(f"Done: {last.text}.")
        return AIMessage("", tool_calls=[ToolCall("book", {"train": "9:40"}, "call-book")])

    agent = plait.create_agent(
        model=ScriptedChatModel([answers] * 4), tools=[book], checkpointer=url
    )
    if mode == "ask":
        result = agent.invoke("Book me a train", thread_id=thread_id)
    else:
        result = agent.invoke(plait.Command(resume=sys.argv[4]), thread_id=thread_id)
    print(json.dumps({
        "interrupts": [{"id": i.id, "value": i.value} for i in result.interrupts],
        "text": result.text,
        "messages": [[m.type, m.text] for m in result.messages],
    }))
    '''
)


def test_process_b_resumes_the_interrupt_process_a_paused_at(
    durable: Backend, tmp_path: Path
) -> None:
    assert durable.url is not None
    script = tmp_path / "approval_agent.py"
    script.write_text(INTERRUPT_SCRIPT)

    def run(*argv: str) -> Any:
        done = subprocess.run(
            [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    asked = run("ask", durable.url, "trip")
    assert [i["value"] for i in asked["interrupts"]] == [{"question": "Book the 9:40 train?"}]
    assert asked["messages"] == [["human", "Book me a train"], ["ai", ""]]

    answered = run("answer", durable.url, "trip", "yes")
    assert answered["interrupts"] == []
    assert answered["text"] == "Done: booked the 9:40."
    assert answered["messages"] == [
        ["human", "Book me a train"],
        ["ai", ""],
        ["tool", "booked the 9:40"],
        ["ai", "Done: booked the 9:40."],
    ]
    # Nothing is left to resume.
    state = booking_agent(durable.make()).get_state("trip")
    assert transcript(state["messages"])[-1] == ("ai", "Done: booked the 9:40.")


@plait.tool
def remember(fact: str, runtime: plait.ToolRuntime) -> str:
    """Save a fact about the user for later conversations.

    Args:
        fact: what to remember.
    """
    store = runtime.runtime.store
    assert store is not None
    user = runtime.context["user"]
    store.put(("memories", user), f"fact-{len(store.search(('memories', user)))}", fact)
    return "saved"


def test_a_store_url_is_long_term_memory_shared_by_threads_and_agents(durable: Backend) -> None:
    assert durable.url is not None

    def answers(messages: list[AnyMessage], tools: list[Any]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("Noted.")
        fact = messages[-1].text
        return AIMessage("", tool_calls=[ToolCall("remember", {"fact": fact}, uuid.uuid4().hex)])

    def agent() -> Any:
        return plait.create_agent(
            model=ScriptedChatModel([answers] * 4),
            tools=[remember],
            checkpointer=durable.url,
            store=durable.url,
        )

    agent().invoke("I take the train", thread_id="monday", context={"user": "ana"})
    agent().invoke("I like window seats", thread_id="tuesday", context={"user": "ana"})
    agent().invoke("I fly", thread_id="other", context={"user": "bo"})
    reader = agent()
    assert [(i.key, i.value) for i in reader.store.search(("memories", "ana"))] == [
        ("fact-0", "I take the train"),
        ("fact-1", "I like window seats"),
    ]
    assert [i.namespace for i in reader.store.search(("memories",))] == [
        ("memories", "ana"),
        ("memories", "ana"),
        ("memories", "bo"),
    ]
    assert reader.list_threads() == ["monday", "tuesday", "other"]


def test_concurrent_async_runs_on_many_threads(backend: Backend) -> None:
    import asyncio

    agent = weather_agent(backend.make())
    cities = [f"city{i}" for i in range(8)]

    async def main() -> list[Any]:
        return await asyncio.gather(
            *(agent.ainvoke(city, thread_id=f"async-{city}") for city in cities)
        )

    results = asyncio.run(main())
    assert [r.text for r in results] == [f"It is sunny in {city}." for city in cities]
    for city in cities:
        state = weather_agent(backend.make()).get_state(f"async-{city}")
        assert transcript(state["messages"])[0] == ("human", city)
        assert state["model_calls_seen"] == 2


@pytest.mark.parametrize(
    ("url", "shown", "hidden"),
    [
        ("sqlite:agent.db", "'sqlite:agent.db'", None),
        ("sqlite://host/agent.db", "'sqlite://host/agent.db'", None),
        (
            "postgresql://bob:s3cret@127.0.0.1:1/app?connect_timeout=1",
            "postgresql://bob:***@127.0.0.1:1/app",
            "s3cret",
        ),
    ],
)
def test_a_bad_checkpointer_url_fails_at_create_agent(
    url: str, shown: str, hidden: str | None
) -> None:
    for option in ("checkpointer", "store"):
        with pytest.raises(StoreError) as info:
            plait.create_agent(model=ScriptedChatModel(["hi"]), **{option: url})
        assert shown in str(info.value)
        if hidden is not None:
            assert hidden not in str(info.value)


def test_a_foreign_file_fails_at_create_agent(tmp_path: Path) -> None:
    path = tmp_path / "photo.db"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    with pytest.raises(StoreError, match="not a usable SQLite database") as info:
        plait.create_agent(model=ScriptedChatModel(["hi"]), checkpointer=f"sqlite:///{path}")
    assert str(path) in str(info.value)


NON_UTF8_NAME = b"r\xe9sum\xe9.txt".decode("utf-8", "surrogateescape")


def list_files(folder: str) -> str:
    """List a folder whose file names are not UTF-8.

    Args:
        folder: the folder.
    """
    answer = plait.interrupt({"question": f"List {folder}?"})
    return f"{NON_UTF8_NAME} ({answer})"


def listing_answers(messages: list[AnyMessage], tools: list[Any]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Found {last.text}")
    return AIMessage("", tool_calls=[ToolCall("list_files", {"folder": NON_UTF8_NAME}, "c")])


def test_a_run_and_its_resume_keep_lone_surrogates(backend: Backend) -> None:
    def agent() -> Any:
        return plait.create_agent(
            model=ScriptedChatModel([listing_answers] * 4),
            tools=[plait.tool(list_files)],
            checkpointer=backend.make(),
        )

    paused = agent().invoke(f"what is in {NON_UTF8_NAME}?", thread_id="s")
    assert [i.value for i in paused.interrupts] == [{"question": f"List {NON_UTF8_NAME}?"}]
    result = agent().invoke(plait.Command(resume="ok"), thread_id="s")
    assert result.text == f"Found {NON_UTF8_NAME} (ok)"
    assert agent().get_state("s")["messages"][0].text == f"what is in {NON_UTF8_NAME}?"
