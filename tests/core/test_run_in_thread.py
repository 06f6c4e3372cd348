"""``@plait.tool(run_in_thread=False)``: a sync tool called in the thread running the agent
loop (the event loop's under ``ainvoke``/``astream``, the caller's under ``invoke``) instead
of a worker thread; and the timeouts it cannot take."""

from __future__ import annotations

import asyncio
import contextvars
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.agentfile import AgentFileError, read_agent_file
from plait.errors import ConfigError
from plait.testing import ai, call, scripted

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


@plait.tool(run_in_thread=False)
def inline_where() -> str:
    """The thread the call runs in, and the caller's request id."""
    return f"{threading.get_ident()} {request_id.get()}"


@plait.tool
def threaded_where() -> str:
    """The thread the call runs in, and the caller's request id."""
    return f"{threading.get_ident()} {request_id.get()}"


def _agent() -> plait.Agent:
    return plait.create_agent(
        scripted(ai("", call("inline_where"), call("threaded_where")), "done"),
        tools=[inline_where, threaded_where],
    )


def _answers(result: plait.AgentResult) -> tuple[list[str], list[str]]:
    inline, threaded = result.messages[2], result.messages[3]
    assert (inline.name, threaded.name) == ("inline_where", "threaded_where")
    return inline.text.split(), threaded.text.split()


@pytest.mark.parametrize("how", ["ainvoke", "astream"])
def test_async_runs_call_it_on_the_event_loop_thread_and_the_default_off_it(how: str) -> None:
    async def main() -> tuple[int, plait.AgentResult]:
        request_id.set("req-7")
        agent = _agent()
        if how == "ainvoke":
            return threading.get_ident(), await agent.ainvoke("go")
        stream = agent.astream("go")
        async for _ in stream:
            pass
        return threading.get_ident(), stream.result

    loop_thread, result = asyncio.run(main())
    (inline_thread, inline_seen), (threaded_thread, threaded_seen) = _answers(result)
    assert int(inline_thread) == loop_thread
    assert int(threaded_thread) != loop_thread
    assert inline_seen == threaded_seen == "req-7"  # the caller's context either way
    assert result.text == "done"


def test_invoke_calls_it_on_the_callers_thread_even_beside_a_tool_with_a_timeout() -> None:
    @plait.tool(timeout=5)
    def timed_where() -> str:
        """The thread the call runs in."""
        return str(threading.get_ident())

    agent = plait.create_agent(
        scripted(ai("", call("inline_where"), call("timed_where")), "done"),
        tools=[inline_where, timed_where],
    )
    seen: dict[str, Any] = {}

    def caller() -> None:  # not the main thread, so "the caller's" is not a coincidence
        request_id.set("req-9")
        seen["thread"] = threading.get_ident()
        seen["result"] = agent.invoke("go")

    worker = threading.Thread(target=caller)
    worker.start()
    worker.join(30)
    result = seen["result"]
    inline_thread, inline_seen = result.messages[2].text.split()
    assert int(inline_thread) == seen["thread"]
    assert inline_seen == "req-9"
    assert int(result.messages[3].text) != seen["thread"]  # a timeout needs a thread of its own


def test_an_object_bound_to_the_loop_thread_works_only_inline() -> None:
    """The case the option exists for: a sqlite3 connection may only be used by the thread
    that opened it."""
    holder: dict[str, sqlite3.Connection] = {}

    def count(db: sqlite3.Connection) -> str:
        return str(db.execute("select count(*) from notes").fetchone()[0])

    @plait.tool(run_in_thread=False)
    def count_inline() -> str:
        """How many notes there are."""
        return count(holder["db"])

    @plait.tool
    def count_threaded() -> str:
        """How many notes there are."""
        return count(holder["db"])

    async def main() -> plait.AgentResult:
        holder["db"] = db = sqlite3.connect(":memory:")
        db.executescript("create table notes (text); insert into notes values ('a'), ('b');")
        agent = plait.create_agent(
            scripted(ai("", call("count_inline"), call("count_threaded")), "done"),
            tools=[count_inline, count_threaded],
        )
        try:
            return await agent.ainvoke("go")
        finally:
            db.close()

    result = asyncio.run(main())
    inline, threaded = result.messages[2], result.messages[3]
    assert (inline.text, inline.status) == ("2", "success")
    assert threaded.status == "error"
    assert "SQLite objects created in a thread can only be used in that same thread" in (
        threaded.text
    )


