"""Who holds a thread: the lease is per run, not per process — two ``Agent`` objects of
one process on one database exclude each other before the second calls its model; a run
interrupted in its process (a cancelled task) frees the thread for another process at
once; ``invoke(None)`` on a thread that does not exist is refused; a tool's raw bytes
are saved as base64 text."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import plait
from plait.errors import PlaitError, ThreadBusyError
from plait.messages import AIMessage, ToolCall
from plait.testing import ScriptedChatModel, transcript


def _blocking_agent(url: str, gate: threading.Event, started: threading.Event) -> plait.Agent:
    def wait() -> str:
        """Wait for the gate."""
        started.set()
        gate.wait(30)
        return "waited"

    model = ScriptedChatModel([AIMessage("", tool_calls=[ToolCall("wait", {}, "c1")]), "A done"])
    return plait.create_agent(model, tools=[wait], checkpointer=url)


def test_two_agent_objects_of_one_process_exclude_each_other_before_the_model_call(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    gate, started = threading.Event(), threading.Event()
    first = _blocking_agent(url, gate, started)
    results: list[str] = []
    worker = threading.Thread(
        target=lambda: results.append(first.invoke("A's question", thread_id="t").text)
    )
    worker.start()
    assert started.wait(30)
    second_model = ScriptedChatModel(["B's answer"])
    second = plait.create_agent(second_model, checkpointer=url)
    try:
        with pytest.raises(ThreadBusyError) as info:
            second.invoke("B's question", thread_id="t")
        assert str(info.value).startswith("thread 't' has a run in progress in this process (run ")
        assert str(info.value).endswith("by another Agent object); send new input when it ends")
        assert second_model.calls == 0  # refused before anything was spent
    finally:
        gate.set()
        worker.join(30)
    assert results == ["A done"]  # the first run kept its thread to the end
    assert transcript(second.get_state("t")["messages"]) == [
        ("human", "A's question"),
        ("ai", ""),
        ("tool", "waited"),
        ("ai", "A done"),
    ]
    assert second.invoke("B's question", thread_id="t").text == "B's answer"


def test_two_agent_objects_exclude_each_other_under_ainvoke(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    gate, started = threading.Event(), threading.Event()
    first = _blocking_agent(url, gate, started)
    second_model = ScriptedChatModel(["B's answer"])
    second = plait.create_agent(second_model, checkpointer=url)

    async def both() -> str:
        task = asyncio.ensure_future(first.ainvoke("A's question", thread_id="t"))
        while not started.is_set():
            await asyncio.sleep(0.01)
        with pytest.raises(ThreadBusyError, match="in progress in this process"):
            await second.ainvoke("B's question", thread_id="t")
        gate.set()
        return (await task).text

    assert asyncio.run(both()) == "A done"
    assert second_model.calls == 0


NEW_INPUT = textwrap.dedent(
    """
    import sys
    import plait
    from plait.models import ScriptedChatModel

    agent = plait.create_agent(ScriptedChatModel(["B's answer"]), checkpointer=sys.argv[1])
    print(agent.invoke("B's question", thread_id="t").text)
    """
)


def test_a_cancelled_run_frees_the_thread_for_another_process_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"

    async def hang() -> str:
        """Never answer."""
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedChatModel([AIMessage("", tool_calls=[ToolCall("hang", {}, "c1")])])
    agent = plait.create_agent(model, tools=[hang], checkpointer=url)

    async def cancel() -> None:
        task = asyncio.ensure_future(agent.ainvoke("A's question", thread_id="t"))
        while len(agent.get_state("t").get("messages", [])) < 2:  # the tool call is saved
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())
    script = tmp_path / "b.py"
    script.write_text(NEW_INPUT)
    done = subprocess.run(
        [sys.executable, str(script), url], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "B's answer\n"


def test_a_keyboard_interrupt_in_a_tool_frees_the_thread_for_another_process(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"

    def ctrl_c() -> str:
        """Be interrupted."""
        raise KeyboardInterrupt

    model = ScriptedChatModel([AIMessage("", tool_calls=[ToolCall("ctrl_c", {}, "c1")])])
    tool = plait.tool(ctrl_c, run_in_thread=False)
    agent = plait.create_agent(model, tools=[tool], checkpointer=url)
    with pytest.raises(KeyboardInterrupt):
        agent.invoke("A's question", thread_id="t")
    script = tmp_path / "b.py"
    script.write_text(NEW_INPUT)
    done = subprocess.run(
        [sys.executable, str(script), url], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "B's answer\n"


def test_none_input_for_a_thread_that_does_not_exist_is_refused_before_the_model() -> None:
    model = ScriptedChatModel(["never"])
    agent = plait.create_agent(model, checkpointer="memory")
    with pytest.raises(PlaitError) as info:
        agent.invoke(None, thread_id="nope")
    assert str(info.value) == (
        "thread 'nope' does not exist (nothing was saved under that id), so input None "
        "has no run to continue: pass a prompt or messages to start one"
    )
    assert model.calls == 0
    assert agent.list_threads() == []


def test_none_input_for_a_finished_thread_is_refused_before_the_model() -> None:
    """``invoke(None)`` continues a run; on a thread whose run ended with the model's answer
    there is none, and asking the model again would only buy a second answer."""
    model = ScriptedChatModel(["first answer", "never"])
    agent = plait.create_agent(model, checkpointer="memory")
    agent.invoke("hi", thread_id="done")
    with pytest.raises(PlaitError) as info:
        agent.invoke(None, thread_id="done")
    assert str(info.value) == (
        "thread 'done' has no unfinished run (its last run ended with the model's answer), "
        "so input None has nothing to continue: pass a prompt or messages to start a new run"
    )
    with pytest.raises(PlaitError, match="has no unfinished run"):
        asyncio.run(agent.ainvoke(None, thread_id="done"))
    assert model.calls == 1
    assert transcript(agent.get_state("done")["messages"]) == [
        ("human", "hi"),
        ("ai", "first answer"),
    ]


def test_none_input_runs_what_update_state_added_to_a_finished_thread() -> None:
    model = ScriptedChatModel(["first answer", "second answer"])
    agent = plait.create_agent(model, checkpointer="memory")
    agent.invoke("hi", thread_id="t")
    agent.update_state("t", {"messages": [plait.HumanMessage("and now?")]})
    assert agent.invoke(None, thread_id="t").text == "second answer"
    assert model.calls == 2


def test_none_input_without_a_thread_is_refused_before_the_model() -> None:
    model = ScriptedChatModel(["never"])
    agent = plait.create_agent(model)
    with pytest.raises(PlaitError, match="input is None and there is no thread to continue"):
        agent.invoke(None)
    assert model.calls == 0


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff"


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_tool_returning_raw_image_bytes_is_saved_as_base64_and_sent_so(
    tmp_path: Path, kind: str
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}" if kind == "sqlite" else "memory"

    def screenshot() -> list[dict[str, object]]:
        """Take a screenshot."""
        source = {"type": "base64", "media_type": "image/png", "data": PNG}
        return [{"type": "text", "text": "the screen:"}, {"type": "image", "source": source}]

    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[ToolCall("screenshot", {}, "c1")]), "a login form"]
    )
    agent = plait.create_agent(model, tools=[screenshot], checkpointer=url)
    assert agent.invoke("What is on screen?", thread_id="t").text == "a login form"
    encoded = base64.b64encode(PNG).decode("ascii")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    image["source"]["data"] = encoded  # type: ignore[index]
    expected = [{"type": "text", "text": "the screen:"}, image]
    assert model.requests[1].messages[-1].content == expected  # what the model was sent
    if kind == "sqlite":  # what a new process reads back
        reader = plait.create_agent(ScriptedChatModel([]), checkpointer=url)
        assert reader.get_state("t")["messages"][2].content == expected
