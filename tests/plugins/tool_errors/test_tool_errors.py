"""``tool_errors``: the message a tool's exception becomes, per type, with or without its
traceback, or a stopped run; LangChain's ``on_error`` form; what it leaves alone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import plait
from plait.errors import ConfigError, ToolCallFailedError
from plait.messages import ToolMessage
from plait.testing import FakeSleeper, ai, call, tool_answers
from plait.types import Command, ToolCallRequest
from plait_tool_errors import ToolErrorMiddleware
from plait_tool_retry import ToolRetryMiddleware


class Unavailable(ConnectionError):
    """A service the tool depends on is down."""


def failing(name: str, error: Exception) -> plait.Tool:
    def run(key: str) -> str:
        raise error

    run.__name__ = name
    run.__doc__ = f"The {name} tool."
    return plait.tool(run)


def script(*names: str) -> list[Any]:
    calls = [call(name, id=f"c{i}", key="k") for i, name in enumerate(names, 1)]
    return [ai("", *calls), "done"]


def test_a_template_per_exception_type_the_most_specific_class_wins(make_agent: Any) -> None:
    middleware = ToolErrorMiddleware(
        messages={
            LookupError: "{tool} found nothing ({error_type})",
            KeyError: "{tool}: no record {error}; list the records first",
        }
    )
    tools = [failing("lookup", KeyError("k")), failing("index", IndexError("out of range"))]
    agent = make_agent(script("lookup", "index"), tools=tools, middleware=[middleware])
    answers = tool_answers(agent.invoke("go").messages)
    assert answers["c1"].text == "lookup: no record 'k'; list the records first"
    assert answers["c2"].text == "index found nothing (IndexError)"
    assert {a.status for a in answers.values()} == {"error"}
    assert answers["c1"].metadata["tool_errors"] == {"error_type": "KeyError"}
    # the model read them and carried on
    assert agent.model.requests[1].messages[-1].text == "index found nothing (IndexError)"


def test_other_exceptions_keep_plaits_message_unless_a_default_is_given(
    make_agent: Any,
) -> None:
    tools = [failing("fetch", TimeoutError("read timed out"))]
    middleware = ToolErrorMiddleware(messages={KeyError: "x"})
    answer = make_agent(script("fetch"), tools=tools, middleware=[middleware]).invoke("go")
    assert answer.messages[2].text == (
        "Error: tool 'fetch' raised TimeoutError: read timed out. Call it again only if "
        "something you can change caused it, or take another approach."
    )
    middleware = ToolErrorMiddleware(default="{tool} is unavailable, answer without it")
    answer = make_agent(script("fetch"), tools=tools, middleware=[middleware]).invoke("go")
    assert answer.messages[2].text == "fetch is unavailable, answer without it"


def test_the_traceback_shows_the_tools_frames_not_plaits(make_agent: Any) -> None:
    def parse(key: str) -> str:
        """Parse a record."""
        return {"a": "1"}[key]

    agent = make_agent(
        script("parse"), tools=[plait.tool(parse)], middleware=[ToolErrorMiddleware(traceback=True)]
    )
    text = agent.invoke("go").messages[2].text
    head, trace = text.split("\n\nTraceback (most recent call last):\n")
    assert head.startswith("Error: tool 'parse' raised KeyError: 'k'.")
    assert 'return {"a": "1"}[key]' in trace
    assert ", in parse\n" in trace
    assert trace.endswith("KeyError: 'k'")
    assert "plait/" not in trace  # the kernel and the hooks around the tool are left out


def test_raise_stops_the_run_with_the_tool_error_as_cause(make_agent: Any) -> None:
    middleware = ToolErrorMiddleware(messages={PermissionError: "raise"}, default="{error}")
    agent = make_agent(
        script("delete"),
        tools=[failing("delete", PermissionError("read-only"))],
        middleware=[middleware],
    )
    with pytest.raises(ToolCallFailedError) as raised:
        agent.invoke("go", thread_id="t")
    assert str(raised.value) == "tool 'delete' failed with PermissionError: read-only"
    assert isinstance(raised.value.__cause__, PermissionError)
    assert agent.model.calls == 1
    state = agent.get_state("t")
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool"]


def test_langchains_on_error_returns_the_content_or_none_to_stop(make_agent: Any) -> None:
    seen: list[tuple[str, str]] = []

    def on_error(exc: Exception, request: ToolCallRequest) -> str | None:
        seen.append((type(exc).__name__, request.tool_call.name))
        if isinstance(exc, ValueError):
            return f"`{request.tool_call.name}` failed; fix the input and retry."
        return None

    tools = [failing("parse", ValueError("bad")), failing("send", OSError("down"))]
    agent = make_agent(script("parse"), tools=tools, middleware=[ToolErrorMiddleware(on_error)])
    assert agent.invoke("go").messages[2].text == "`parse` failed; fix the input and retry."
    agent = make_agent(script("send"), tools=tools, middleware=[ToolErrorMiddleware(on_error)])
    with pytest.raises(ToolCallFailedError, match="tool 'send' failed with OSError: down"):
        agent.invoke("go")
    assert seen == [("ValueError", "parse"), ("OSError", "send")]


def test_aon_error_answers_on_the_async_path_and_is_refused_on_the_sync_one(
    make_agent: Any,
) -> None:
    async def aon_error(exc: Exception, request: ToolCallRequest) -> list[Any]:
        await asyncio.sleep(0)
        return [{"type": "text", "text": f"async: {exc}"}]

    tools = [failing("fetch", Unavailable("503"))]
    agent = make_agent(
        script("fetch"), tools=tools, middleware=[ToolErrorMiddleware(aon_error=aon_error)]
    )
    answer = asyncio.run(agent.ainvoke("go")).messages[2]
    assert answer.content == [{"type": "text", "text": "async: 503"}]
    assert answer.status == "error"
    agent = make_agent(
        script("fetch"), tools=tools, middleware=[ToolErrorMiddleware(aon_error=aon_error)]
    )
    with pytest.raises(ConfigError, match="only aon_error is given"):
        agent.invoke("go")


def test_only_the_listed_tools_are_handled(make_agent: Any) -> None:
    tools = [failing("fetch", OSError("a")), failing("save", OSError("b"))]
    middleware = ToolErrorMiddleware(default="handled: {error}", tools=["fetch"])
    answers = tool_answers(
        make_agent(script("fetch", "save"), tools=tools, middleware=[middleware])
        .invoke("go")
        .messages
    )
    assert answers["c1"].text == "handled: a"
    assert answers["c2"].text.startswith("Error: tool 'save' raised OSError: b.")


def test_argument_errors_and_middleware_bugs_are_not_the_tools_errors(make_agent: Any) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    handler = ToolErrorMiddleware(default="handled")
    agent = make_agent(
        [ai("", call("add", id="c1", a="x", b=1)), "done"],
        tools=[plait.tool(add)],
        middleware=[handler],
    )
    assert "invalid arguments for tool 'add'" in agent.invoke("go").messages[2].text

    class Buggy(plait.Middleware):
        def wrap_tool_call(
            self,
            request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], ToolMessage | Command],
        ) -> ToolMessage | Command:
            raise RuntimeError("bug in my middleware")

    agent = make_agent(
        [ai("", call("add", id="c1", a=1, b=2)), "done"],
        tools=[plait.tool(add)],
        middleware=[handler, Buggy()],  # Buggy runs inside tool_errors
    )
    with pytest.raises(RuntimeError, match="bug in my middleware"):
        agent.invoke("go")


def test_errors_tool_retry_does_not_retry_reach_it(make_agent: Any) -> None:
    sleeper = FakeSleeper()
    retry = ToolRetryMiddleware(sleep=sleeper, asleep=sleeper.asleep, jitter=False)
    handler = ToolErrorMiddleware(messages={KeyError: "no record {error}"})
    agent = make_agent(
        script("lookup"), tools=[failing("lookup", KeyError("k"))], middleware=[handler, retry]
    )
    assert agent.invoke("go").messages[2].text == "no record 'k'"
    assert sleeper.delays == []  # a KeyError is not retried


def test_by_name_with_exception_classes_named_as_in_an_agent_file(make_agent: Any) -> None:
    options = {
        "messages": {"builtins:KeyError": "missing {error}", "builtins:OSError": "raise"},
        "traceback": False,
    }
    agent = make_agent(
        script("lookup"),
        tools=[failing("lookup", KeyError("k"))],
        middleware=[("tool_errors", options)],
    )
    assert agent.invoke("go").messages[2].text == "missing 'k'"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"messages": {"builtins:KeyError": "{tool} {args}"}},
            "option 'messages': KeyError: expected 'raise' or a template using only {tool}, "
            "{error} and {error_type}, got '{tool} {args}' ({args} is not one of them)",
        ),
        (
            {"messages": {"builtins:KeyError": 3}},
            "option \"messages['builtins:KeyError']\": expected a string, got 3",
        ),
        (
            {"messages": {"builtins:len": "x"}},
            "option \"messages['builtins:len']\": expected a subclass of Exception or a "
            "'module:attr' string naming one, got 'builtins:len' "
            "(it names <built-in function len>)",
        ),
        ({"default": "{error"}, "option 'default': expected 'raise' or a template"),
        ({"traceback": "yes"}, "option 'traceback': expected a bool, got 'yes'"),
        ({"tools": "fetch"}, "option 'tools': expected a list or None, got 'fetch'"),
        ({"on_error": 3}, "option 'on_error'"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent([], middleware=[("tool_errors", options)])
    assert str(raised.value).startswith("plugin 'tool_errors': ")
    assert message in str(raised.value)


def test_a_handler_and_templates_together_are_refused(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        ToolErrorMiddleware(lambda exc, request: "x", default="y")
    assert str(raised.value) == (
        "ToolErrorMiddleware: expected on_error/aon_error or messages/default, got both"
    )


def test_an_unknown_tool_name_fails_at_create_agent(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent(
            [],
            tools=[failing("fetch", OSError())],
            middleware=[ToolErrorMiddleware(tools=["fech"])],
        )
    assert str(raised.value) == (
        "plugin 'tool_errors': option 'tools' names a tool the agent does not have: 'fech' "
        "(did you mean 'fetch'?); the agent's tools are: fetch"
    )
