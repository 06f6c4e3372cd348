"""What ``import plait`` costs is paid by every process that builds an agent, so the kernel
imports a module only where a run needs it: an agent built with a tool and middleware,
then run synchronously to its answer, imports none of the modules below; each is imported
by the feature that needs it (a misspelt option's suggestion, a pause, a tool returning
bytes, ``PLAIT_TRACE``, a streamed run, a refused value, a checkpointer or store, a context or state
schema, a served tool, a class's field docstrings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import plait

NOT_FOR_A_PLAIN_RUN = [
    *("base64", "difflib", "hashlib", "logging", "queue", "textwrap"),
    # the kernel's own: checkpointer and store, typed context/state, served tools, streams
    *("plait.checkpoint", "plait.history", "plait.store", "plait._schemas"),
    *("plait._served", "plait._run_streams"),
    # the classes of a streamed run's events, a refused value's problems, a pause, a deletion
    *("plait._stream_event", "plait._problem", "plait._interrupt", "plait._remove"),
]

AGENT_RUN = """
import sys, plait
from plait.messages import AIMessage, ToolCall

@plait.tool
def lookup(city: str) -> str:
    "The weather in a city."
    return "sunny in " + city

model = plait.ScriptedChatModel([AIMessage("", tool_calls=[ToolCall("lookup", {"city": "Oslo"})]),
                                 "it is sunny"])
agent = plait.create_agent(model, tools=[lookup], middleware=[
    ("model_call_limit", {"run_limit": 5}), "model_retry", "tool_retry",
    ("tool_call_limit", {"run_limit": 5})])
result = agent.invoke("weather in Oslo?")
assert result.messages[-1].text == "it is sunny", result.messages
"""
RUN = AGENT_RUN + "print(sorted(set(%r) & set(sys.modules)))\n"


def test_a_plain_run_imports_none_of_the_modules_only_some_features_need() -> None:
    code = RUN % (NOT_FOR_A_PLAIN_RUN,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_each_feature_still_imports_what_it_needs() -> None:
    """The deferred imports happen where they are used: a misspelt option still gets its
    suggestion (difflib), a tool's bytes still become base64 text."""
    with pytest.raises(plait.ConfigError, match="did you mean 'max_retries'"):
        plait.create_agent(
            plait.ScriptedChatModel(["x"]), middleware=[("model_retry", {"max_retry": 1})]
        )

    @plait.tool
    def picture() -> list[dict[str, object]]:
        "A picture."
        return [{"type": "image", "data": b"\x89PNG"}]

    from plait.messages import AIMessage, ToolCall

    model = plait.ScriptedChatModel([AIMessage("", tool_calls=[ToolCall("picture", {})]), "seen"])
    result = plait.create_agent(model, tools=[picture]).invoke("show me")
    shown = next(m for m in result.messages if m.type == "tool")
    assert shown.content == [{"type": "image", "data": "iVBORw=="}]


def test_a_streamed_run_and_a_refused_argument_make_their_classes_where_used() -> None:
    """``StreamEvent`` and ``Problem`` are made on first use, under their public names: a
    plain run made neither, a streamed run yields ``plait.StreamEvent``s, a bad tool
    argument is still reported problem by problem."""
    code = """
import sys, plait
from plait.messages import AIMessage, ToolCall

@plait.tool
def lookup(city: str) -> str:
    "The weather in a city."
    return "sunny in " + city

bad = AIMessage("", tool_calls=[ToolCall("lookup", {"city": 3})])
model = plait.ScriptedChatModel(["plain", bad, "streamed"])
agent = plait.create_agent(model, tools=[lookup])
agent.invoke("hi")
print(sorted({"plait._stream_event", "plait._problem"} & set(sys.modules)))
events = list(agent.stream("hi", mode="updates"))
tool = events[1].data["lookup"]["messages"][0]
print(all(isinstance(e, plait.StreamEvent) for e in events), [e.source for e in events])
print(tool.status, tool.text)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "[]",
        "True ['model', 'lookup', 'model']",
        "error Error: invalid arguments for tool 'lookup': argument 'city': expected a string,"
        " got 3. Call it again with corrected arguments.",
    ], out.stdout


def test_the_persisted_types_converter_is_made_by_the_first_save() -> None:
    """A run that saves nothing makes no converter for messages (cattrs' ``Converter``
    and its hooks); a thread saved with a checkpointer makes it, and reads back."""
    code = """
