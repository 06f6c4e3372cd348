"""summarization: when it triggers, what it keeps, what the model and the checkpoint see."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

import plait
from plait.errors import ContextOverflowError, ProviderError
from plait.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from plait.models import ScriptedChatModel
from plait.testing import ai, call, scripted
from plait_summarization import (
    DEFAULT_SUMMARY_PREFIX,
    Keep,
    SummarizationMiddleware,
    TriggerCondition,
)


def chat(turns: int) -> list[AnyMessage]:
    """``turns`` user/assistant exchanges, numbered."""
    out: list[AnyMessage] = []
    for i in range(1, turns + 1):
        out.append(HumanMessage(f"question {i}"))
        out.append(AIMessage(f"answer {i}"))
    return out


def summarizer(*answers: Any) -> ScriptedChatModel:
    return scripted(*(answers or ("SUMMARY",)), name="summarizer")


def test_summarizes_old_history_and_shrinks_the_checkpoint(make_agent: Any) -> None:
    summary_model = summarizer("The user asked questions 1 to 3.")
    mw = SummarizationMiddleware(
        summary_model, trigger=TriggerCondition(messages=7), keep=Keep(messages=3)
    )
    agent = make_agent(["final"], middleware=[mw])
    history = [*chat(3), HumanMessage("question 4")]
    ids = [m.id for m in history]
    agent.invoke(history, thread_id="t")

    sent = agent.model.requests[0].messages
    assert sent[0].text == f"{DEFAULT_SUMMARY_PREFIX}\n\nThe user asked questions 1 to 3."
    assert sent[0].metadata["summary"] is True
    assert isinstance(sent[0], HumanMessage)
    assert [m.text for m in sent[1:]] == ["question 3", "answer 3", "question 4"]

    stored = agent.get_state("t")["messages"]
    assert [m.text for m in stored[1:]] == ["question 3", "answer 3", "question 4", "final"]
    assert stored[0].metadata == {"summary": True}
    assert not {m.id for m in stored} & set(ids[1:4])  # removed from state, not hidden
    assert len(stored) == 5

    prompt = summary_model.requests[0].messages[0].text
    assert "User: question 1" in prompt and "Assistant: answer 2" in prompt
    assert "question 3" not in prompt


def test_without_trigger_never_summarizes(make_agent: Any) -> None:
    summary_model = summarizer()
    agent = make_agent(["ok"], middleware=[SummarizationMiddleware(summary_model)])
    agent.invoke(chat(40))
    assert summary_model.calls == 0
    assert len(agent.model.requests[0].messages) == 80


def test_conditions_and_inside_or_across(make_agent: Any) -> None:
    history = chat(5)  # 10 messages
    both = TriggerCondition(messages=5, tokens=10_000)
    summary_model = summarizer()
    agent = make_agent(["ok"], middleware=[SummarizationMiddleware(summary_model, trigger=both)])
    agent.invoke(history)
    assert summary_model.calls == 0  # messages hold, tokens do not: AND

    summary_model = summarizer()
    either = [TriggerCondition(tokens=10_000), TriggerCondition(messages=10)]
    mw = SummarizationMiddleware(summary_model, trigger=either, keep=Keep(messages=2))
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(history)
    assert summary_model.calls == 1  # the second condition holds at >= 10: OR


def test_threshold_triggers_at_equal(make_agent: Any) -> None:
    summary_model = summarizer()
    mw = SummarizationMiddleware(summary_model, trigger={"messages": 4}, keep={"messages": 1})
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(chat(2))
    assert summary_model.calls == 1


def test_tokens_trigger_and_keep_tokens(make_agent: Any) -> None:
    long = [HumanMessage("x" * 400), AIMessage("y" * 400), HumanMessage("short question")]
    summary_model = summarizer()
    mw = SummarizationMiddleware(
        summary_model, trigger=TriggerCondition(tokens=200), keep=Keep(tokens=50)
    )
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(long)
    sent = agent.model.requests[0].messages
    assert [m.text for m in sent[1:]] == ["short question"]


def test_custom_token_counter(make_agent: Any) -> None:
    seen: list[int] = []

    def counter(messages: Sequence[AnyMessage]) -> int:
        seen.append(len(messages))
        return 1000 * len(messages)

    summary_model = summarizer()
    mw = SummarizationMiddleware(
        summary_model,
        trigger=TriggerCondition(tokens=3000),
        keep=Keep(tokens=1000),
        token_counter=counter,
    )
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(chat(2))
    assert seen and summary_model.calls == 1
    assert [m.text for m in agent.model.requests[0].messages[1:]] == ["answer 2"]


def test_fraction_uses_the_agent_models_profile(make_agent: Any) -> None:
    model = scripted("ok", profile={"max_input_tokens": 100})
    summary_model = summarizer()
    mw = SummarizationMiddleware(
        summary_model, trigger=TriggerCondition(fraction=0.5), keep=Keep(fraction=0.1)
    )
    agent = make_agent(model, middleware=[mw])
    agent.invoke([HumanMessage("a" * 200), AIMessage("b"), HumanMessage("tail")])
    assert summary_model.calls == 1
    assert [m.text for m in model.requests[0].messages[1:]] == ["b", "tail"]


def test_fraction_without_profile_fails_at_create_agent(make_agent: Any) -> None:
    mw = SummarizationMiddleware(summarizer(), trigger=TriggerCondition(fraction=0.8))
    with pytest.raises(plait.ConfigError) as info:
        make_agent(["ok"], middleware=[mw])
    text = str(info.value)
    assert "summarization" in text and "max_input_tokens" in text
    assert "tokens or messages" in text
    keep_fraction = SummarizationMiddleware(
        summarizer(), trigger=TriggerCondition(messages=3), keep=Keep(fraction=0.2)
    )
    with pytest.raises(plait.ConfigError, match="profile"):
        make_agent(["ok"], middleware=[keep_fraction])


def test_system_messages_in_state_are_never_removed(make_agent: Any) -> None:
    summary_model = summarizer()
    mw = SummarizationMiddleware(summary_model, trigger={"messages": 3}, keep={"messages": 1})
    agent = make_agent(["ok"], middleware=[mw])
    history = [
        SystemMessage("you are terse"),
        *chat(2),
        SystemMessage("mid rule"),
        HumanMessage("last"),
    ]
    agent.invoke(history, thread_id="t")
    stored = agent.get_state("t")["messages"]
    assert [(m.type, m.text) for m in stored if m.type == "system"] == [
        ("system", "you are terse"),
        ("system", "mid rule"),
    ]
    assert stored[0].text == "you are terse"
    assert stored[1].metadata.get("summary") is True
    assert "you are terse" not in summary_model.requests[0].messages[0].text


TOOL_HISTORY: list[AnyMessage] = [
    HumanMessage("plan a trip"),
    ai("", call("weather", id="w1", city="Paris"), call("weather", id="w2", city="Rome")),
    ToolMessage("sunny", tool_call_id="w1", name="weather"),
    ToolMessage("rain", tool_call_id="w2", name="weather"),
    AIMessage("Paris is sunny, Rome rainy."),
    HumanMessage("book Paris"),
    ai("", call("book", id="b1", city="Paris")),
    ToolMessage("booked", tool_call_id="b1", name="book"),
    AIMessage("Booked."),
    HumanMessage("thanks"),
]


def pairs_intact(messages: Sequence[AnyMessage]) -> bool:
    calls = {c.id for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return calls == answered


@pytest.mark.parametrize("keep", range(len(TOOL_HISTORY) + 1))
def test_cut_never_separates_ai_from_its_tool_messages(make_agent: Any, keep: int) -> None:
    summary_model = summarizer()
    mw = SummarizationMiddleware(
        summary_model, trigger=TriggerCondition(messages=1), keep=Keep(messages=keep)
    )
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(list(TOOL_HISTORY), thread_id="t")
    sent = agent.model.requests[0].messages
    assert pairs_intact(sent)
    kept = [m for m in sent if not m.metadata.get("summary")]
    # kept messages are a suffix of the history, at least `keep` long
    assert [m.id for m in kept] == [m.id for m in TOOL_HISTORY[len(TOOL_HISTORY) - len(kept) :]]
    assert len(kept) >= keep
    # the cut moved back to the owning AI message, never further than needed
    expected = {0: 0, 1: 1, 2: 2, 3: 4, 4: 4, 5: 5, 6: 6, 7: 9, 8: 9, 9: 9, 10: 10}[keep]
    assert len(kept) == expected
    if len(kept) == len(TOOL_HISTORY):
        assert summary_model.calls == 0
    else:
        assert summary_model.calls == 1
        assert pairs_intact(agent.get_state("t")["messages"])


def test_failing_summary_leaves_history_untouched(make_agent: Any) -> None:
    summary_model = summarizer(ProviderError("summarizer down", status_code=503))
    mw = SummarizationMiddleware(summary_model, trigger={"messages": 4}, keep={"messages": 1})
    agent = make_agent(["first answer", "never"], middleware=[mw])
    agent.invoke(chat(1), thread_id="t")  # 3 messages: no trigger
    before = [m.id for m in agent.get_state("t")["messages"]]
    with pytest.raises(ProviderError, match="summarizer down"):
        agent.invoke("and another question", thread_id="t")
    after = agent.get_state("t")["messages"]
    assert [m.id for m in after][: len(before)] == before
    assert not any(m.metadata.get("summary") for m in after)
    assert agent.model.calls == 1


def test_context_overflow_retries_once_with_the_middle_elided(make_agent: Any) -> None:
    summary_model = summarizer(ContextOverflowError("prompt too long"), "short summary")
    mw = SummarizationMiddleware(summary_model, trigger={"messages": 4}, keep={"messages": 1})
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(chat(20))
    first, second = (r.messages[0].text for r in summary_model.requests)
    assert "omitted" in second and "omitted" not in first
    assert len(second) < len(first)
    assert "question 1" in second  # the beginning stays
    assert "question 20" in second  # and the end
    assert agent.model.requests[0].messages[0].text.endswith("short summary")


def test_second_overflow_surfaces(make_agent: Any) -> None:
    summary_model = summarizer(ContextOverflowError("too long"), ContextOverflowError("still"))
    mw = SummarizationMiddleware(summary_model, trigger={"messages": 4}, keep={"messages": 1})
    agent = make_agent(["ok"], middleware=[mw])
    with pytest.raises(ContextOverflowError, match="still"):
        agent.invoke(chat(3))
    assert summary_model.calls == 2


def test_empty_summary_is_an_error_not_a_placeholder(make_agent: Any) -> None:
    mw = SummarizationMiddleware(summarizer("  "), trigger={"messages": 2}, keep={"messages": 1})
    agent = make_agent(["ok"], middleware=[mw])
    with pytest.raises(plait.PlaitError, match="empty summary"):
        agent.invoke(chat(2))


def test_trim_keeps_the_most_recent_part(make_agent: Any) -> None:
    summary_model = summarizer()
    history = [
        HumanMessage("OLDEST " + "o" * 400),
        AIMessage("NEWER " + "n" * 40),
        HumanMessage("NEWEST"),
        AIMessage("kept"),
    ]
    mw = SummarizationMiddleware(
        summary_model,
        trigger={"messages": 2},
        keep={"messages": 1},
        trim_tokens_to_summarize=30,
    )
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(history)
    prompt = summary_model.requests[0].messages[0].text
    assert "NEWER" in prompt and "NEWEST" in prompt and "OLDEST" not in prompt


def test_custom_prompt_and_prefix(make_agent: Any) -> None:
    summary_model = summarizer("S")
    mw = SummarizationMiddleware(
        summary_model,
        trigger={"messages": 2},
        keep={"messages": 1},
        summary_prompt="Summarize {braces} kept: {messages}",
        summary_prefix="Earlier:",
    )
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(chat(1))
    assert summary_model.requests[0].messages[0].text == (
        "Summarize {braces} kept: User: question 1"
    )
    assert agent.model.requests[0].messages[0].text == "Earlier:\n\nS"


def test_a_later_summary_folds_in_the_earlier_one(make_agent: Any) -> None:
    summary_model = summarizer("first summary", "second summary")
    mw = SummarizationMiddleware(summary_model, trigger={"messages": 4}, keep={"messages": 1})
    agent = make_agent(["a", "b"], middleware=[mw])
    agent.invoke(chat(2), thread_id="t")
    agent.invoke(["more", AIMessage("x"), "again"], thread_id="t")
    prompt = summary_model.requests[1].messages[0].text
    assert "Earlier summary: " + DEFAULT_SUMMARY_PREFIX in prompt
    stored = agent.get_state("t")["messages"]
    assert [m.metadata.get("summary", False) for m in stored] == [True, False, False]
    assert stored[0].text.endswith("second summary")


def test_trimming_never_drops_the_earlier_summary(make_agent: Any) -> None:
    # The earlier summary stands for the oldest history: trimmed away, it would be lost.
    summary_model = summarizer("first summary FACT-42", "second summary")
    mw = SummarizationMiddleware(
        summary_model,
        trigger={"messages": 4},
        keep={"messages": 1},
        trim_tokens_to_summarize=60,
    )
    agent = make_agent(["a", "b"], middleware=[mw])
    agent.invoke(chat(2), thread_id="t")
    long = [HumanMessage("MIDDLE " + "m" * 400), AIMessage("RECENT " + "r" * 40), "again"]
    agent.invoke(long, thread_id="t")
    prompt = summary_model.requests[1].messages[0].text
    assert prompt.index("Earlier summary: ") < prompt.index("RECENT")
    assert "FACT-42" in prompt and "MIDDLE" not in prompt


def test_async_path(make_agent: Any) -> None:
    summary_model = summarizer("async summary")
    mw = SummarizationMiddleware(summary_model, trigger={"messages": 4}, keep={"messages": 1})
    agent = make_agent(["ok"], middleware=[mw])
    asyncio.run(agent.ainvoke(chat(3)))
    assert agent.model.requests[0].messages[0].text.endswith("async summary")


def test_model_id_is_resolved_when_built() -> None:
    mw = SummarizationMiddleware("scripted:writer", trigger={"messages": 4})
    assert isinstance(mw.summarizer, ScriptedChatModel)
    assert mw.summarizer.model_name == "writer"


def test_unknown_model_provider_names_the_plugin(make_agent: Any) -> None:
    with pytest.raises(plait.ConfigError) as info:
        make_agent(["ok"], middleware=[("summarization", {"model": "nosuch:model"})])
    assert "summarization" in str(info.value) and "nosuch" in str(info.value)


def test_options_by_name(make_agent: Any) -> None:
    options = {
        "model": summarizer("named"),
        "trigger": [{"messages": 100}, {"tokens": 1, "messages": 3}],
        "keep": {"messages": 1},
    }
    agent = make_agent(["ok"], middleware=[("summarization", options)])
    agent.invoke(chat(2))
    assert agent.model.requests[0].messages[0].text.endswith("named")


@pytest.mark.parametrize(
    ("trigger", "keep"),
    [
        (("messages", 3), ("messages", 1)),  # LangChain's pairs, as in Python
        (["messages", 3], ["messages", 1]),  # the same in an agent file (TOML arrays)
        ([["tokens", 10_000], ["messages", 3]], {"messages": 1}),  # any of them holds
    ],
)
def test_langchain_pairs_by_name(make_agent: Any, trigger: Any, keep: Any) -> None:
    options = {"model": summarizer("paired"), "trigger": trigger, "keep": keep}
    agent = make_agent(["ok"], middleware=[("summarization", options)])
    agent.invoke(chat(2))
    sent = agent.model.requests[0].messages
    assert sent[0].text.endswith("paired") and [m.text for m in sent[1:]] == ["answer 2"]


def test_a_bad_pair_by_name_names_the_field(make_agent: Any) -> None:
    with pytest.raises(plait.ConfigError) as info:
        options = {"model": summarizer(), "trigger": ["tokens", 0]}
        make_agent(["ok"], middleware=[("summarization", options)])
    assert str(info.value) == (
        "plugin 'summarization': option 'trigger.tokens': expected an int >= 1 or None, got 0"
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"trigger": {}}, "at least one of fraction, tokens, messages"),
        ({"trigger": {"fraction": 1.5}}, "fraction"),
        ({"trigger": [{"messages": 0}]}, "messages"),
        ({"trigger": {"tokens": "many"}}, "tokens"),
        ({"keep": {"messages": 3, "tokens": 10}}, "exactly one"),
        ({"keep": {}}, "exactly one"),
        ({"keep": {"messages": -1}}, "messages"),
        (
            {"summary_prompt": "no placeholder"},
            "plugin 'summarization': option 'summary_prompt': expected a prompt with {messages} "
            "where the conversation to summarize goes, got 'no placeholder'",
        ),
        ({"trim_tokens_to_summarize": 0}, "trim_tokens_to_summarize"),
        ({"trigger": {"messages": 3}, "max_tokens_before_summary": 10}, "trigger alone"),
        ({"keep": {"tokens": 5}, "messages_to_keep": 3}, "keep alone"),
        ({"triggr": {"messages": 3}}, "triggr"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(plait.ConfigError) as info:
        make_agent(["ok"], middleware=[("summarization", {"model": summarizer(), **options})])
    assert "summarization" in str(info.value)
    assert fragment in str(info.value)
    if fragment.startswith("plugin"):
        assert str(info.value) == fragment


def test_missing_model_is_an_error(make_agent: Any) -> None:
    with pytest.raises(plait.ConfigError, match="model"):
        make_agent(["ok"], middleware=[("summarization", {"trigger": {"messages": 3}})])


def test_deprecated_aliases_warn_and_work(make_agent: Any) -> None:
    with pytest.warns(DeprecationWarning, match="max_tokens_before_summary"):
        mw = SummarizationMiddleware(summarizer(), max_tokens_before_summary=5)
    assert mw.conditions == (TriggerCondition(tokens=5),)
    with pytest.warns(DeprecationWarning, match="messages_to_keep"):
        mw = SummarizationMiddleware(summarizer(), trigger={"messages": 2}, messages_to_keep=1)
    assert mw.keeping == Keep(messages=1)
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(chat(2))
    assert [m.text for m in agent.model.requests[0].messages[1:]] == ["answer 2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SummarizationMiddleware(summarizer(), trigger={"messages": 2})


def test_tokens_are_not_counted_when_no_message_condition_can_hold(make_agent: Any) -> None:
    counted: list[int] = []

    def counter(messages: Sequence[AnyMessage]) -> int:
        counted.append(len(messages))
        return 10**6

    mw = SummarizationMiddleware(
        summarizer(), trigger={"messages": 50, "tokens": 10}, token_counter=counter
    )
    agent = make_agent(["ok"], middleware=[mw])
    agent.invoke(chat(2))
    assert counted == []
