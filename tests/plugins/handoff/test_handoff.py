"""``handoff``: transfer_to_<name> hands the thread to another agent, which answers from then
on with its own model, tools and middleware, seeing the conversation through the input
filter (all, last N, summary); the thread records who answered; the main agent's limits
count its calls; bad options are refused at create_agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ai, call, tool_answers, transcript
from plait_handoff import STATE_KEY, HandoffMiddleware

refunds: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    refunds.clear()


@plait.tool
def refund(order: str) -> str:
    """Refund an order.

    Args:
        order: the order number.
    """
    refunds.append(order)
    return f"refunded {order}"


def billing(*answers: Any, **kwargs: Any) -> plait.Agent:
    return plait.create_agent(
        plait.ScriptedChatModel(list(answers)),
        tools=[refund],
        name="billing",
        system_prompt="You handle billing.",
        middleware=["todo_list"],
        **kwargs,
    )


def seen(agent: plait.Agent, n: int) -> list[tuple[str, str]]:
    return transcript(agent.model.requests[n].messages)


def test_the_receiving_agent_answers_with_its_own_tools_and_middleware(make_agent: Any) -> None:
    receiver = billing(ai("", call("refund", "r1", order="A7")), "Order A7 is refunded.")
    agent = make_agent(
        [ai("Let me get billing.", call("transfer_to_billing", "t1"))],
        middleware=[HandoffMiddleware(agents=[receiver])],
    )
    result = agent.invoke("Refund order A7", thread_id="t")
    assert result.text == "Order A7 is refunded."
    assert refunds == ["A7"]
    last = result.messages[-1]
    assert last.metadata["agent"] == "billing"
    assert tool_answers(result.messages)["t1"].text == (
        "Transferred to billing, who answers from now on."
    )
    request = receiver.model.requests[0]
    assert request.system_prompt.startswith("You handle billing.")
    assert {tool.name for tool in request.tools} == {"refund", "write_todos"}
    # all: the conversation's text, without the main agent's tool traffic
    assert seen(receiver, 0) == [("human", "Refund order A7"), ("ai", "Let me get billing.")]
    assert len(agent.model.requests) == 1
    assert result.state[STATE_KEY]["agent"] == "billing"


def test_the_thread_stays_with_the_receiving_agent(make_agent: Any) -> None:
    receiver = billing("It is refunded.", "Within 5 days.")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"))],
        middleware=[HandoffMiddleware(agents=[receiver])],
    )
    agent.invoke("Refund order A7", thread_id="t")
    result = agent.invoke("When will I get it?", thread_id="t")
    assert result.text == "Within 5 days."
    assert len(agent.model.requests) == 1  # the main model is not asked again
    assert seen(receiver, 1) == [
        ("human", "Refund order A7"),
        ("ai", "It is refunded."),
        ("human", "When will I get it?"),
    ]
    answered = [m.metadata.get("agent") for m in result.messages if m.type == "ai"]
    assert answered == [None, "billing", "billing"]
    agent.update_state("t", {STATE_KEY: None})
    agent.model.responses.append("Back with the main agent.")  # type: ignore[attr-defined]
    assert agent.invoke("Thanks", thread_id="t").text == "Back with the main agent."


def test_last_n_messages(make_agent: Any) -> None:
    receiver = billing("Refunded.")
    agent = make_agent(
        ["Hello!", ai("Passing you on.", call("transfer_to_billing", "t1"))],
        middleware=[HandoffMiddleware(agents=[{"agent": receiver, "input_filter": 2}])],
    )
    agent.invoke("Hi", thread_id="t")
    agent.invoke("Refund A7", thread_id="t")
    assert seen(receiver, 0) == [("human", "Refund A7"), ("ai", "Passing you on.")]


def test_summary_written_by_the_main_model_at_the_handoff(make_agent: Any) -> None:
    receiver = billing("Refunded.", "Yes, A7.")
    agent = make_agent(
        ["Hello Ann!", ai("", call("transfer_to_billing", "t1")), "Ann wants order A7 refunded."],
        middleware=[HandoffMiddleware(agents=[receiver], input_filter="summary")],
    )
    agent.invoke("Hi, I am Ann", thread_id="t")
    agent.invoke("Refund A7 please", thread_id="t")
    prompt = transcript(agent.model.requests[2].messages)[0][1]
    assert prompt.startswith("Another agent, billing, is taking over this conversation")
    assert "human: Hi, I am Ann\nai: Hello Ann!\nhuman: Refund A7 please" in prompt
    summary = "Summary of the conversation so far:\nAnn wants order A7 refunded."
    assert seen(receiver, 0) == [("human", summary)]
    agent.invoke("Was it A7?", thread_id="t")
    assert seen(receiver, 1) == [("human", summary), ("ai", "Refunded."), ("human", "Was it A7?")]


def test_the_main_agents_limits_count_the_receiving_agents_calls(make_agent: Any) -> None:
    receiver = billing(ai("", call("refund", "r1", order="A7")), "Refunded.")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"))],
        middleware=[("model_call_limit", {"run_limit": 2}), HandoffMiddleware(agents=[receiver])],
    )
    result = agent.invoke("Refund A7", thread_id="t")
    assert result.text.startswith("Model call limit reached: run limit (2/2)")
    assert len(receiver.model.requests) == 1


def test_usage_of_the_receiving_agent_rolls_up(make_agent: Any) -> None:
    receiver = billing("Refunded.")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"))],
        middleware=[HandoffMiddleware(agents=[receiver])],
    )
    result = agent.invoke("Refund A7")
    own = result.messages[-1].metadata["handoff"]["usage"]
    assert own["input_tokens"] > 0
    assert result.usage.input_tokens > own["input_tokens"]  # the main model's call too


def test_an_agent_file_as_the_receiving_agent(make_agent: Any, tmp_path: Path) -> None:
    file = tmp_path / "support.toml"
    file.write_text(
        '[agent]\nname = "support"\nmodel = "scripted:support"\n'
        'model_settings = { responses = ["Support here: try restarting it."] }\n'
    )
    agent = make_agent(
        [ai("", call("transfer_to_helpdesk", "t1"))],
        middleware=[
            (
                "handoff",
                {
                    "agents": [
                        {"agent": str(file), "name": "helpdesk", "description": "device problems"}
                    ]
                },
            )
        ],
    )
    result = agent.invoke("My router is broken")
    offered = {t.name: t.description for t in agent.model.requests[0].tools}
    assert offered["transfer_to_helpdesk"] == (
        "Hand this conversation over to helpdesk: device problems. It will answer the user "
        "from now on, instead of you."
    )
    assert result.text == "Support here: try restarting it."
    assert result.messages[-1].metadata["agent"] == "helpdesk"


def test_two_transfers_in_one_message_are_refused(make_agent: Any) -> None:
    other = plait.create_agent(plait.ScriptedChatModel(["x"]), name="sales")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"), call("transfer_to_sales", "t2")), "Sorry."],
        middleware=[HandoffMiddleware(agents=[billing("y"), other])],
    )
    result = agent.invoke("help")
    answers = tool_answers(result.messages)
    assert (
        answers["t1"].text
        == answers["t2"].text
        == ("Error: hand the conversation to one agent at a time; call only one transfer tool.")
    )
    assert result.text == "Sorry."
    assert result.state[STATE_KEY] is None


def test_the_async_path_hands_over_alike(make_agent: Any) -> None:
    receiver = billing("Refunded.")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"))],
        middleware=[HandoffMiddleware(agents=[receiver])],
    )
    result = asyncio.run(agent.ainvoke("Refund A7"))
    assert result.text == "Refunded."
    assert result.messages[-1].metadata["agent"] == "billing"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "plugin 'handoff': missing required option 'agents'"),
        (
            {"agents": []},
            "plugin 'handoff': option 'agents': expected a non-empty list of agents",
        ),
        (
            {"agents": ["nowhere.toml"]},
            "plugin 'handoff': option 'agents[0].agent': expected the path of an existing "
            "agent file, got 'nowhere.toml'",
        ),
        (
            {"agents": [{"agent": "x.py"}]},
            "expected a plait.Agent or the path of an agent file (.toml), got 'x.py'",
        ),
        (
            {"agents": ["AGENT"], "input_filter": 0},
            "plugin 'handoff': option 'input_filter': expected 'all', 'summary' or an int "
            ">= 1, got 0",
        ),
    ],
)
def test_bad_options_fail_at_create_agent(make_agent: Any, options: Any, message: str) -> None:
    if options.get("agents") == ["AGENT"]:
        options = {**options, "agents": [billing("x")]}
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("handoff", options)])
    assert message in str(info.value)


def test_duplicate_and_bad_names_fail_at_create_agent(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[HandoffMiddleware(agents=[billing("x"), billing("y")])])
    assert str(info.value) == (
        "plugin 'handoff': option 'agents': agents[0] and agents[1] are both named 'billing'; "
        "give one a name"
    )
    with pytest.raises(ConfigError) as info:
        make_agent(
            ["hi"], middleware=[HandoffMiddleware(agents=[{"agent": billing("x"), "name": "a b"}])]
        )
    assert "option 'agents[0].name': expected 1-48 letters, digits, _ or -, got 'a b'" in str(
        info.value
    )


def test_a_bad_agent_table_names_its_path_once(make_agent: Any) -> None:
    """A table in ``agents`` is structured by the plugin itself: its error names the table's
    place in the list, and the plugin once, by name or given in Python alike."""
    expected = (
        "plugin 'handoff': option 'agents[1].agent': expected a plait.Agent or the path of an "
        "agent file (.toml), got 'x.py'"
    )
    agents = [billing("x"), {"agent": "x.py"}]
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("handoff", {"agents": agents})])
    assert str(info.value) == expected
    with pytest.raises(ConfigError) as info:
        HandoffMiddleware(agents=agents)
    assert str(info.value) == expected