def test_a_tool_raising_is_an_error_message_as_in_a_thread() -> None:
    @plait.tool(run_in_thread=False)
    def broken() -> str:
        """Fails."""
        raise LookupError("no such row")

    @plait.tool(run_in_thread=False)
    def exhausted() -> str:
        """Raises StopIteration, which must not reach the event loop as such."""
        return next(iter([]))

    agent = plait.create_agent(
        scripted(ai("", call("broken"), call("exhausted")), "done"), tools=[broken, exhausted]
    )
    result = asyncio.run(agent.ainvoke("go"))
    assert result.messages[2].status == "error"
    assert "LookupError: no such row" in result.messages[2].text
    assert "the tool raised StopIteration" in result.messages[3].text
    assert result.text == "done"


def test_a_timeout_on_an_inline_sync_tool_is_refused_when_the_tool_is_made() -> None:
    def lookup() -> str:
        """Looks up."""
        return "x"

    with pytest.raises(ConfigError) as info:
        plait.tool(run_in_thread=False, timeout=5)(lookup)
    assert str(info.value) == (
        "tool 'lookup': timeout: expected None with run_in_thread=False, got 5 "
        "(a sync function called in the agent loop's thread cannot be abandoned)"
    )
    with pytest.raises(ConfigError, match=r"^tool 'lookup': timeout: expected None with"):
        plait.Tool("lookup", func=lookup, timeout=1.5, run_in_thread=False)
    with pytest.raises(ValueError, match=r"^tool 'lookup': run_in_thread: expected a bool, got 0$"):
        plait.tool(run_in_thread=0)(lookup)  # type: ignore[call-overload]


def test_the_agents_tool_timeout_is_refused_naming_the_inline_tools() -> None:
    @plait.tool(run_in_thread=False)
    def lookup() -> str:
        """Looks up."""
        return "x"

    with pytest.raises(ConfigError) as info:
        plait.create_agent(scripted("x"), tools=[lookup, threaded_where], tool_timeout=3)
    assert str(info.value) == (
        "tool_timeout: expected None when a sync tool has run_in_thread=False, got 3 "
        "(tool 'lookup' is called in the agent loop's thread, where a call cannot be abandoned)"
    )
    with pytest.raises(ConfigError, match=r"\(tools 'lookup', 'inline_where' are called in"):
        plait.create_agent(scripted("x"), tools=[lookup, inline_where], tool_timeout=3)
    plait.create_agent(scripted("x"), tools=[lookup, inline_where])  # no timeout: fine


def test_the_flag_changes_nothing_for_an_async_tool() -> None:
    @plait.tool(run_in_thread=False, timeout=0.1)
    async def sleepy() -> str:
        """Sleeps too long."""
        await asyncio.sleep(30)
        return "late"

    assert not sleepy.run_in_thread
    agent = plait.create_agent(scripted(ai("", call("sleepy")), "ok"), tools=[sleepy])
    timed_out = asyncio.run(agent.ainvoke("go")).messages[2]
    assert "did not finish within its timeout of 0.1 s" in timed_out.text
    plait.create_agent(scripted("x"), tools=[sleepy], tool_timeout=3)  # accepted


def test_an_agent_files_tool_keeps_its_flag(tmp_path: Path) -> None:
    (tmp_path / "inline_thread_tools.py").write_text(
        "import threading\n\nimport plait\n\n"
        "@plait.tool(run_in_thread=False)\ndef where() -> str:\n"
        '    """The thread the call runs in."""\n'
        "    return str(threading.get_ident())\n"
    )
    path = tmp_path / "agent.toml"
    path.write_text('[agent]\nmodel = "scripted:x"\ntools = ["inline_thread_tools:where"]\n')

    async def main() -> tuple[int, plait.AgentResult]:
        model = scripted(ai("", call("where")), "done")
        agent = read_agent_file(path, model=model).build()
        return threading.get_ident(), await agent.ainvoke("go")

    loop_thread, result = asyncio.run(main())
    assert int(result.messages[2].text) == loop_thread

    path.write_text(path.read_text() + "tool_timeout = 2\n")
    with pytest.raises(AgentFileError, match=r": tool_timeout: expected None when a sync tool"):
        read_agent_file(path).build()
