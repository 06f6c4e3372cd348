"""The cut point never separates an AI message from its tool messages, on any history."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plait.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage
from plait_summarization import safe_cut


@st.composite
def histories(draw: st.DrawFn) -> list[AnyMessage]:
    messages: list[AnyMessage] = []
    for turn in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["human", "system", "tools", "text", "orphan"]))
        if kind == "human":
            messages.append(HumanMessage(f"h{turn}"))
        elif kind == "system":
            messages.append(SystemMessage(f"s{turn}"))
        elif kind == "text":
            messages.append(AIMessage(f"a{turn}"))
        elif kind == "orphan":
            messages.append(ToolMessage("?", tool_call_id=f"missing{turn}"))
        else:
            calls = [ToolCall("f", {}, f"c{turn}_{i}") for i in range(draw(st.integers(1, 3)))]
            messages.append(AIMessage("", tool_calls=calls))
            for call in calls:
                messages.append(ToolMessage("r", tool_call_id=call.id))
    return messages


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 40))
def test_safe_cut_keeps_pairs_together(history: list[AnyMessage], cut: int) -> None:
    new = safe_cut(history, cut)
    assert 0 <= new <= len(history)
    kept = history[new:]
    summarized = history[:new]
    owners = {c.id for m in summarized if isinstance(m, AIMessage) for c in m.tool_calls}
    for message in kept:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id not in owners
    if kept and isinstance(kept[0], ToolMessage):
        everywhere = {c.id for m in history if isinstance(m, AIMessage) for c in m.tool_calls}
        assert kept[0].tool_call_id in everywhere  # never starts with an orphan
    # the cut only moves back to an owning AI message, or forward past orphans
    if new < min(cut, len(history)):
        assert isinstance(history[new], AIMessage) and history[new].tool_calls
