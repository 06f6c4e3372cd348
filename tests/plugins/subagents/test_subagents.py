"""The ``subagents`` middleware: the ``task`` tool, its sub-agents, failures, usage,
concurrency, interrupts passed through to the main agent's caller, and build errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import plait
from plait.errors import CheckpointerRequiredError, ConfigError, ProviderError
from plait.messages import AIMessage, HumanMessage, ToolMessage, Usage
from plait.models import OPTIONAL_MODEL_FORMS
from plait.testing import ai, call, scripted, transcript
from plait_subagents import (
    GENERAL_PURPOSE,
    SubAgent,
    SubAgentInterruptError,
    SubAgentMiddleware,
)


def search(query: str) -> str:
    """Search the web.

    Args:
        query: what to look for.
    """
    return f"results for {query}"


def fetch(url: str) -> str:
    """Fetch a page."""
    return f"page {url}"


def send_email(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def delegate(*calls: tuple[str, str], text: str = "", first: int = 0) -> AIMessage:
    """An AI message calling ``task`` once per ``(subagent_type, description)``, with call
    ids ``task_<first>``, ``task_<first + 1>``…"""
    return ai(
        text,
        *(
            call("task", id=f"task_{n}", description=description, subagent_type=name)
            for n, (name, description) in enumerate(calls, first)
        ),
    )


def task_thread(messages: list[Any], call_id: str, parent: str = "t") -> str:
    """The sub-agent thread of the ``task`` call ``call_id``: ``<parent>/task/<AI message
    id>/<call id>``."""
    [message] = [
        m for m in messages if isinstance(m, AIMessage) and call_id in {c.id for c in m.tool_calls}
    ]
    return f"{parent}/task/{message.id}/{call_id}"


def tool_messages(result: Any) -> list[ToolMessage]:
    return [m for m in result.messages if isinstance(m, ToolMessage)]


def researcher(model: Any, **fields: Any) -> SubAgent:
    return SubAgent(
        name="researcher",
        description="Finds facts on the web.",
        system_prompt="You research.",
        model=model,
        **fields,
    )


# -- the tool ---------------------------------------------------------------------------------


def test_task_tool_schema_and_description_list_the_sub_agents(make_agent: Any) -> None:
    agent = make_agent(
        ["ok"],
        tools=[search],
        middleware=[SubAgentMiddleware(subagents=[researcher(scripted())])],
    )
    task = agent.tools_by_name["task"]
    assert task.parameters["required"] == ["description", "subagent_type"]
    assert set(task.parameters["properties"]) == {"description", "subagent_type"}
    assert "runtime" not in task.parameters["properties"]
    assert (
        "does not see this conversation"
        in (task.parameters["properties"]["description"]["description"])
    )
    assert f"- {GENERAL_PURPOSE}: A general-purpose agent" in task.description
    assert "- researcher: Finds facts on the web." in task.description
    assert "several times in one message" in task.description
    assert task.is_async


def test_task_description_override_fills_in_the_available_agents(make_agent: Any) -> None:
    middleware = SubAgentMiddleware(
        subagents=[researcher(scripted())],
        task_description="Hand off work. Agents:\n{available_agents}",
    )
    agent = make_agent(["ok"], middleware=[middleware])
    assert agent.tools_by_name["task"].description.startswith("Hand off work. Agents:\n- ")
    assert "- researcher: Finds facts on the web." in agent.tools_by_name["task"].description


def test_system_prompt_section_is_added_to_the_main_agent_only(make_agent: Any) -> None:
    main = scripted(delegate((GENERAL_PURPOSE, "look it up")), "done")
    sub = scripted("found it")
    agent = make_agent(
        main, system_prompt="You are the boss.", middleware=[SubAgentMiddleware(default_model=sub)]
    )
    agent.invoke("go", thread_id="t")
    prompt = main.requests[0].system_prompt
    assert prompt is not None and prompt.startswith(
        "You are the boss.\n\n## Delegating with `task`"
    )
    assert sub.requests[0].system_prompt == "You are the boss."

    quiet = scripted("hello")
    make_agent(
        quiet,
        system_prompt="You are the boss.",
        middleware=[SubAgentMiddleware(system_prompt=None)],
    ).invoke("hi")
    assert quiet.requests[0].system_prompt == "You are the boss."


# -- delegation -------------------------------------------------------------------------------


def test_sub_agent_gets_a_fresh_context_and_returns_only_its_final_answer(
    make_agent: Any,
) -> None:
    sub = scripted(ai("", call("search", query="plait")), "plait is an agent framework")
    main = scripted("hello", delegate(("researcher", "What is plait? One sentence.")), "done")
    agent = make_agent(
        main, tools=[search], middleware=[SubAgentMiddleware(subagents=[researcher(sub)])]
    )
    agent.invoke("hi", thread_id="t")
    result = agent.invoke("research plait", thread_id="t")

    first = sub.requests[0]
    assert [type(m) for m in first.messages] == [HumanMessage]
    assert first.messages[0].text == "What is plait? One sentence."
    assert first.system_prompt == "You research."
    assert first.tool_names == ["search"]
    # The sub-agent's own tool work stays in its thread; only the final text comes back.
    [answer] = tool_messages(result)
    assert answer.content == "plait is an agent framework"
    assert answer.name == "task" and answer.tool_call_id == "task_0"
    assert answer.status == "success"
    assert "results for plait" not in str(transcript(result.messages))
    assert result.text == "done"
    meta = answer.metadata["subagents"]
    assert meta["subagent_type"] == "researcher"
    assert meta["thread_id"] == task_thread(result.messages, "task_0")
    sub_state = agent.get_state(meta["thread_id"])
    assert transcript(sub_state["messages"])[-2:] == [
        ("tool", "results for plait"),
        ("ai", "plait is an agent framework"),
    ]


def test_a_call_id_used_again_in_a_later_turn_gets_a_new_sub_agent_run(make_agent: Any) -> None:
    # Some servers number tool calls afresh each turn ("call_0" every time).
    sub = scripted("first answer", "second answer")
    main = scripted(
        delegate(("researcher", "one")), "ok", delegate(("researcher", "two")), "ok again"
    )
    agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=[researcher(sub)])])
    agent.invoke("go", thread_id="t")
    result = agent.invoke("more", thread_id="t")
    assert [m.content for m in tool_messages(result)] == ["first answer", "second answer"]
    assert [[m.text for m in r.messages] for r in sub.requests] == [["one"], ["two"]]


def test_general_purpose_inherits_model_prompt_and_tools_minus_task(make_agent: Any) -> None:
    # One model for both: the general-purpose sub-agent's call is the main model's second.
    model = scripted(delegate((GENERAL_PURPOSE, "summarise x")), "x is y", "done")
    agent = make_agent(
        model,
        tools=[search, fetch],
        system_prompt="Be precise.",
        middleware=["todo_list", SubAgentMiddleware()],
    )
    result = agent.invoke("go", thread_id="t")
    sub_request = model.requests[1]
    assert [m.text for m in sub_request.messages] == ["summarise x"]
    assert sub_request.system_prompt == "Be precise."
    # The tools the main agent was given; not task, nor another middleware's write_todos.
    assert sub_request.tool_names == ["search", "fetch"]
    assert tool_messages(result)[0].content == "x is y"


def test_a_spec_named_general_purpose_replaces_the_built_in_one(make_agent: Any) -> None:
    sub = scripted("custom gp")
    spec = SubAgent(
        name=GENERAL_PURPOSE, description="My own.", system_prompt="Mine.", model=sub, tools=[]
    )
    main = scripted(delegate((GENERAL_PURPOSE, "do it")), "done")
    agent = make_agent(main, tools=[search], middleware=[SubAgentMiddleware(subagents=[spec])])
    description = agent.tools_by_name["task"].description
    assert description.count(f"- {GENERAL_PURPOSE}:") == 1
    assert f"- {GENERAL_PURPOSE}: My own." in description
    result = agent.invoke("go", thread_id="t")
    assert tool_messages(result)[0].content == "custom gp"
    assert sub.requests[0].system_prompt == "Mine." and sub.requests[0].tool_names == []


def test_defaults_apply_to_specs_without_their_own(make_agent: Any) -> None:
    sub = scripted("a", "b")

    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    middleware = SubAgentMiddleware(
        default_model=sub,
        default_tools=["fetch", lookup],
        subagents=[SubAgent(name="helper", description="Helps.", system_prompt="Help.")],
    )
    main = scripted(
        delegate(("helper", "one")), delegate((GENERAL_PURPOSE, "two"), first=1), "done"
    )
    agent = make_agent(main, tools=[search, fetch], middleware=[middleware])
    agent.invoke("go", thread_id="t")
    assert [r.tool_names for r in sub.requests] == [["fetch", "lookup"], ["fetch", "lookup"]]
    assert [r.system_prompt for r in sub.requests] == ["Help.", None]


def test_custom_spec_with_own_model_tools_and_middleware_by_name(make_agent: Any) -> None:
    sub = scripted(
        ai("", call("search", query="a", id="s1"), call("search", query="b", id="s2")),
        lambda messages, tools: ai(" | ".join(m.text for m in messages[2:])),
    )
    spec = researcher(
        sub,
        tools=["search"],
        middleware=[("tool_call_limit", {"tool_name": "search", "run_limit": 1})],
    )
    main = scripted(delegate(("researcher", "two searches")), "done")
    agent = make_agent(
        main, tools=[search, fetch], middleware=[SubAgentMiddleware(subagents=[spec])]
    )
    result = agent.invoke("go", thread_id="t")
    answer = tool_messages(result)[0].content
    assert "results for a" in answer
    assert "results for b" not in answer  # the limit blocked the second search
    assert "tool call limit exceeded" in answer
    assert sub.requests[0].tool_names == ["search"]


def test_spec_tools_may_be_tool_objects_and_functions(make_agent: Any) -> None:
    sub = scripted(ai("", call("lookup", term="z")), "z found")

    @plait.tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return f"{term}!"

    spec = researcher(sub, tools=[lookup, fetch])
    main = scripted(delegate(("researcher", "find z")), "done")
    agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=[spec])])
    agent.invoke("go", thread_id="t")
    assert sub.requests[0].tool_names == ["lookup", "fetch"]
    assert sub.requests[1].messages[-1].text == "z!"


def test_prebuilt_agent_runs_as_it_is(make_agent: Any) -> None:
    own = scripted("prebuilt answer")
    prebuilt = plait.create_agent(own, [fetch], system_prompt="I am prebuilt.")
    main = scripted(delegate(("coder", "write code")), "done")
    middleware = (
        "subagents",
        {"subagents": [{"name": "coder", "description": "Writes code.", "agent": prebuilt}]},
    )
    agent = make_agent(main, tools=[search], middleware=[middleware])
    assert "- coder: Writes code." in agent.tools_by_name["task"].description
    result = agent.invoke("go", thread_id="t")
    assert tool_messages(result)[0].content == "prebuilt answer"
    assert own.requests[0].system_prompt == "I am prebuilt."
    assert own.requests[0].tool_names == ["fetch"]
    assert [m.text for m in own.requests[0].messages] == ["write code"]


def test_unknown_subagent_type_is_an_error_listing_the_available_ones(make_agent: Any) -> None:
    main = scripted(delegate(("writer", "write")), "sorry")
    agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=[researcher(scripted())])])
    result = agent.invoke("go", thread_id="t")
    [error] = tool_messages(result)
    assert error.status == "error"
    assert error.content == (
        "Error: there is no sub-agent named 'writer'. The available sub-agents are: "
        "general-purpose, researcher. Call task again with one of them as subagent_type."
    )
    assert result.text == "sorry"


@pytest.mark.parametrize(
    ("responses", "expected"),
    [
        (
            [ProviderError("overloaded", status_code=529)],
            "failed: ProviderError: overloaded.",
        ),
        (
            [lambda messages, tools: ai("", call("fetch", url="x"))] * 30,
            "failed: RecursionLimitError: the run reached its recursion limit of 25",
        ),
    ],
    ids=["provider-error", "recursion-limit"],
)
def test_a_failing_sub_agent_is_an_error_message_and_the_run_goes_on(
    make_agent: Any, responses: list[Any], expected: str
) -> None:
    main = scripted(delegate(("researcher", "dig")), "I will do it myself")
    spec = researcher(scripted(*responses), tools=["fetch"])
    agent = make_agent(main, tools=[fetch], middleware=[SubAgentMiddleware(subagents=[spec])])
    result = agent.invoke("go", thread_id="t")
    [error] = tool_messages(result)
    assert error.status == "error"
    assert error.content.startswith(f"Error: sub-agent 'researcher' {expected}")
    assert "The task was not completed" in error.content
    assert result.text == "I will do it myself"


def test_an_error_ending_in_a_full_stop_is_not_given_a_second_one(make_agent: Any) -> None:
    main = scripted(delegate(("researcher", "dig")), "I will do it myself")
    spec = researcher(scripted(ProviderError("Rate limited. Try later.")), tools=["fetch"])
    agent = make_agent(main, tools=[fetch], middleware=[SubAgentMiddleware(subagents=[spec])])
    [error] = tool_messages(agent.invoke("go", thread_id="t"))
    assert error.content == (
        "Error: sub-agent 'researcher' failed: ProviderError: Rate limited. Try later. The task "
        "was not completed; retry it, brief the sub-agent differently, or do it another way."
    )


def test_sub_agent_usage_is_added_to_the_run_usage(make_agent: Any) -> None:
    u = Usage(input_tokens=100, output_tokens=10)
    sub = scripted(
        ai("", call("fetch", url="a"), usage=Usage(input_tokens=7, output_tokens=3)),
        ai("answer", usage=Usage(input_tokens=20, output_tokens=5)),
    )
    main = scripted(
        ai("", call("task", description="d", subagent_type="researcher"), usage=u),
        ai("done", usage=u),
    )
    spec = researcher(sub, tools=["fetch"])
    agent = make_agent(main, tools=[fetch], middleware=[SubAgentMiddleware(subagents=[spec])])
    result = agent.invoke("go", thread_id="t")
    [answer] = tool_messages(result)
    report = answer.metadata["subagents"]["usage"]
    assert (report["input_tokens"], report["output_tokens"]) == (27, 8)
    assert answer.usage is None  # counted once, by the kernel's ledger
    assert result.usage == Usage(input_tokens=227, output_tokens=28)


def test_without_a_checkpointer_tasks_still_run(make_agent: Any) -> None:
    sub = scripted("one", "two")
    main = scripted(delegate(("researcher", "a"), ("researcher", "b")), "done")
    agent = make_agent(
        main, checkpointer=None, middleware=[SubAgentMiddleware(subagents=[researcher(sub)])]
    )
    result = agent.invoke("go")
    assert [m.content for m in tool_messages(result)] == ["one", "two"]
    assert [m.metadata["subagents"]["thread_id"] for m in tool_messages(result)] == [None, None]
    assert [[m.text for m in r.messages] for r in sub.requests] == [["a"], ["b"]]


def test_sub_agent_events_reach_the_main_stream_under_the_task_call_id(
    make_agent: Any,
) -> None:
    def progress(step: str, runtime: plait.ToolRuntime) -> str:
        """Report progress."""
        runtime.stream_writer({"progress": step})
        return "noted"

    sub = scripted(ai("", call("progress", step="half way")), "sub done")
    main = scripted(delegate(("researcher", "work")), "done")
    spec = researcher(sub, tools=[progress])
    agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=[spec])])
    stream = agent.stream("go", thread_id="t", mode=["custom", "updates", "messages", "values"])
    events = list(stream)
    assert stream.result is not None and stream.result.text == "done"
    nested = [e for e in events if e.path]
    assert {e.path for e in nested} == {("task_0",)}
    assert {e.mode for e in nested} == {"custom", "updates", "messages", "values"}
    streamed = [e.data for e in nested if e.mode == "messages" and e.source == "model"]
    assert "".join(chunk.content for chunk in streamed) == "sub done"
    assert [e.data for e in nested if e.mode == "custom"] == [{"progress": "half way"}]
    final = [e for e in nested if e.mode == "updates" and e.source == "model"][-1]
    assert final.data["model"]["messages"][0].text == "sub done"
    # the main run's own events carry no path, and come after the sub-agent's
    assert events[-1].path == () and events[-1].source == "model"


@pytest.mark.parametrize("mode", ["messages", "values", "updates"])
def test_every_stream_mode_carries_the_sub_agents_events_async(make_agent: Any, mode: str) -> None:
    sub = scripted("sub answer", "sub answer")
    main = scripted(delegate(("researcher", "a"), ("researcher", "b")), "done")
    agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=[researcher(sub)])])

    async def scenario() -> list[plait.StreamEvent]:
        stream = agent.astream("go", thread_id="t", mode=mode)
        return [event async for event in stream]

    events = asyncio.run(scenario())
    assert {e.path for e in events} == {(), ("task_0",), ("task_1",)}
    assert {e.mode for e in events} == {mode}
    if mode == "messages":  # the sub-agents' answers, as their model streamed them
        for call_id in ("task_0", "task_1"):
            chunks = [e.data for e in events if e.path == (call_id,) and e.source == "model"]
            assert "".join(c.content for c in chunks) == "sub answer"


def test_a_sub_agent_of_a_sub_agent_has_a_two_step_path(make_agent: Any) -> None:
    inner = SubAgent(
        name="inner", description="Inner.", system_prompt="In.", model=scripted("deep")
    )
    outer = SubAgent(
        name="outer",
        description="Outer.",
        system_prompt="Out.",
        model=scripted(delegate(("inner", "x"), first=5), "outer done"),
        middleware=[SubAgentMiddleware(subagents=[inner])],
    )
    main = scripted(delegate(("outer", "y")), "done")
    agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=[outer])])
    events = list(agent.stream("go", thread_id="t", mode="updates"))
    paths = {e.path for e in events}
    assert ("task_0", "task_5") in paths and ("task_0",) in paths


def test_subagent_type_is_an_enum_of_the_sub_agents(make_agent: Any) -> None:
    agent = make_agent(
        ["hi"], middleware=[SubAgentMiddleware(subagents=[researcher(scripted("x"))])]
    )
    schema = agent.tools_by_name["task"].parameters["properties"]["subagent_type"]
    assert schema["enum"] == [GENERAL_PURPOSE, "researcher"]


def test_the_main_agents_pii_applies_to_a_sub_agent_unless_it_opts_out(
    make_agent: Any,
) -> None:
    def lookup(name: str) -> str:
        """Look a person up."""
        return f"{name}: ann@acme.com"

    pii = ("pii", {"pii_type": "email", "apply_to_tool_results": True})
    for inherit, seen in ((None, "[REDACTED_EMAIL]"), ([], "ann@acme.com")):
        sub = scripted(ai("", call("lookup", name="Ann")), "found")
        spec = researcher(sub, tools=[lookup], inherit=inherit)
        main = scripted(delegate(("researcher", "find Ann")), "done")
        agent = make_agent(
            main, tools=[lookup], middleware=[pii, SubAgentMiddleware(subagents=[spec])]
        )
        assert agent.invoke("go", thread_id="t").text == "done"
        assert sub.requests[1].messages[-1].text == f"Ann: {seen}"


def test_inherit_names_only_what_can_be_inherited(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        make_agent(["hi"], middleware=[("subagents", {"inherit": ["todo_list"]})])
    assert (
        "option 'inherit': expected a list of names among usage_limit, model_call_limit, "
        "pii, otel, human_in_the_loop, got" in str(raised.value)
    )


# -- concurrency ------------------------------------------------------------------------------


def test_several_tasks_in_one_message_run_concurrently_on_the_async_path(
    make_agent: Any,
) -> None:
    async def scenario() -> Any:
        # Both sub-agents wait at a barrier that opens only once both are inside it:
        # run one after the other, the first would time out.
        barrier = asyncio.Barrier(2)

        async def rendezvous(who: str) -> str:
            """Wait for the other sub-agent."""
            await asyncio.wait_for(barrier.wait(), timeout=5)
            return f"{who} met the other"

        def answer(messages: list[Any], tools: Any) -> AIMessage:
            return ai(f"saw: {messages[-1].text}")

        alpha = scripted(ai("", call("rendezvous", who="alpha")), answer)
        beta = scripted(ai("", call("rendezvous", who="beta")), answer)
        specs = [
            SubAgent(name=n, description=n, system_prompt=n, model=m, tools=[rendezvous])
            for n, m in (("alpha", alpha), ("beta", beta))
        ]
        main = scripted(delegate(("alpha", "go"), ("beta", "go")), "done")
        agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=specs)])
        return await asyncio.wait_for(agent.ainvoke("start", thread_id="t"), timeout=20)

    result = asyncio.run(scenario())
    assert [m.content for m in tool_messages(result)] == [
        "saw: alpha met the other",
        "saw: beta met the other",
    ]


# -- interrupts -------------------------------------------------------------------------------


def _mailer_agent(make_agent: Any, sub: Any, main: Any) -> Any:
    spec = SubAgent(
        name="mailer",
        description="Sends mail.",
        system_prompt="You send mail.",
        model=sub,
        tools=["send_email"],
        middleware=[("human_in_the_loop", {"interrupt_on": {"send_email": True}})],
    )
    return make_agent(main, tools=[send_email], middleware=[SubAgentMiddleware(subagents=[spec])])


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_sub_agent_cannot_make_a_call_the_main_agent_reviews_unreviewed(
    make_agent: Any, use_async: bool
) -> None:
    """The main agent's ``human_in_the_loop`` reviews a sub-agent's calls of the tools it
    reviews: the model asked ``general-purpose`` (or a spec given the tool) to send the
    mail it must not send unapproved, and the sub-agent sent it, with no review."""
    sent: list[str] = []

    def send_mail(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    spec = SubAgent(name="mailer", description="Mails.", system_prompt="Mail.", tools=["send_mail"])
    for name in ("general-purpose", "mailer"):
        sent.clear()
        model = scripted(
            delegate((name, "Mail eve@example.com.")),
            ai("", call("send_mail", to="eve@example.com", id="m1")),
            "Mailed.",
            "Done.",
        )
        agent = make_agent(
            model,
            tools=[send_mail],
            middleware=[
                ("human_in_the_loop", {"interrupt_on": {"send_mail": True, "task": False}}),
                SubAgentMiddleware(subagents=[spec]),
            ],
        )
        run = _runner(agent, use_async)
        paused = run("Mail Eve.", thread_id="t")
        [review] = paused.interrupts
        assert review.value["action_requests"][0]["args"] == {"to": "eve@example.com"}
        assert sent == []  # nothing sent before a human answered
        rejected = plait.Command(resume={"decisions": [{"type": "reject", "message": "no"}]})
        assert run(rejected, thread_id="t").text == "Done."
        assert sent == [], name
    # A sub-agent given none of the reviewed tools is built without a review; opting out
    # of the inherited review is explicit.
    quiet = SubAgent(name="quiet", description="Q.", system_prompt="Q.", tools=[])
    opted = SubAgent(
        name="free", description="F.", system_prompt="F.", tools=["send_mail"], inherit=[]
    )
    model = scripted(
        delegate(("free", "Mail eve@example.com.")),
        ai("", call("send_mail", to="eve@example.com", id="m1")),
        "Mailed.",
        "Done.",
    )
    agent = make_agent(
        model,
        tools=[send_mail],
        middleware=[
            ("human_in_the_loop", {"interrupt_on": {"send_mail": True}}),
            SubAgentMiddleware(subagents=[quiet, opted]),
        ],
    )
    assert _runner(agent, use_async)("Mail Eve.", thread_id="t").text == "Done."
    assert sent == ["eve@example.com"]


def _runner(agent: Any, use_async: bool) -> Callable[..., Any]:
    if use_async:
        return lambda *args, **kwargs: asyncio.run(agent.ainvoke(*args, **kwargs))
    return agent.invoke


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_interrupt_in_a_sub_agent_surfaces_and_resuming_finishes_the_task(
    make_agent: Any, use_async: bool
) -> None:
    sub = scripted(
        ai("", call("send_email", to="ann@example.com", id="e1")),
        ai("", call("send_email", to="bob@example.com", id="e2")),
        lambda messages, tools: ai("report: " + " / ".join(m.text for m in messages[2::2])),
    )
    main = scripted(delegate(("mailer", "mail ann and bob")), "all handled")
    agent = _mailer_agent(make_agent, sub, main)
    run = _runner(agent, use_async)

    paused = run("go", thread_id="t")
    [first] = paused.interrupts
    # The sub-agent's own interrupt value, unchanged: answered as the main agent's would be.
    assert first.value["action_requests"][0]["args"] == {"to": "ann@example.com"}
    assert agent.get_interrupts("t") == [first]
    assert not tool_messages(paused)

    again = run(plait.Command(resume={"decisions": [{"type": "approve"}]}), thread_id="t")
    [second] = again.interrupts
    assert second.id != first.id
    assert second.value["action_requests"][0]["args"] == {"to": "bob@example.com"}

    done = run(
        plait.Command(resume={"decisions": [{"type": "reject", "message": "not bob"}]}),
        thread_id="t",
    )
    assert done.interrupts == []
    assert done.text == "all handled"
    [answer] = tool_messages(done)
    assert answer.content.startswith("report: sent to ann@example.com / A human reviewer rejected")
    assert "not bob" in answer.content
    assert main.calls == 2 and sub.calls == 3  # nothing ran twice
    sub_messages = agent.get_state(task_thread(done.messages, "task_0"))["messages"]
    assert [m.text for m in sub_messages if isinstance(m, HumanMessage)] == ["mail ann and bob"]


def test_a_paused_sub_agent_resumes_in_a_new_agent_on_the_same_database(
    make_agent: Any, tmp_path: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"

    def build(sub: Any, main: Any) -> Any:
        spec = SubAgent(
            name="mailer",
            description="Sends mail.",
            system_prompt="You send mail.",
            model=sub,
            tools=["send_email"],
            middleware=[("human_in_the_loop", {"interrupt_on": {"send_email": True}})],
        )
        return make_agent(
            main,
            tools=[send_email],
            checkpointer=url,
            middleware=[SubAgentMiddleware(subagents=[spec])],
        )

    first = build(
        scripted(ai("", call("send_email", to="ann@example.com"))),
        scripted(delegate(("mailer", "mail ann"))),
    )
    assert first.invoke("go", thread_id="t").interrupts
    # Another process: fresh agents and models, holding only the rest of the script.
    sub = scripted(lambda messages, tools: ai(f"mailer: {messages[-1].text}"))
    second = build(sub, scripted("all done"))
    [pending] = second.get_interrupts("t")
    result = second.invoke(
        plait.Command(resume={pending.id: {"decisions": [{"type": "approve"}]}}), thread_id="t"
    )
    assert result.text == "all done"
    assert tool_messages(result)[0].content == "mailer: sent to ann@example.com"
    assert [m.text for m in sub.requests[0].messages][:1] == ["mail ann"]


def test_a_resume_value_the_sub_agent_refuses_ends_the_task_with_an_error(
    make_agent: Any,
) -> None:
    sub = scripted(ai("", call("send_email", to="ann@example.com")), "unused")
    main = scripted(delegate(("mailer", "mail ann")), "could not send")
    agent = _mailer_agent(make_agent, sub, main)
    assert agent.invoke("go", thread_id="t").interrupts
    two = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    result = agent.invoke(plait.Command(resume=two), thread_id="t")
    [error] = tool_messages(result)
    assert error.status == "error"
    assert error.content.startswith(
        "Error: sub-agent 'mailer' failed: HumanInTheLoopError: human_in_the_loop: "
        "$.decisions: expected a list of 1 decision(s)"
    )
    assert result.text == "could not send" and result.interrupts == []


def test_two_sub_agents_paused_at_once_are_resumed_by_interrupt_id(make_agent: Any) -> None:
    subs = {
        name: scripted(ai("", call("send_email", to=f"{name}@x")), f"{name} done")
        for name in ("a", "b")
    }
    specs = [
        SubAgent(
            name=name,
            description=name,
            system_prompt=name,
            model=model,
            tools=["send_email"],
            middleware=[("human_in_the_loop", {"interrupt_on": {"send_email": True}})],
        )
        for name, model in subs.items()
    ]
    main = scripted(delegate(("a", "mail a"), ("b", "mail b")), "done")
    agent = make_agent(main, tools=[send_email], middleware=[SubAgentMiddleware(subagents=specs)])

    paused = asyncio.run(agent.ainvoke("go", thread_id="t"))
    assert len(paused.interrupts) == 2
    by_target = {i.value["action_requests"][0]["args"]["to"]: i.id for i in paused.interrupts}
    approve = {"decisions": [{"type": "approve"}]}
    reject = {"decisions": [{"type": "reject"}]}
    done = asyncio.run(
        agent.ainvoke(
            plait.Command(resume={by_target["a@x"]: approve, by_target["b@x"]: reject}),
            thread_id="t",
        )
    )
    assert done.interrupts == [] and done.text == "done"
    assert [m.content for m in tool_messages(done)] == ["a done", "b done"]
    threads = [task_thread(done.messages, f"task_{n}") for n in (0, 1)]
    assert transcript(agent.get_state(threads[0])["messages"])[2] == ("tool", "sent to a@x")
    assert "rejected" in transcript(agent.get_state(threads[1])["messages"])[2][1]


def test_several_interrupts_of_one_sub_agent_are_one_list_answered_by_id(
    make_agent: Any,
) -> None:
    def ask(question: str) -> str:
        """Ask the human."""
        return str(plait.interrupt({"question": question}))

    sub = scripted(
        ai("", call("ask", question="name?"), call("ask", question="age?")),
        lambda messages, tools: ai(", ".join(m.text for m in messages[2:])),
    )
    spec = researcher(sub, tools=[ask])
    main = scripted(delegate(("researcher", "ask twice")), "done")
    agent = make_agent(main, middleware=[SubAgentMiddleware(subagents=[spec])])
    paused = agent.invoke("go", thread_id="t")
    [pending] = paused.interrupts
    assert [item["value"] for item in pending.value] == [
        {"question": "name?"},
        {"question": "age?"},
    ]
    ids = [item["id"] for item in pending.value]
    done = agent.invoke(plait.Command(resume={ids[0]: "Ann", ids[1]: "41"}), thread_id="t")
    assert tool_messages(done)[0].content == "Ann, 41"


def test_an_interrupt_without_a_checkpointer_ends_the_run_with_a_clear_error(
    make_agent: Any,
) -> None:
    def ask(question: str) -> str:
        """Ask the human."""
        return str(plait.interrupt(question))

    spec = researcher(scripted(ai("", call("ask", question="?"))), tools=[ask])
    main = scripted(delegate(("researcher", "ask")), "done")
    agent = make_agent(main, checkpointer=None, middleware=[SubAgentMiddleware(subagents=[spec])])
    with pytest.raises(
        SubAgentInterruptError, match="sub-agent 'researcher' paused at an interrupt"
    ):
        agent.invoke("go")


def test_a_finished_sub_agent_is_not_run_again_when_the_main_run_continues(
    make_agent: Any,
) -> None:
    class Crash(BaseException):
        pass

    crashes = []

    @plait.wrap_tool_call
    def crash_once(request: Any, handler: Any) -> Any:
        result = handler(request)
        if not crashes:
            crashes.append(1)
            raise Crash
        return result

    sub = scripted("the answer")  # one response only: a second run would exhaust it
    main = scripted(delegate(("researcher", "q")), "done")
    agent = make_agent(
        main, middleware=[crash_once, SubAgentMiddleware(subagents=[researcher(sub)])]
    )
    with pytest.raises(Crash):
        agent.invoke("go", thread_id="t")
    result = agent.invoke(None, thread_id="t")
    assert tool_messages(result)[0].content == "the answer"
    assert sub.calls == 1 and result.text == "done"


def test_configured_from_an_agent_file(tmp_path: Any) -> None:
    from plait.agentfile import load_agent

    (tmp_path / "subagent_file_tools.py").write_text(
        'def lookup(term: str) -> str:\n    """Look a term up."""\n    return term.upper()\n'
    )
    (tmp_path / "agent.toml").write_text(
        """
