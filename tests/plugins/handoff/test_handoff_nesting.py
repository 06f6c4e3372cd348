"""A handoff's receiving agent runs nested in the main run: its events reach the main
stream under the transfer call's id in every mode (sync and async), its usage rolls up and
is reported per handoff, and the main agent's usage_limit, model_call_limit and pii apply
to it unless it opts out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.messages import Usage
from plait.testing import ai, call, transcript
from plait_handoff import HandoffMiddleware

MODES = ("updates", "messages", "values", "custom")


def progress(step: str, runtime: plait.ToolRuntime) -> str:
    """Report progress.

    Args:
        step: what was done.
    """
    runtime.stream_writer({"progress": step})
    return "noted"


def billing(*answers: Any) -> plait.Agent:
    return plait.create_agent(
        plait.ScriptedChatModel(list(answers)), tools=[progress], name="billing"
    )


def handing_over(make_agent: Any, receiver: plait.Agent, **kwargs: Any) -> plait.Agent:
    middleware = kwargs.pop("middleware", [HandoffMiddleware(agents=[receiver])])
    return make_agent(
        [ai("Passing you to billing.", call("transfer_to_billing", "t1"))],
        middleware=middleware,
        **kwargs,
    )


def receiver_answers() -> plait.Agent:
    return billing(ai("", call("progress", "p1", step="looked up A7")), "Order A7 is refunded.")


def check_nested(events: list[plait.StreamEvent], mode: str) -> None:
    assert {e.mode for e in events} == {mode}
    nested = [e for e in events if e.path]
    assert {e.path for e in nested} == {("t1",)}
    if mode == "custom":
        assert [e.data for e in nested] == [{"progress": "looked up A7"}]
    elif mode == "messages":  # the receiver's answer as its model streamed it, and its tool's
        chunks = [e.data for e in nested if e.source == "model"]
        assert "".join(c.content for c in chunks) == "Order A7 is refunded."
        assert [e.data.text for e in nested if e.source == "progress"] == ["noted"]
    elif mode == "updates":
        sources = [e.source for e in nested]
        assert sources == ["model", "progress", "model"]
        assert nested[-1].data["model"]["messages"][0].text == "Order A7 is refunded."
    else:  # values: the receiver's own state (the two messages it was given, then its own)
        assert [len(e.data["messages"]) for e in nested] == [3, 4, 5]
    # the main run's events carry no path: the transfer, then its model node answered by
    # the receiver (in messages mode that answer whole, once: its model streamed nothing)
    own = [e for e in events if not e.path]
    if mode == "custom":  # only the receiver's tool writes any
        assert own == []
        return
    assert own and own[-1].source == "model"
    if mode == "messages":
        assert own[-2].source == "transfer_to_billing"
        whole = [e.data.text for e in own if isinstance(e.data, plait.AIMessage)]
        assert whole == ["Order A7 is refunded."]


@pytest.mark.parametrize("mode", MODES)
def test_the_receivers_events_reach_the_main_stream_under_the_transfer_call(
    make_agent: Any, mode: str
) -> None:
    agent = handing_over(make_agent, receiver_answers())
    stream = agent.stream("Refund order A7", thread_id="t", mode=mode)
    events = list(stream)
    assert stream.result is not None and stream.result.text == "Order A7 is refunded."
    check_nested(events, mode)


@pytest.mark.parametrize("mode", MODES)
def test_the_receivers_events_reach_the_main_stream_async(make_agent: Any, mode: str) -> None:
    agent = handing_over(make_agent, receiver_answers())

    async def scenario() -> list[plait.StreamEvent]:
        stream = agent.astream("Refund order A7", thread_id="t", mode=mode)
        return [event async for event in stream]

    check_nested(asyncio.run(scenario()), mode)


def test_later_turns_nest_under_the_same_transfer_call(make_agent: Any) -> None:
    receiver = billing("It is refunded.", "Within 5 days.")
    agent = handing_over(make_agent, receiver)
    agent.invoke("Refund order A7", thread_id="t")
    events = list(agent.stream("When?", thread_id="t", mode="updates"))
    assert {e.path for e in events} == {(), ("t1",)}
    assert agent.get_state("t")["handoff"]["call"] == "t1"


def test_the_receivers_usage_rolls_up_and_is_reported_per_handoff(make_agent: Any) -> None:
    receiver = plait.create_agent(
        plait.ScriptedChatModel(
            [
                ai("", call("progress", "p1", step="x"), usage=Usage(200, 20)),
                ai("Refunded.", usage=Usage(300, 30)),
            ]
        ),
        tools=[progress],
        name="billing",
    )
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"), usage=Usage(100, 10))],
        middleware=[HandoffMiddleware(agents=[receiver])],
    )
    result = agent.invoke("Refund A7", thread_id="t")
    assert result.messages[-1].metadata["handoff"]["usage"]["input_tokens"] == 500
    assert result.messages[-1].usage is None  # counted once, by the kernel's ledger
    assert result.usage == Usage(600, 60)


def spending(*texts: str) -> plait.Agent:
    """A receiver whose every call spends 400 tokens, calling ``progress`` until the last."""
    answers = [
        ai("", call("progress", f"p{i}", step=t), usage=Usage(380, 20)) for i, t in enumerate(texts)
    ]
    return plait.create_agent(
        plait.ScriptedChatModel([*answers, ai("Done.", usage=Usage(380, 20))]),
        tools=[progress],
        name="billing",
    )


def test_the_main_usage_limit_stops_the_receiver_at_the_limit(make_agent: Any) -> None:
    receiver = spending("a", "b", "c", "d")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"), usage=Usage(90, 10))],
        middleware=[
            ("usage_limit", {"run_limit": {"total_tokens": 1000}}),
            HandoffMiddleware(agents=[receiver]),
        ],
    )
    result = agent.invoke("Refund A7", thread_id="t")
    # 100 (main) + 400 + 400 = 900 < 1000: a third call starts, crosses, and no fourth does
    assert len(receiver.model.requests) == 3  # type: ignore[attr-defined]
    assert result.usage == Usage(90 + 3 * 380, 10 + 3 * 20)
    assert result.text.startswith("Usage limit reached (run limit: total_tokens 1300/1000).")


def test_a_receiver_that_opts_out_of_the_limits_is_counted_but_not_refused(
    make_agent: Any,
) -> None:
    receiver = spending("a", "b", "c", "d")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"), usage=Usage(90, 10))],
        middleware=[
            ("usage_limit", {"run_limit": {"total_tokens": 1000}}),
            ("model_call_limit", {"run_limit": 2}),
            HandoffMiddleware(agents=[{"agent": receiver, "inherit": []}]),
        ],
    )
    result = agent.invoke("Refund A7", thread_id="t")
    assert len(receiver.model.requests) == 5  # type: ignore[attr-defined]
    assert result.text == "Done."
    assert result.usage == Usage(90 + 5 * 380, 10 + 5 * 20)


def test_the_main_model_call_limit_counts_the_receivers_calls_async(make_agent: Any) -> None:
    receiver = spending("a", "b", "c")
    agent = make_agent(
        [ai("", call("transfer_to_billing", "t1"))],
        middleware=[("model_call_limit", {"run_limit": 3}), HandoffMiddleware(agents=[receiver])],
    )
    result = asyncio.run(agent.ainvoke("Refund A7", thread_id="t"))
    assert len(receiver.model.requests) == 2  # type: ignore[attr-defined]
    assert result.text.startswith("Model call limit reached: run limit (3/3)")


def test_the_main_agents_pii_hides_values_from_the_receiver(make_agent: Any) -> None:
    receiver = billing("I will email you.")
    agent = handing_over(
        make_agent,
        receiver,
        middleware=[
            ("pii", {"pii_type": "email", "strategy": "redact"}),
            HandoffMiddleware(agents=[receiver]),
        ],
    )
    result = agent.invoke("Refund A7, I am ann@acme.com", thread_id="t")
    assert result.text == "I will email you."
    seen = transcript(receiver.model.requests[0].messages)  # type: ignore[attr-defined]
    assert seen[0] == ("human", "Refund A7, I am [REDACTED_EMAIL]")


def test_a_pii_inside_handoff_is_refused_unless_the_receiver_opts_out(make_agent: Any) -> None:
    pii = ("pii", {"pii_type": "email"})
    with pytest.raises(ConfigError) as raised:
        make_agent(["hi"], middleware=[HandoffMiddleware(agents=[billing("x")]), pii])
    assert str(raised.value) == (
        "plugin 'handoff': option 'inherit': pii is listed after handoff, so billing would "
        "see the real values pii hides from the main model; list pii before handoff, or "
        "leave 'pii' out of inherit"
    )
    options = {"agents": [billing("x")], "inherit": ["usage_limit"]}
    make_agent(["hi"], middleware=[HandoffMiddleware(**options), pii])
    with pytest.raises(ConfigError) as raised:
        make_agent(["hi"], middleware=[("handoff", {**options, "inherit": ["otel"]})])
    assert (
        "plugin 'handoff': option 'inherit': expected a list of names among usage_limit, "
        "model_call_limit, pii, got ('otel',)" in str(raised.value)
    )
