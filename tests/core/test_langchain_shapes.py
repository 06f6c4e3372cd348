"""LangChain's call shapes work beside plait's own: a result read like a state dict,
``config={"configurable": {"thread_id": ...}}``, ``("user", text)`` pairs and role dicts,
bare model ids, and ``stream(stream_mode=...)`` yielding what LangGraph yields."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

import plait
from plait.errors import ConfigError
from plait.messages import AIMessageChunk, HumanMessage, SystemMessage
from plait.models import init_chat_model
from plait.testing import ai, call, scripted, transcript


@attrs.frozen
class Answer:
    value: int


def test_a_result_reads_like_langchains_state_dict() -> None:
    agent = plait.create_agent(scripted('{"value": 4}'), response_format=Answer)
    result = agent.invoke({"messages": [{"role": "user", "content": "2+2?"}]})
    assert result["messages"] is result.messages
    assert result["messages"][-1].text == '{"value": 4}'
    assert result["structured_response"] == Answer(4)
    assert "__interrupt__" not in result
    assert result.get("__interrupt__") is None
    with pytest.raises(KeyError, match=r"'nope': this result has no such key \(it has: messages"):
        result["nope"]


def test_a_paused_result_has_the_interrupt_under_langgraphs_key() -> None:
    @plait.tool
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted" if plait.interrupt({"confirm": path}) else "kept"

    model = scripted(ai("", call("delete", path="/tmp/x")), "done")
    agent = plait.create_agent(model, [delete], checkpointer="memory")
    config = {"configurable": {"thread_id": "t1"}}
    paused = agent.invoke({"messages": [("user", "clean up")]}, config=config)
    assert "__interrupt__" in paused
    assert paused["__interrupt__"][0].value == {"confirm": "/tmp/x"}
    resumed = agent.invoke(plait.Command(resume=True), config=config)
    assert resumed.thread_id == "t1"
    assert [m.text for m in resumed["messages"] if m.type == "tool"] == ["deleted"]


def test_role_pairs_and_dicts_are_messages() -> None:
    model = scripted("hi")
    agent = plait.create_agent(model)
    result = agent.invoke(
        {"messages": [("system", "Be brief."), ("user", "hello"), {"role": "ai", "content": "?"}]}
    )
    assert transcript(result.messages) == [
        ("system", "Be brief."),
        ("human", "hello"),
        ("ai", "?"),
        ("ai", "hi"),
    ]
    assert isinstance(result.messages[0], SystemMessage)
    single = plait.create_agent(scripted("ok")).invoke(("user", "one message"))
    assert transcript(single.messages) == [("human", "one message"), ("ai", "ok")]
    listed = plait.create_agent(scripted("ok")).invoke([("user", "a"), HumanMessage("b")])
    assert [m.text for m in listed.messages] == ["a", "b", "ok"]


def test_config_carries_the_thread_and_the_recursion_limit() -> None:
    agent = plait.create_agent(scripted("one", "two"), checkpointer="memory")
    agent.invoke("first", config={"configurable": {"thread_id": "abc"}})
    second = agent.invoke("second", config={"configurable": {"thread_id": "abc"}})
    assert [m.text for m in second.messages] == ["first", "one", "second", "two"]
    assert agent.list_threads() == ["abc"]

    loop = scripted(*[ai("", call("noop")) for _ in range(5)])

    @plait.tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    with pytest.raises(plait.errors.RecursionLimitError):
        plait.create_agent(loop, [noop]).invoke("go", config={"recursion_limit": 2})


def test_config_problems_are_one_clear_line() -> None:
    agent = plait.create_agent(scripted("x"), checkpointer="memory")
    cases = [
        ({"callbacks": []}, "config: unknown key 'callbacks' (plait reads 'configurable' and"),
        (
            {"configurable": {"user_id": 1}},
            "config['configurable']: unknown key 'user_id' (plait reads 'thread_id'; other run "
            "values go in context=...",
        ),
        ("t1", "config: expected a mapping like {'configurable': {'thread_id': ...}}, got 't1'"),
    ]
    for config, start in cases:
        with pytest.raises(ConfigError) as info:
            agent.invoke("hi", config=config)  # type: ignore[arg-type]
        assert str(info.value).startswith(start)
    with pytest.raises(ConfigError, match="disagree; give it once"):
        agent.invoke("hi", thread_id="a", config={"configurable": {"thread_id": "b"}})


def test_async_runs_take_config_too() -> None:
    agent = plait.create_agent(scripted("one", "two"), checkpointer="memory")

    async def main() -> list[Any]:
        config = {"configurable": {"thread_id": "x"}}
        await agent.ainvoke("first", config=config)
        return [item async for item in agent.astream("again", config=config, stream_mode="values")]

    values = asyncio.run(main())
    assert [m.text for m in values[-1]["messages"]] == ["first", "one", "again", "two"]


def test_bare_model_ids_name_their_provider() -> None:
    assert repr(init_chat_model("gpt-4o", api_key="k")) == "<OpenAIChatModel openai:gpt-4o>"
    assert repr(init_chat_model("o3-mini", api_key="k")) == "<OpenAIChatModel openai:o3-mini>"
    assert repr(init_chat_model("o1", api_key="k")) == "<OpenAIChatModel openai:o1>"
    claude = init_chat_model("claude-sonnet-4-5", api_key="k")
    assert type(claude).__name__ == "AnthropicChatModel"
    gemini = init_chat_model("gemini-2.5-flash", api_key="k")
    assert type(gemini).__name__ == "GoogleChatModel"
    with pytest.raises(ConfigError) as info:
        plait.create_agent("llama3")
    assert str(info.value) == (
        "model: expected a 'provider:model' id, a bare id whose provider is inferred (gpt-*, "
        "o1*, o3*, o4* for openai, claude-* for anthropic, gemini-* for google) or a ChatModel, "
        "got 'llama3'"
    )


def test_stream_mode_yields_langgraphs_shapes() -> None:
    @plait.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = scripted(ai("", call("add", a=1, b=2)), "It is 3.")
    agent = plait.create_agent(model, [add])
    pairs = list(agent.stream({"messages": [("user", "1+2?")]}, stream_mode="messages"))
    assert all(isinstance(p, tuple) and len(p) == 2 for p in pairs)
    tokens = [t.content for t, meta in pairs if isinstance(t, AIMessageChunk)]
    assert "".join(tokens) == "It is 3."
    assert {meta["langgraph_node"] for _, meta in pairs} >= {"model", "tools"}

    updates = list(plait.create_agent(scripted("hi")).stream("x", stream_mode="updates"))
    assert updates and all(isinstance(u, dict) and len(u) == 1 for u in updates)
    assert list(updates[-1]) == ["model"]

    mixed = plait.create_agent(scripted("hi")).stream("x", stream_mode=["updates", "values"])
    items = list(mixed)
    assert {mode for mode, _ in items} == {"updates", "values"}
    assert mixed.result is not None and mixed.result.text == "hi"

    with pytest.raises(ConfigError, match="give the stream mode once"):
        agent.stream("x", mode="updates", stream_mode="values")  # type: ignore[call-overload]


def test_config_is_the_second_positional_argument_as_in_langgraph() -> None:
    """LangChain's memory docs call ``agent.invoke({"messages": [...]}, {"configurable":
    {"thread_id": "1"}})``: the config as the second positional argument, in every run
    method."""
    agent = plait.create_agent(scripted("one", "two", "three", "four"), checkpointer="memory")
    config = {"configurable": {"thread_id": "1"}, "recursion_limit": 5}
    agent.invoke({"messages": [{"role": "user", "content": "Hi! My name is Bob."}]}, config)
    asyncio.run(agent.ainvoke({"messages": [("user", "And?")]}, config))
    list(agent.stream("More?", config, stream_mode="updates"))

    async def drain() -> None:
        async for _ in agent.astream("Last?", config, stream_mode="values"):
            pass

    asyncio.run(drain())
    assert transcript(agent.get_state("1")["messages"]) == [
        ("human", "Hi! My name is Bob."),
        ("ai", "one"),
        ("human", "And?"),
        ("ai", "two"),
        ("human", "More?"),
        ("ai", "three"),
        ("human", "Last?"),
        ("ai", "four"),
    ]
    with pytest.raises(ConfigError, match="disagree; give it once"):
        agent.invoke("x", config, thread_id="2")


def test_a_hook_returning_langchains_jump_to_key_jumps() -> None:
    """LangChain's middleware docs stop a run with ``return {"messages": [...], "jump_to":
    "end"}``: the jump is taken (the model is not called), sync and async, and
    ``jump_to`` is never saved as a state key."""

    @plait.before_model
    @plait.can_jump_to("end")
    def check_message_limit(state: Any, runtime: Any) -> Any:
        if len(state["messages"]) >= 3:
            return {"messages": [plait.AIMessage("Conversation limit reached.")], "jump_to": "end"}
        return None

    model = scripted("first answer", "never")
    agent = plait.create_agent(model, middleware=[check_message_limit], checkpointer="memory")
    agent.invoke("hi", thread_id="t")
    stopped = agent.invoke("again", thread_id="t")
    assert stopped.text == "Conversation limit reached."
    assert asyncio.run(agent.ainvoke("and?", thread_id="t")).text == ("Conversation limit reached.")
    assert model.calls == 1
    assert "jump_to" not in agent.get_state("t")

    @plait.before_model
    def undeclared(state: Any, runtime: Any) -> Any:
        return {"jump_to": "end"}

    with pytest.raises(ConfigError, match=r"returned jump_to='end' but declares only: none"):
        plait.create_agent(scripted("x"), middleware=[undeclared]).invoke("hi")


def test_middleware_reads_tool_calls_as_langchains_dicts() -> None:
    """LangChain's tool calls are dicts, and its middleware docs read them so:
    ``request.tool_call['name']`` in ``wrap_tool_call``, ``override(tool_call={**call,
    "args": ...})`` to change a call, ``call["name"]`` in ``after_model``, and
    ``response.result`` in ``wrap_model_call``."""
    seen: list[Any] = []

    @plait.after_model
    def look(state: Any, runtime: Any) -> None:
        for tool_call in state["messages"][-1].tool_calls:
            seen.append((tool_call["name"], tool_call.get("type"), "id" in tool_call))

    @plait.wrap_model_call
    def count(request: Any, handler: Any) -> Any:
        response = handler(request)
        seen.append([type(m).__name__ for m in response.result])
        return response

    @plait.wrap_tool_call
    def double(request: Any, handler: Any) -> Any:
        seen.append((request.tool_call["name"], request.tool_call["args"]))
        args = {"a": request.tool_call["args"]["a"] * 2, "b": request.tool_call["args"]["b"]}
        return handler(request.override(tool_call={**request.tool_call, "args": args}))

    @plait.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = scripted(ai("", call("add", id="c1", a=1, b=2)), "done")
    agent = plait.create_agent(model, [add], middleware=[look, count, double])
    result = agent.invoke("1+2?")
    assert transcript(result.messages) == [
        ("human", "1+2?"),
        ("ai", ""),
        ("tool", "4"),
        ("ai", "done"),
    ]
    assert seen == [
        ["AIMessage"],
        ("add", "tool_call", True),
        ("add", {"a": 1, "b": 2}),
        ["AIMessage"],
    ]
    assert result.messages[2].tool_call_id == "c1"
    with pytest.raises(TypeError, match=r"^tool_call: expected a plait.ToolCall or a dict"):
        plait.types.ToolCallRequest(
            result.messages[1].tool_calls[0],
            None,
            {},
            None,  # type: ignore[arg-type]
        ).override(tool_call={"args": {}})


def test_langgraphs_config_where_a_thread_id_goes_is_refused_with_the_fix() -> None:
    """LangGraph's ``agent.get_state(config)``: here the thread id; the config dict is
    refused naming the method and the key to pass, not with "unhashable type: 'dict'"."""
    agent = plait.create_agent(scripted("one"), checkpointer="memory")
    config = {"configurable": {"thread_id": "1"}}
    agent.invoke("hi", config)
    calls = {
        "get_state": lambda: agent.get_state(config),  # type: ignore[arg-type]
        "get_interrupts": lambda: agent.get_interrupts(config),  # type: ignore[arg-type]
        "get_state_history": lambda: agent.get_state_history(config),  # type: ignore[arg-type]
        "update_state": lambda: agent.update_state(config, {}),  # type: ignore[arg-type]
        "fork": lambda: agent.fork(config),  # type: ignore[arg-type]
        "delete_thread": lambda: agent.delete_thread(config),  # type: ignore[arg-type]
    }
    for name, attempt in calls.items():
        with pytest.raises(ConfigError) as info:
            attempt()
        assert str(info.value) == (
            f"{name}: thread_id: expected a thread id, got {{'configurable': {{'thread_id': "
            "'1'}}; pass LangGraph's config['configurable']['thread_id'] instead"
        )
    with pytest.raises(ConfigError, match=r"^thread_id: expected a thread id, got \{"):
        agent.invoke("again", thread_id=config)  # type: ignore[arg-type]
    assert transcript(agent.get_state("1")["messages"]) == [("human", "hi"), ("ai", "one")]


def test_updates_name_the_tools_node_as_langgraph_does() -> None:
    """LangChain's "agent progress" loop (``for step, data in chunk.items()``) reads
    ``model`` then ``tools``: a tool's update is keyed ``"tools"``, sync and async, also for
    a tool the agent does not have and after a resume."""

    @plait.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @plait.tool
    def ask(question: str) -> str:
        """Ask a human."""
        return str(plait.interrupt(question))

    def make() -> plait.Agent:
        model = scripted(ai("", call("add", a=1, b=2), call("nope")), "It is 3.")
        return plait.create_agent(model, [add, ask], checkpointer="memory")

    updates = list(make().stream("1+2?", stream_mode="updates"))
    assert [list(u) for u in updates] == [["model"], ["tools"], ["tools"], ["model"]]
    assert [m.name for u in updates[1:3] for m in u["tools"]["messages"]] == ["add", "nope"]
    assert updates[1]["tools"]["messages"][0].content == "3"

    async def collect() -> list[Any]:
        return [u async for u in make().astream("1+2?", stream_mode=["updates", "values"])]

    pairs = [item for mode, item in asyncio.run(collect()) if mode == "updates"]
    assert [list(u) for u in pairs] == [["model"], ["tools"], ["tools"], ["model"]]

    agent = plait.create_agent(
        scripted(ai("", call("ask", question="ok?")), "thanks"), [ask], checkpointer="memory"
    )
    paused = list(agent.stream("go", thread_id="t", stream_mode="updates"))
    assert [list(u) for u in paused] == [["model"], ["__interrupt__"]]
    resumed = agent.stream(plait.Command(resume="yes"), thread_id="t", stream_mode="updates")
    assert [list(u) for u in resumed] == [["tools"], ["model"]]
    assert list(make().stream("1+2?", mode="updates"))[1].source == "add"  # plait's own form