[agent]
model = "scripted:main"
tools = ["subagent_file_tools:lookup"]
checkpointer = "memory"

[[middleware]]
use = "subagents"
system_prompt = "Delegate lookups."

[[middleware.subagents]]
name = "looker"
description = "Looks terms up."
system_prompt = "You look terms up."
tools = ["lookup"]
middleware = [["tool_call_limit", { run_limit = 1 }]]
"""
    )
    model = scripted(
        delegate(("looker", "look up plait")),
        ai("", call("lookup", term="plait")),
        lambda messages, tools: ai(f"found {messages[-1].text}"),
        "done",
    )
    agent = load_agent(tmp_path / "agent.toml", model=model)
    assert "- looker: Looks terms up." in agent.tools_by_name["task"].description
    result = agent.invoke("go", thread_id="t")
    assert tool_messages(result)[0].content == "found PLAIT"
    assert model.requests[0].system_prompt == "Delegate lookups."
    assert model.requests[1].system_prompt == "You look terms up."


def test_a_sub_agent_stopped_half_way_by_a_crash_is_carried_on(make_agent: Any) -> None:
    class Crash(BaseException):
        pass

    runs: list[str] = []

    def flaky(x: str) -> str:
        """Crash the process the first time."""
        runs.append(x)
        if len(runs) == 1:
            raise Crash
        return f"ok {x}"

    sub = scripted(ai("", call("flaky", x="1")), lambda messages, tools: messages[-1].text)
    main = scripted(delegate(("researcher", "q")), "done")
    agent = make_agent(
        main, middleware=[SubAgentMiddleware(subagents=[researcher(sub, tools=[flaky])])]
    )
    with pytest.raises(Crash):
        agent.invoke("go", thread_id="t")
    result = agent.invoke(None, thread_id="t")
    assert tool_messages(result)[0].content == "ok 1"
    assert sub.calls == 2 and runs == ["1", "1"] and result.text == "done"
    thread = task_thread(result.messages, "task_0")
    humans = [m for m in agent.get_state(thread)["messages"] if isinstance(m, HumanMessage)]
    assert [m.text for m in humans] == ["q"]


# -- build errors -----------------------------------------------------------------------------


def test_unknown_tool_names_are_config_errors_naming_the_option(make_agent: Any) -> None:
    options = {
        "subagents": [{"name": "r", "description": "d", "system_prompt": "p", "tools": ["serch"]}]
    }
    with pytest.raises(ConfigError) as info:
        make_agent(["x"], tools=[search, fetch], middleware=[("subagents", options)])
    assert str(info.value).startswith(
        "plugin 'subagents': option 'subagents[0].tools' names a tool the agent does not "
        "have: 'serch' (did you mean 'search'?); the agent's tools are: fetch, search."
    )
    assert "add that middleware to the sub-agent's middleware" in str(info.value)

    with pytest.raises(ConfigError, match=r"option 'default_tools' names a tool .*'write_todos'"):
        make_agent(
            ["x"],
            tools=[search],
            middleware=["todo_list", SubAgentMiddleware(default_tools=["write_todos"])],
        )


def test_duplicate_names_are_a_config_error(make_agent: Any) -> None:
    spec = SubAgent(name="r", description="d", system_prompt="p")
    with pytest.raises(ConfigError) as info:
        make_agent(["x"], middleware=[SubAgentMiddleware(subagents=[spec, spec])])
    assert str(info.value) == (
        "plugin 'subagents': option 'subagents': subagents[0] and subagents[1] are both "
        "named 'r'; sub-agent names must be unique"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"subagents": [{"name": "r", "description": "d", "system_prompt": "p", "tools": "x"}]},
            "plugin 'subagents': option 'subagents[0].tools': expected",
        ),
        (
            {"subagents": [{"name": "r", "description": "d"}]},
            "plugin 'subagents': option 'subagents[0].system_prompt': expected a non-empty "
            "string, got None (sub-agent 'r' needs instructions, unless it is a prebuilt agent)",
        ),
        (
            {"subagents": [{"name": "", "description": "d", "system_prompt": "p"}]},
            "option 'subagents[0].name': expected a non-empty string, got ''",
        ),
        (
            {"subagents": [{"name": "r", "description": "d", "system_prompt": "p", "modle": "x"}]},
            "option 'subagents[0]': unknown key 'modle'",
        ),
        ({"default_model": 3}, "option 'default_model'"),
        (
            {"default_model": "llama3"},
            f"plugin 'subagents': option 'default_model': expected {OPTIONAL_MODEL_FORMS}, "
            "got 'llama3'",
        ),
        (
            {"default_tools": ["search", ""]},
            "plugin 'subagents': option 'default_tools': expected a list of tool names, "
            "plait.Tool objects or functions, or None, got ('search', '')",
        ),
        (
            {
                "subagents": [
                    {"name": "r", "description": "d", "system_prompt": "p", "model": "nope:x"}
                ]
            },
            "plugin 'subagents': option 'subagents[0].model': ",
        ),
        (
            {"default_middleware": ["no_such_middleware"]},
            "plugin 'subagents': the general-purpose sub-agent cannot be built: ",
        ),
        (
            {
                "subagents": [
                    {
                        "name": "r",
                        "description": "d",
                        "system_prompt": "p",
                        "middleware": [["tool_call_limit", {"run_limit": "two"}]],
                    }
                ]
            },
            "plugin 'subagents': sub-agent 'r' (option 'subagents[0]') cannot be built: "
            "plugin 'tool_call_limit': option 'run_limit'",
        ),
    ],
    ids=[
        "tools-string",
        "no-prompt",
        "empty-name",
        "unknown-key",
        "model-type",
        "model-id",
        "empty-tool-name",
        "unknown-provider",
        "unknown-middleware",
        "bad-middleware-option",
    ],
)
def test_bad_options_fail_at_create_agent(make_agent: Any, options: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["x"], tools=[search], middleware=[("subagents", options)])
    assert message in str(info.value)
    if message.startswith("plugin") and "got " in message:  # the whole sentence
        assert str(info.value) == message


def test_bad_values_given_in_python_are_worded_alike() -> None:
    with pytest.raises(ValueError) as info:
        SubAgent(name="r", description="d", system_prompt=" ")
    assert str(info.value) == (
        "system_prompt: expected a non-empty string, got ' ' (sub-agent 'r' needs "
        "instructions, unless it is a prebuilt agent)"
    )
    with pytest.raises(ValueError) as info:
        SubAgentMiddleware(subagents=["r"])  # type: ignore[list-item]
    assert str(info.value) == "subagents: expected a list of sub-agents, got ('r',)"
    with pytest.raises(ConfigError) as error:  # a dict is a sub-agent's fields
        SubAgentMiddleware(subagents=[{"name": "r"}])  # type: ignore[list-item]
    assert str(error.value) == "plugin 'subagents': missing required option 'description'"
    with pytest.raises(ValueError) as info:
        SubAgentMiddleware(default_middleware="model_retry")  # type: ignore[arg-type]
    assert str(info.value) == (
        "default_middleware: expected a list of middleware: names, (name, options) pairs or "
        "instances, got 'model_retry'"
    )


def test_prebuilt_agent_with_spec_fields_is_refused() -> None:
    prebuilt = plait.create_agent(scripted())
    with pytest.raises(ValueError, match="prebuilt agent, which brings its own tools, model"):
        SubAgent(name="p", description="d", agent=prebuilt, tools=["x"], model="scripted:x")


def test_human_in_the_loop_sub_agent_without_checkpointer_fails_early(make_agent: Any) -> None:
    spec = SubAgent(
        name="mailer",
        description="d",
        system_prompt="p",
        tools=["send_email"],
        middleware=[("human_in_the_loop", {"interrupt_on": {"send_email": True}})],
    )
    with pytest.raises(CheckpointerRequiredError) as info:
        make_agent(
            ["x"],
            tools=[send_email],
            checkpointer=None,
            middleware=[SubAgentMiddleware(subagents=[spec])],
        )
    assert str(info.value).startswith(
        "plugin 'subagents': sub-agent 'mailer' (option 'subagents[0]') cannot be built: "
        "plugin 'human_in_the_loop': reviewing tool calls pauses the run"
    )