import plait
from plait import messages
agent = plait.create_agent(plait.ScriptedChatModel(["one"]))
agent.invoke("hi")
print(messages.persisted_converter.cache_info().currsize)
kept = plait.create_agent(plait.ScriptedChatModel(["two"]), checkpointer="memory")
kept.invoke("hi", thread_id="t")
made = messages.persisted_converter
print(made.cache_info().currsize, messages.converter is made())
print([m.text for m in kept.get_state("t")["messages"]])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["0", "1 True", "['hi', 'two']"], out.stdout


PAUSE = """
import sys, plait
from plait.messages import AIMessage, ToolCall

@plait.tool
def ask(q: str) -> str:
    "Ask the user."
    return "user said " + str(plait.interrupt(q))

script = [AIMessage("", tool_calls=[ToolCall("ask", {"q": "ok?"}, "c1")]), "done"]
model = plait.ScriptedChatModel(script[1:] if sys.argv[2] == "resume" else script)
agent = plait.create_agent(model, tools=[ask], checkpointer="sqlite:///" + sys.argv[1])
if sys.argv[2] == "pause":
    paused = agent.invoke("go", thread_id="t").interrupts
    print(isinstance(paused[0], plait.Interrupt), [i.value for i in paused])
else:
    print("plait._interrupt" in sys.modules, [i.value for i in agent.get_interrupts("t")])
    print([m.text for m in agent.invoke(plait.Command(resume="yes"), thread_id="t").messages])
"""


def test_a_pause_is_saved_and_read_back_by_a_fresh_process(tmp_path: Path) -> None:
    """``Interrupt`` is made on first use: a run that pauses saves its question, and a
    new process that has made no ``Interrupt`` yet reads it back and resumes."""
    db = str(tmp_path / "threads.db")

    def run(step: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", PAUSE, db, step], capture_output=True, text=True, check=True
        )
        return out.stdout.splitlines()

    assert run("pause") == ["True ['ok?']"]
    assert run("resume") == ["False ['ok?']", "['go', '', 'user said yes', 'done']"]


PII_RUN = """
import sys, plait
agent = plait.create_agent(plait.ScriptedChatModel(["noted"]), middleware=[
    ("pii", {"pii_type": "email", "strategy": "redact"})])
result = agent.invoke("write to ann@example.com")
print(sorted(m for m in sys.modules if m.startswith("plait_pii.")))
print(result.messages[0].text)
model = plait.ScriptedChatModel(["noted"])
kept = plait.create_agent(model, middleware=[
    ("pii", {"pii_type": "email", "strategy": "pseudonymize"})])
kept.invoke("write to ann@example.com")
print(model.requests[0].messages[0].text)
"""


