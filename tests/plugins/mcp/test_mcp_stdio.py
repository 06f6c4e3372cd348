"""MCP servers over stdio: tools from ``create_agent`` on, answers, errors, the session."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from mcp_servers import demo_stdio, time_server

import plait
from plait.errors import ConfigError
from plait.testing import ai, call, scripted, tool_answers


def make(model: plait.ScriptedChatModel, *servers: dict[str, object], **kw: object) -> plait.Agent:
    return plait.create_agent(model=model, middleware=[("mcp", {"servers": list(servers)})], **kw)


def test_time_server_tools_reach_the_model_with_their_schemas() -> None:
    model = scripted(
        ai("", call("get_current_time", id="c1", timezone="Europe/Paris")), "It is late."
    )
    with make(model, time_server()) as agent:
        result = agent.invoke("What time is it in Paris?")
    sent = {t.name: t for t in model.requests[0].tools}
    assert set(sent) == {"get_current_time", "convert_time"}
    assert sent["get_current_time"].description.startswith("Get current time")
    params = sent["convert_time"].parameters
    assert params["type"] == "object"
    assert params["required"] == ["source_timezone", "time", "target_timezone"]
    answer = tool_answers(result.messages)["c1"]
    assert answer.status == "success"
    assert '"timezone": "Europe/Paris"' in answer.text
    structured = answer.metadata["structured_content"]
    assert structured["timezone"] == "Europe/Paris"
    assert set(structured) == {"timezone", "datetime", "day_of_week", "is_dst"}
    assert answer.metadata["mcp"] == {"server": "time", "tool": "get_current_time"}
    assert result.text == "It is late."


def test_is_error_is_an_error_tool_message_and_the_run_goes_on() -> None:
    model = scripted(ai("", call("get_current_time", id="c1", timezone="Mars/Olympus")), "sorry")
    with make(model, time_server()) as agent:
        result = agent.invoke("time on Mars?")
    answer = tool_answers(result.messages)["c1"]
    assert answer.status == "error"
    assert answer.text.startswith("Error: MCP tool 'get_current_time' of server 'time' failed: ")
    assert "Invalid timezone" in answer.text
    assert result.text == "sorry"
    # the model read the error
    assert any(m.text == answer.text for m in model.requests[1].messages)


def test_images_and_resources_become_content_blocks() -> None:
    model = scripted(ai("", call("picture", id="c1"), call("weather", id="c2", city="Oslo")), "ok")
    with make(model, demo_stdio()) as agent:
        answers = tool_answers(agent.invoke("show me").messages)
    blocks = answers["c1"].content
    assert isinstance(blocks, list)
    assert blocks[0]["type"] == "image"
    assert blocks[0]["source"]["media_type"] == "image/png"
    assert blocks[0]["source"]["type"] == "base64" and blocks[0]["source"]["data"]
    assert blocks[1] == {"type": "text", "text": "hi"}
    assert answers["c1"].metadata["mcp"]["resources"] == [
        {"uri": "file:///notes.txt", "mime_type": "text/plain"}
    ]
    assert answers["c2"].metadata["structured_content"] == {"city": "Oslo", "celsius": 21.5}


def test_a_call_past_its_timeout_is_an_error_naming_the_limit() -> None:
    model = scripted(
        ai("", call("slow", id="c1", seconds=30)),
        ai("", call("echo", id="c2", text="still here")),
        "ok",
    )
    with make(model, demo_stdio(timeout=0.5)) as agent:
        answers = tool_answers(agent.invoke("go").messages)
    assert answers["c1"].status == "error"
    assert "within its timeout of 0.5 s" in answers["c1"].text
    assert answers["c2"].text == "still here"  # the same session goes on


def count_then_answer(messages: list[Any], tools: object) -> plait.AIMessage:
    """A model turn: call ``count`` after the user speaks, then say what it returned."""
    last = messages[-1]
    if isinstance(last, plait.ToolMessage):
        return ai(last.text)
    return ai("", call("count"))


def test_one_session_reused_across_runs_threads_and_the_async_path() -> None:
    model = plait.ScriptedChatModel([count_then_answer] * 20)
    with make(model, demo_stdio()) as agent:
        first = [agent.invoke("count").text for _ in range(2)]
        with ThreadPoolExecutor(4) as pool:
            threaded = list(pool.map(lambda _: agent.invoke("count").text, range(4)))

        async def concurrently() -> list[str]:
            results = await asyncio.gather(*(agent.ainvoke("count") for _ in range(4)))
            return [r.text for r in results]

        gathered = asyncio.run(concurrently())
    assert first == ["1", "2"]
    # one server process counted every call, from every thread and event loop
    assert sorted(int(t) for t in threaded + gathered) == list(range(3, 11))


def test_a_server_crash_mid_call_is_an_error_and_the_next_call_reconnects() -> None:
    model = scripted(
        ai("", call("pid", id="p1")),
        ai("", call("crash", id="c1")),
        ai("", call("pid", id="p2")),
        "done",
    )
    with make(model, demo_stdio()) as agent:
        result = agent.invoke("crash it")
    answers = tool_answers(result.messages)
    assert answers["c1"].status == "error"
    assert (
        "session with MCP server 'demo' was lost during the call of 'crash'" in answers["c1"].text
    )
    assert "restarted for the next call" in answers["c1"].text
    first, second = int(answers["p1"].text), int(answers["p2"].text)
    assert first != second
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)
    assert result.text == "done"


def test_close_ends_the_server_process() -> None:
    model = scripted(ai("", call("pid", id="p1")), "ok")
    agent = make(model, demo_stdio())
    pid = int(tool_answers(agent.invoke("pid").messages)["p1"].text)
    os.kill(pid, 0)  # alive while the agent is open
    agent.close()
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(pid, 0)
            threading.Event().wait(0.05)


def test_prefix_include_and_exclude() -> None:
    model = scripted("ok")
    with make(model, time_server(tool_prefix="time_", include=["convert_time"])) as agent:
        assert [t.name for t in agent.tools] == ["time_convert_time"]
    with make(scripted("ok"), demo_stdio(exclude=["crash", "book"])) as agent:
        names = {t.name for t in agent.tools}
    assert "crash" not in names and "book" not in names and "echo" in names


def test_two_tools_of_one_name_name_both_servers() -> None:
    with pytest.raises(ConfigError) as err:
        make(scripted("ok"), demo_stdio(name="one"), demo_stdio(name="two"))
    assert "servers 'one' and 'two' both have a tool named 'echo'" in str(err.value)
    assert "tool_prefix" in str(err.value)


def test_a_clash_with_the_agents_own_tool_is_a_config_error() -> None:
    @plait.tool
    def echo(text: str) -> str:
        """Mine."""
        return text

    with pytest.raises(ConfigError, match="server 'demo' has a tool named 'echo'"):
        make(scripted("ok"), demo_stdio(), tools=[echo])


def test_unknown_included_tool_lists_the_servers_tools() -> None:
    with pytest.raises(ConfigError, match=r"server 'time' has no tool 'get_time'.*convert_time"):
        make(scripted("ok"), time_server(include=["get_time"]))


def test_a_server_that_cannot_start_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError) as err:
        make(scripted("ok"), {"name": "ghost", "command": "/nonexistent/mcp-server"})
    text = str(err.value)
    assert "MCP server 'ghost' (stdio) cannot be used" in text
    assert "No such file" in text or "not found" in text.lower()


def test_a_server_that_exits_at_once_reports_its_stderr() -> None:
    broken = {
        "name": "broken",
        "command": sys.executable,
        "args": ["-c", "import sys; sys.stderr.write('missing API key\\n'); sys.exit(2)"],
        "connect_timeout": 10,
    }
    with pytest.raises(ConfigError) as err:
        make(scripted("ok"), time_server(), broken)
    text = str(err.value)
    assert "MCP server 'broken' (stdio) cannot be used" in text
    assert "missing API key" in text
    assert "'time'" not in text


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({"name": "x"}, "give either 'command' (stdio) or 'url'"),
        ({"name": "x", "command": "a", "url": "http://h/mcp"}, "not both"),
        (
            {"name": "x", "url": "ftp://h"},
            "plugin 'mcp': option 'servers[0].url': expected an http:// or https:// URL, "
            "got 'ftp://h'",
        ),
        (
            {"name": " ", "command": "a"},
            "plugin 'mcp': option 'servers[0].name': expected a non-empty string, got ' '",
        ),
        ({"name": "x", "command": "a", "headers": {"A": "b"}}, "'headers' are for streamable HTTP"),
        (
            {"name": "x", "command": "a", "timeout": 0},
            "timeout': expected a number > 0 or None, got 0",
        ),
        ({"name": "x", "command": "a", "timeout": "5"}, "timeout"),
        ({"command": "a"}, "name"),
    ],
)
def test_bad_server_options_are_config_errors(server: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError, match="plugin 'mcp'") as err:
        make(scripted("ok"), server)
    assert expected in str(err.value)
    if expected.startswith("plugin"):
        assert str(err.value) == expected


def test_servers_must_be_unique_and_present() -> None:
    with pytest.raises(ConfigError, match="repeated: a"):
        make(scripted("ok"), {"name": "a", "command": "x"}, {"name": "a", "command": "y"})
    with pytest.raises(ConfigError) as err:
        make(scripted("ok"))
    assert str(err.value) == (
        "plugin 'mcp': option 'servers': expected a non-empty list of servers, got []"
    )


def test_an_answer_that_is_not_one_is_worded_like_every_value() -> None:
    from plait_mcp._tools import elicit_result

    with pytest.raises(ValueError) as failure:
        elicit_result("yes")
    assert str(failure.value) == (
        "an answer to an MCP elicitation: expected a mapping of the requested fields, "
        "{'action': ..., 'content': ...}, 'decline', 'cancel' or None, got 'yes'"
    )
