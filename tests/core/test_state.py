"""State updates: the message reducer, keyed values, scopes and ownership."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import plait
from plait.errors import ConfigError
from plait.messages import REMOVE_ALL, AIMessage, HumanMessage, RemoveMessage
from plait.testing import transcript


def _agent_with_before_model(make_agent: Any, update: Any, responses: Any = ("ok",)) -> Any:
    @plait.before_model
    def edit(state: Any) -> Any:
        return update(state) if callable(update) else update

    return make_agent(list(responses), middleware=[edit])


def test_messages_are_appended(make_agent: Any) -> None:
    agent = _agent_with_before_model(make_agent, {"messages": [HumanMessage("extra")]})
    result = agent.invoke("first")
    assert transcript(result.messages) == [("human", "first"), ("human", "extra"), ("ai", "ok")]


def test_same_id_replaces_in_place(make_agent: Any) -> None:
    original = HumanMessage("secret", id="m1")

    def redact(state: Any) -> Any:
        return {"messages": [HumanMessage("[redacted]", id="m1")]}

    agent = _agent_with_before_model(make_agent, redact)
    result = agent.invoke([original, HumanMessage("second")])

    assert transcript(result.messages)[:2] == [("human", "[redacted]"), ("human", "second")]
    assert agent.model.requests[0].messages[0].text == "[redacted]"


def test_remove_message_deletes_one(make_agent: Any) -> None:
    agent = _agent_with_before_model(make_agent, {"messages": [RemoveMessage("drop")]})
    result = agent.invoke([HumanMessage("keep"), HumanMessage("gone", id="drop")])
    assert transcript(result.messages) == [("human", "keep"), ("ai", "ok")]


def test_remove_all_clears_first(make_agent: Any) -> None:
    agent = _agent_with_before_model(
        make_agent, {"messages": [RemoveMessage(REMOVE_ALL), HumanMessage("fresh start")]}
    )
    result = agent.invoke([HumanMessage("a"), HumanMessage("b")])
    assert transcript(result.messages) == [("human", "fresh start"), ("ai", "ok")]


def test_removing_an_unknown_id_names_the_middleware(make_agent: Any) -> None:
    agent = _agent_with_before_model(make_agent, {"messages": [RemoveMessage("nope")]})
    with pytest.raises(ValueError, match=r"edit: RemoveMessage\('nope'\): no message has that id"):
        agent.invoke("hi")


def test_replace_and_remove_survive_the_checkpoint(make_agent: Any) -> None:
    calls = {"n": 0}

    def first_run_only(state: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            return {"messages": [RemoveMessage("b"), HumanMessage("A!", id="a")]}
        return None

    agent = _agent_with_before_model(make_agent, first_run_only, ["one", "two"])
    agent.invoke([HumanMessage("a", id="a"), HumanMessage("b", id="b")], thread_id="t")
    result = agent.invoke("again", thread_id="t")

    expected = [("human", "A!"), ("ai", "one"), ("human", "again"), ("ai", "two")]
    assert transcript(result.messages) == expected
    assert transcript(agent.get_state("t")["messages"]) == expected


def test_reducer_merges_and_plain_keys_replace(make_agent: Any) -> None:
    @attrs.frozen
    class Tally(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {
                "seen": plait.StateField(default=[], reducer=lambda old, new: old + new),
                "last": plait.StateField(default=None),
            }

        def before_model(self, state: Any) -> dict[str, Any]:
            return {"seen": [len(state["messages"])], "last": len(state["messages"])}

    agent = make_agent(["one", "two"], middleware=[Tally()])
    agent.invoke("hi", thread_id="t")
    result = agent.invoke("again", thread_id="t")

    assert result.state["seen"] == [1, 3]
    assert result.state["last"] == 3


def test_run_scope_resets_each_run_thread_scope_persists(make_agent: Any) -> None:
    @attrs.frozen
    class Counts(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {
                "per_run": plait.StateField(default=0, scope="run"),
                "per_thread": plait.StateField(default=0),
            }

        def before_model(self, state: Any) -> dict[str, Any]:
            return {"per_run": state["per_run"] + 1, "per_thread": state["per_thread"] + 1}

    agent = make_agent(["a", "b"], middleware=[Counts()])
    agent.invoke("1", thread_id="t")
    result = agent.invoke("2", thread_id="t")

    assert (result.state["per_run"], result.state["per_thread"]) == (1, 2)


def test_two_classes_claiming_one_key_is_a_config_error(make_agent: Any) -> None:
    @attrs.frozen
    class First(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {"files": plait.StateField(default={})}

    @attrs.frozen
    class Second(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {"files": plait.StateField(default={})}

    with pytest.raises(ConfigError, match="state key 'files' is declared by both First and Second"):
        make_agent(["ok"], middleware=[First(), Second()])


def test_shared_keys_with_equal_declarations_are_allowed(make_agent: Any) -> None:
    field = plait.StateField(default={}, shared=True)

    @attrs.frozen
    class First(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {"files": field}

    @attrs.frozen
    class Second(plait.Middleware):
        def state_fields(self) -> dict[str, plait.StateField]:
            return {"files": field}

    agent = make_agent(["ok"], middleware=[First(), Second()])
    assert agent.invoke("hi").state["files"] == {}


def test_ai_message_from_hook_keeps_its_id(make_agent: Any) -> None:
    agent = _agent_with_before_model(make_agent, None)
    result = agent.invoke([HumanMessage("hi"), AIMessage("earlier", id="x")])
    assert [m.id for m in result.messages][1] == "x"