def test_an_agent_that_redacts_imports_only_the_pii_modules_it_uses() -> None:
    """Building and running an agent that redacts emails imports pii's detectors and its
    middleware only: the pseudonymize strategy's modules, the tool-argument walker and
    the installed-detector lookup are imported by the first agent that needs them (here
    the pseudonymizing one, whose model still sees the address numbered)."""
    out = subprocess.run(
        [sys.executable, "-c", PII_RUN], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines() == [
        "['plait_pii._decoded', 'plait_pii._detectors', 'plait_pii.middleware']",
        "write to [REDACTED_EMAIL]",
        "write to <EMAIL_1>",
    ], out.stdout


def test_a_deleted_message_is_made_where_used() -> None:
    """``RemoveMessage`` is made on first use, under its public names: a run whose hook
    deletes a message makes it (``plait.RemoveMessage`` is ``plait.messages.RemoveMessage``)
    and the message is gone; ``REMOVE_ALL`` still clears the thread; what is no message is
    still refused in the same words."""
    code = """
import sys, plait
from plait import messages

print("plait._remove" in sys.modules)

@plait.before_model
def trim(state):
    first = state["messages"][0]
    return {"messages": messages.RemoveMessage(first.id)} if len(state["messages"]) > 2 else None

agent = plait.create_agent(plait.ScriptedChatModel(["one", "two"]), middleware=[trim],
                           checkpointer="memory")
agent.invoke("a", thread_id="t")
print([m.text for m in agent.invoke("b", thread_id="t").messages])
print(plait.RemoveMessage is messages.RemoveMessage, repr(plait.RemoveMessage("x")))

@plait.before_model
def clear(state):
    return {"messages": [plait.RemoveMessage(messages.REMOVE_ALL), plait.HumanMessage("only")]}

print([m.text for m in plait.create_agent(plait.ScriptedChatModel(["ok"]),
                                          middleware=[clear]).invoke("x").messages])

@plait.before_model
def bad(state):
    return {"messages": 3}

try:
    plait.create_agent(plait.ScriptedChatModel(["no"]), middleware=[bad]).invoke("x")
except TypeError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[:4] == [
        "False",
        "['one', 'b', 'two']",
        "True RemoveMessage(id='x')",
        "['only', 'ok']",
    ], out.stdout
    assert "'messages': expected a message or a list of messages, got 3" in lines[4], out.stdout


def test_a_response_s_field_types_still_resolve() -> None:
    """``ModelResponse`` names ``RemoveMessage`` through ``plait.messages``, so its field
    types resolve as they did when the class was made at import."""
    import typing
    from collections.abc import Sequence

    from plait.messages import Message, RemoveMessage
    from plait.types import ModelResponse

    hints = typing.get_type_hints(ModelResponse)
    assert hints["messages"] == Sequence[Message | RemoveMessage]


def test_an_agent_of_the_built_in_middleware_makes_no_plugin_manager() -> None:
    """Pluggy's manager (reading every spec) is made by the first middleware it must
    check, not by an agent of the built-ins."""
    code = (
        "import plait\n"
        "from plait import _registry\n"
        "plait.create_agent(plait.ScriptedChatModel(['ok']), middleware=[\n"
        "    ('model_call_limit', {'run_limit': 5}), 'model_retry', 'tool_retry',\n"
        "    ('tool_call_limit', {'run_limit': 5}), ('pii', {'pii_type': 'email'})])\n"
        "print(_registry._checker.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_an_agent_built_and_run_compiles_no_repr_eq_or_hash() -> None:
    """plait's classes (``plait.lazy.frozen``) and the middleware's compile their
    ``__repr__``, ``__eq__`` and ``__hash__`` where first used: building and running the
    agent above compiles none; the first ``repr`` and ``==`` of a tool call compile its
    class's, once (``__hash__`` with ``__eq__``, as attrs makes them together)."""
    count = """
import builtins
compiled = []
real = builtins.compile
def compile(source, filename, *args, **kwargs):
    if isinstance(source, str) and "plait" in filename:  # attrs names the class compiled for
        compiled.extend(n for n in ("__repr__", "__eq__", "__hash__") if "def " + n in source)
    return real(source, filename, *args, **kwargs)
builtins.compile = compile
"""
    check = """
print(compiled)
call = result.messages[1].tool_calls[0]
print(repr(call), compiled)
print(call == ToolCall("lookup", {"city": "Oslo"}, id=call.id), compiled)
print(repr(call) == repr(call), call != call, compiled)
"""
    code = count + AGENT_RUN + check
    # with no compiled methods kept from an earlier process (plait._attrs_compiled), each
    # one made is compiled here, where the test sees it
    env = {**os.environ, "PLAIT_NO_CACHE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    lines = out.stdout.splitlines()
    made_id = lines[1].split("id='")[1].split("'")[0]
    assert lines == [
        "[]",
        f"ToolCall(name='lookup', args={{'city': 'Oslo'}}, id='{made_id}', error=None)"
        " ['__repr__']",
        "True ['__repr__', '__eq__', '__hash__']",
        "True False ['__repr__', '__eq__', '__hash__']",
    ], out.stdout
