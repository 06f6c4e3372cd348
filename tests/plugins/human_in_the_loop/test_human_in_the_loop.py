"""``human_in_the_loop``: one interrupt per model turn, the four decisions, the checks that
stop a bad resume before anything runs, build-time errors, and the async path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

import plait
from plait.errors import CheckpointerRequiredError, ConfigError, FieldError
from plait.messages import AIMessage, ToolCall, ToolMessage
from plait.testing import ai, call, scripted, transcript
from plait_human_in_the_loop import (
    HumanInTheLoopError,
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
)

ran: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


@plait.tool
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: the recipient's address.
        body: the text.
    """
    ran.append(("send_email", {"to": to, "body": body}))
    return f"sent to {to}"


@plait.tool
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: the file.
    """
    ran.append(("delete_file", {"path": path}))
    return f"deleted {path}"


@plait.tool
def search(q: str) -> str:
    """Search the web.

    Args:
        q: the query.
    """
    ran.append(("search", {"q": q}))
    return f"results for {q}"


TOOLS = [send_email, delete_file, search]
EMAIL = call("send_email", "c_mail", to="ann@example.com", body="hi")
DELETE = call("delete_file", "c_del", path="/tmp/draft.txt")
SEARCH = call("search", "c_search", q="plait")


def tool_messages(messages: list[Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def hitl(**interrupt_on: Any) -> HumanInTheLoopMiddleware:
    return HumanInTheLoopMiddleware(interrupt_on=interrupt_on)


def resume(*decisions: Mapping[str, Any]) -> plait.Command:
    return plait.Command(resume={"decisions": list(decisions)})


# -- the interrupt -------------------------------------------------------------------------


def test_one_interrupt_lists_every_reviewed_call_in_the_documented_shape(
    make_agent: Any,
) -> None:
    agent = make_agent(
        [ai("", EMAIL, SEARCH, DELETE), "done"],
        tools=TOOLS,
        middleware=[
            hitl(
                send_email=True,
                delete_file={"allowed_decisions": ["approve", "reject"]},
                search=False,
            )
        ],
    )
    result = agent.invoke("tidy up", thread_id="t")
    assert ran == []  # nothing runs while the review is pending, not even search
    assert len(result.interrupts) == 1
    value = result.interrupts[0].value
    assert value == {
        "action_requests": [
            {
                "name": "send_email",
                "args": {"to": "ann@example.com", "body": "hi"},
                "description": "Tool execution requires approval\n\nTool: send_email\n"
                'Args: {"to": "ann@example.com", "body": "hi"}',
            },
            {
                "name": "delete_file",
                "args": {"path": "/tmp/draft.txt"},
                "description": "Tool execution requires approval\n\nTool: delete_file\n"
                'Args: {"path": "/tmp/draft.txt"}',
            },
        ],
        "review_configs": [
            {
                "action_name": "send_email",
                "allowed_decisions": ["approve", "edit", "reject", "respond"],
            },
            {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]},
        ],
    }
    assert json.loads(json.dumps(value)) == value


def test_approve_runs_the_call_and_unreviewed_calls_run_too(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", EMAIL, SEARCH), "done"], tools=TOOLS, middleware=[hitl(send_email=True)]
    )
    agent.invoke("mail", thread_id="t")
    result = agent.invoke(resume({"type": "approve"}), thread_id="t")
    assert sorted(name for name, _ in ran) == ["search", "send_email"]
    answers = tool_messages(result.messages)
    assert answers["c_mail"].text == "sent to ann@example.com"
    assert answers["c_search"].text == "results for plait"
    assert result.text == "done"
    assert result.interrupts == []


def test_no_review_needed_means_no_interrupt(make_agent: Any) -> None:
    agent = make_agent([ai("", SEARCH), "done"], tools=TOOLS, middleware=[hitl(send_email=True)])
    result = agent.invoke("look it up", thread_id="t")
    assert result.interrupts == []
    assert ran == [("search", {"q": "plait"})]


def test_description_prefix_and_custom_descriptions(make_agent: Any) -> None:
    seen: list[tuple[ToolCall, Any, Any]] = []

    def describe(tool_call: ToolCall, state: Mapping[str, Any], runtime: plait.Runtime) -> str:
        seen.append((tool_call, state, runtime))
        return f"Delete {tool_call.args['path']} on thread {runtime.thread_id}?"

    agent = make_agent(
        [ai("", EMAIL, DELETE, SEARCH), "done"],
        tools=TOOLS,
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "send_email": {"description": "An email is about to leave."},
                    "delete_file": InterruptOnConfig(description=describe),
                    "search": True,
                },
                description_prefix="Please check",
            )
        ],
    )
    value = agent.invoke("go", thread_id="t9").interrupts[0].value
    assert [r["description"] for r in value["action_requests"]] == [
        "An email is about to leave.",
        "Delete /tmp/draft.txt on thread t9?",
        'Please check\n\nTool: search\nArgs: {"q": "plait"}',
    ]
    tool_call, state, _runtime = seen[0]
    assert tool_call == DELETE
    assert state["messages"][-1].tool_calls[1] == DELETE


def test_when_predicate_decides_per_call(make_agent: Any) -> None:
    def outside(tool_call: ToolCall, state: Mapping[str, Any], runtime: plait.Runtime) -> bool:
        assert isinstance(state["messages"][-1], AIMessage)
        assert runtime.thread_id == "t"
        return not str(tool_call.args["to"]).endswith("@example.com")

    inside = call("send_email", "c_in", to="bob@example.com", body="x")
    external = call("send_email", "c_out", to="eve@elsewhere.org", body="y")
    agent = make_agent(
        [ai("", inside, external), "done"],
        tools=TOOLS,
        middleware=[hitl(send_email={"when": outside})],
    )
    result = agent.invoke("mail both", thread_id="t")
    assert [r["args"]["to"] for r in result.interrupts[0].value["action_requests"]] == [
        "eve@elsewhere.org"
    ]
    agent.invoke(resume({"type": "reject"}), thread_id="t")
    assert ran == [("send_email", {"to": "bob@example.com", "body": "x"})]


# -- decisions -----------------------------------------------------------------------------


def test_when_may_be_langchains_one_argument_predicate(make_agent: Any) -> None:
    # LangChain 1.5 calls when(request); it used to be called with three arguments here
    # and fail with a TypeError
    seen: list[Any] = []

    def only_outside(request: Any) -> bool:
        seen.append(request)
        return not request.tool_call["args"]["to"].endswith("@example.com")

    inside = call("send_email", "c_in", to="ann@example.com", body="hi")
    outside = call("send_email", "c_out", to="eve@elsewhere.org", body="hi")
    agent = make_agent(
        [ai("", inside, outside), "done"],
        tools=TOOLS,
        middleware=[hitl(send_email={"when": only_outside})],
    )
    paused = agent.invoke("mail", thread_id="t")
    requests = paused.interrupts[0].value["action_requests"]
    assert [r["args"]["to"] for r in requests] == ["eve@elsewhere.org"]
    assert [r.tool.name for r in seen] == ["send_email", "send_email"]
    assert seen[0].state["messages"][0].text == "mail"


def test_edit_runs_the_new_args_keeps_the_original_call_and_tells_the_model(
    make_agent: Any,
) -> None:
    agent = make_agent([ai("", EMAIL), "done"], tools=TOOLS, middleware=[hitl(send_email=True)])
    agent.invoke("mail", thread_id="t")
    result = agent.invoke(
        resume(
            {
                "type": "edit",
                "edited_action": {
                    "name": "send_email",
                    "args": {"to": "ann@example.com", "body": "Hello Ann"},
                },
            }
        ),
        thread_id="t",
    )
    assert ran == [("send_email", {"to": "ann@example.com", "body": "Hello Ann"})]
    ai_message = next(m for m in result.messages if isinstance(m, AIMessage) and m.tool_calls)
    assert ai_message.tool_calls[0].args == {"to": "ann@example.com", "body": "hi"}
    answer = tool_messages(result.messages)["c_mail"]
    assert answer.status == "success"
    assert answer.name == "send_email"
    assert answer.text.startswith("Note: a human reviewer replaced your call before it ran.")
    assert '"body": "Hello Ann"' in answer.text
    assert "do not issue the original call again" in answer.text
    assert answer.text.endswith("sent to ann@example.com")
    assert answer.metadata["human_in_the_loop"]["original"]["args"]["body"] == "hi"
    # the model's next request carries that note
    assert agent.model.requests[-1].messages[-1].text == answer.text


EDIT_BODY = {
    "type": "edit",
    "edited_action": {"args": {"to": "ann@example.com", "body": "Hello Ann"}},
}


def test_edit_notice_leads_the_note_and_none_leaves_the_result_as_is(make_agent: Any) -> None:
    # LangChain 1.5's edit_notice: its own text, or None for no note (it was a TypeError)
    custom = make_agent(
        [ai("", EMAIL), "done"],
        tools=TOOLS,
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={"send_email": True}, edit_notice="A reviewer changed this call."
            )
        ],
    )
    custom.invoke("mail", thread_id="t")
    answer = tool_messages(custom.invoke(resume(EDIT_BODY), thread_id="t").messages)["c_mail"]
    assert answer.text == (
        'A reviewer changed this call. It ran as send_email({"to": "ann@example.com", "body": '
        '"Hello Ann"}) instead of send_email({"to": "ann@example.com", "body": "hi"}); do not '
        "issue the original call again. The result of the call that ran:\n\n"
        "sent to ann@example.com"
    )
    quiet = make_agent(
        [ai("", EMAIL), "done"],
        tools=TOOLS,
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, edit_notice=None)],
    )
    quiet.invoke("mail", thread_id="t")
    answer = tool_messages(quiet.invoke(resume(EDIT_BODY), thread_id="t").messages)["c_mail"]
    assert answer.text == "sent to ann@example.com"
    assert answer.metadata["human_in_the_loop"]["edited"] is True
    with pytest.raises(
        ConfigError, match=r"option 'edit_notice': expected a string or None, got 3"
    ):
        make_agent(
            ["x"],
            tools=TOOLS,
            middleware=[
                ("human_in_the_loop", {"interrupt_on": {"send_email": True}, "edit_notice": 3})
            ],
        )


def test_edit_may_switch_to_another_tool(make_agent: Any) -> None:
    agent = make_agent([ai("", EMAIL), "done"], tools=TOOLS, middleware=[hitl(send_email=True)])
    agent.invoke("mail", thread_id="t")
    result = agent.invoke(
        resume(
            {"type": "edit", "edited_action": {"name": "search", "args": {"q": "ann's address"}}}
        ),
        thread_id="t",
    )
    assert ran == [("search", {"q": "ann's address"})]
    answer = tool_messages(result.messages)["c_mail"]
    assert "It ran as search(" in answer.text
    assert answer.text.endswith("results for ann's address")


def test_edit_with_args_the_tool_refuses_runs_nothing_and_the_run_stays_paused(
    make_agent: Any,
) -> None:
    agent = make_agent(
        [ai("", EMAIL, SEARCH), "done"], tools=TOOLS, middleware=[hitl(send_email=True)]
    )
    agent.invoke("mail", thread_id="t")
    with pytest.raises(HumanInTheLoopError) as info:
        agent.invoke(
            resume({"type": "edit", "edited_action": {"args": {"to": 5, "cc": "x"}}}),
            thread_id="t",
        )
    text = str(info.value)
    assert "the new arguments do not fit 'send_email'" in text
    assert "$.to: expected a string, got 5" in text
    assert "body" in text and "cc" in text
    assert "Nothing was run." in text
    assert ran == []
    # the same interrupt is still pending: answer it properly
    result = agent.invoke(resume({"type": "approve"}), thread_id="t")
    assert sorted(name for name, _ in ran) == ["search", "send_email"]
    assert result.text == "done"


def test_edit_to_a_tool_the_agent_lacks_is_an_error(make_agent: Any) -> None:
    agent = make_agent([ai("", EMAIL), "done"], tools=TOOLS, middleware=[hitl(send_email=True)])
    agent.invoke("mail", thread_id="t")
    with pytest.raises(HumanInTheLoopError, match="names tool 'fax', which the agent does not"):
        agent.invoke(
            resume({"type": "edit", "edited_action": {"name": "fax", "args": {}}}),
            thread_id="t",
        )
    assert ran == []


def test_reject_answers_with_an_error_telling_the_model_not_to_retry(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", EMAIL), "understood"], tools=TOOLS, middleware=[hitl(send_email=True)]
    )
    agent.invoke("mail", thread_id="t")
    result = agent.invoke(resume({"type": "reject", "message": "Ann is on leave"}), thread_id="t")
    assert ran == []
    answer = tool_messages(result.messages)["c_mail"]
    assert answer.status == "error"
    assert answer.name == "send_email"
    assert answer.text == (
        "A human reviewer rejected this call to 'send_email', so it was not run. Their "
        "reason: Ann is on leave. Do not call it again unless the user asks you to; carry on "
        "without it, or ask the user how to proceed."
    )
    # every call was answered, so the model is asked again and reads the rejection
    assert result.text == "understood"
    assert agent.model.requests[-1].messages[-1] == answer


def test_a_reason_ending_a_sentence_is_not_given_a_second_full_stop(make_agent: Any) -> None:
    agent = make_agent([ai("", EMAIL), "ok"], tools=TOOLS, middleware=[hitl(send_email=True)])
    agent.invoke("mail", thread_id="t")
    result = agent.invoke(resume({"type": "reject", "message": "Is Ann back? "}), thread_id="t")
    text = tool_messages(result.messages)["c_mail"].text
    assert "Their reason: Is Ann back? Do not call it again" in text


def test_reject_without_a_reason(make_agent: Any) -> None:
    agent = make_agent([ai("", EMAIL), "ok"], tools=TOOLS, middleware=[hitl(send_email=True)])
    agent.invoke("mail", thread_id="t")
    result = agent.invoke(resume({"type": "reject"}), thread_id="t")
    text = tool_messages(result.messages)["c_mail"].text
    assert text.startswith("A human reviewer rejected this call to 'send_email'")
    assert "Their reason" not in text


def test_respond_gives_the_humans_text_as_the_result(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", EMAIL, SEARCH), "ok"], tools=TOOLS, middleware=[hitl(send_email=True)]
    )
    agent.invoke("mail", thread_id="t")
    result = agent.invoke(
        resume({"type": "respond", "message": "I sent it myself."}), thread_id="t"
    )
    assert ran == [("search", {"q": "plait"})]
    answer = tool_messages(result.messages)["c_mail"]
    assert (answer.text, answer.status, answer.name) == (
        "I sent it myself.",
        "success",
        "send_email",
    )
    assert transcript(result.messages)[-1] == ("ai", "ok")


def test_mixed_decisions_are_matched_by_position(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", EMAIL, DELETE), "ok"],
        tools=TOOLS,
        middleware=[hitl(send_email=True, delete_file=True)],
    )
    agent.invoke("go", thread_id="t")
    result = agent.invoke(
        resume({"type": "reject"}, {"type": "approve"}),
        thread_id="t",
    )
    assert ran == [("delete_file", {"path": "/tmp/draft.txt"})]
    answers = tool_messages(result.messages)
    assert answers["c_mail"].status == "error"
    assert answers["c_del"].text == "deleted /tmp/draft.txt"


# -- bad resume values ---------------------------------------------------------------------


def test_wrong_number_of_decisions_runs_nothing(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", EMAIL, DELETE), "ok"],
        tools=TOOLS,
        middleware=[hitl(send_email=True, delete_file=True)],
    )
    agent.invoke("go", thread_id="t")
    with pytest.raises(HumanInTheLoopError) as info:
        agent.invoke(resume({"type": "approve"}), thread_id="t")
    assert str(info.value) == (
        "human_in_the_loop: $.decisions: expected a list of 2 decision(s), one per call "
        "awaiting review ('send_email', 'delete_file'), got [{'type': 'approve'}] (it has 1); "
        "give exactly one per call, in order. Nothing was run."
    )
    assert ran == []


def test_a_decision_the_tool_does_not_allow_runs_nothing(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", EMAIL, DELETE), "ok"],
        tools=TOOLS,
        middleware=[
            hitl(send_email=True, delete_file={"allowed_decisions": ["approve", "reject"]})
        ],
    )
    agent.invoke("go", thread_id="t")
    with pytest.raises(HumanInTheLoopError) as info:
        agent.invoke(
            resume(
                {"type": "approve"},
                {"type": "edit", "edited_action": {"args": {"path": "/tmp/other"}}},
            ),
            thread_id="t",
        )
    assert str(info.value) == (
        "human_in_the_loop: decision 2 (for 'delete_file'): $.type: expected one of "
        "'approve', 'reject' (the decisions this tool allows), got 'edit'. Nothing was run."
    )
    assert ran == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "approve",
            "human_in_the_loop: the resume value: expected {'decisions': [...]} with one "
            "decision per reviewed call ('send_email'), got 'approve'. Nothing was run.",
        ),
        (
            {"decision": []},
            "human_in_the_loop: the resume value: expected {'decisions': [...]} with one "
            "decision per reviewed call ('send_email'), got {'decision': []} ($.decisions: "
            "required, but missing; $: unknown key 'decision' (valid: decisions)). Nothing was "
            "run.",
        ),
        ({"decisions": [{"type": "aprove"}]}, "decision 1 (for 'send_email'): $.type"),
        ({"decisions": [{"type": "respond"}]}, "$.message"),
        (
            {"decisions": [{"type": "reject", "message": 3}]},
            "$.message: expected a string or None, got 3",
        ),
        ({"decisions": [{"type": "edit"}]}, "$.edited_action"),
    ],
)
def test_malformed_resume_values_are_precise_errors(
    make_agent: Any, answer: Any, expected: str
) -> None:
    agent = make_agent([ai("", EMAIL), "ok"], tools=TOOLS, middleware=[hitl(send_email=True)])
    agent.invoke("go", thread_id="t")
    with pytest.raises(HumanInTheLoopError) as info:
        agent.invoke(plait.Command(resume=answer), thread_id="t")
    assert expected in str(info.value)
    if expected.startswith("human_in_the_loop"):
        assert str(info.value) == expected
    assert ran == []


# -- names are compared exactly ------------------------------------------------------------


def test_a_misspelt_tool_name_is_not_run_and_not_reviewed(make_agent: Any) -> None:
    sneaky = call("Send_Email", "c_sneaky", to="eve@elsewhere.org", body="x")
    agent = make_agent([ai("", sneaky), "ok"], tools=TOOLS, middleware=[hitl(send_email=True)])
    result = agent.invoke("mail", thread_id="t")
    assert result.interrupts == []
    assert ran == []
    answer = tool_messages(result.messages)["c_sneaky"]
    assert answer.status == "error"
    assert "no tool named 'Send_Email'" in answer.text


def test_a_call_whose_arguments_are_not_json_is_not_reviewed(make_agent: Any) -> None:
    broken = ToolCall("send_email", {}, "c_broken", error="Expecting ',' delimiter")
    agent = make_agent([ai("", broken), "ok"], tools=TOOLS, middleware=[hitl(send_email=True)])
    result = agent.invoke("mail", thread_id="t")
    assert result.interrupts == []
    assert ran == []
    assert tool_messages(result.messages)["c_broken"].status == "error"


def test_arguments_the_tool_refuses_are_still_reviewed_and_an_edit_can_fix_them(
    make_agent: Any,
) -> None:
    bad = call("send_email", "c_bad", to=5, body="x")
    agent = make_agent([ai("", bad), "ok"], tools=TOOLS, middleware=[hitl(send_email=True)])
    paused = agent.invoke("mail", thread_id="t")
    assert [r["args"] for r in paused.interrupts[0].value["action_requests"]] == [
        {"to": 5, "body": "x"}
    ]
    fixed = {"type": "edit", "edited_action": {"args": {"to": "ann@example.com", "body": "x"}}}
    agent.invoke(resume(fixed), thread_id="t")
    assert ran == [("send_email", {"to": "ann@example.com", "body": "x"})]


# -- build time ----------------------------------------------------------------------------


def test_needs_a_checkpointer(make_agent: Any) -> None:
    with pytest.raises(CheckpointerRequiredError, match="needs a checkpointer"):
        make_agent(["x"], tools=TOOLS, middleware=[hitl(send_email=True)], checkpointer=None)
    assert issubclass(CheckpointerRequiredError, ConfigError)


def test_interrupt_on_naming_an_unknown_tool_fails_at_create_agent(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["x"], tools=TOOLS, middleware=[hitl(send_mail=True)])
    assert str(info.value) == (
        "plugin 'human_in_the_loop': option 'interrupt_on' names a tool the agent does not "
        "have: 'send_mail' (did you mean 'send_email'?); the agent's tools are: delete_file, "
        "search, send_email"
    )


def test_options_by_name_are_structured_strictly(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", DELETE), "ok"],
        tools=TOOLS,
        middleware=[
            (
                "human_in_the_loop",
                {
                    "interrupt_on": {
                        "delete_file": {"allowed_decisions": ["reject"], "description": "Sure?"}
                    }
                },
            )
        ],
    )
    value = agent.invoke("go", thread_id="t").interrupts[0].value
    assert value["action_requests"][0]["description"] == "Sure?"
    assert value["review_configs"][0]["allowed_decisions"] == ["reject"]
    with pytest.raises(ConfigError) as info:
        make_agent(
            ["x"],
            tools=TOOLS,
            middleware=[
                ("human_in_the_loop", {"interrupt_on": {"delete_file": {"allowed_decisions": []}}})
            ],
        )
    assert str(info.value) == (
        "plugin 'human_in_the_loop': option \"interrupt_on['delete_file'].allowed_decisions\": "
        "expected a non-empty list of decisions ('approve', 'edit', 'reject', 'respond'), "
        "got () (to never ask about a tool, map it to False)"
    )
    with pytest.raises(ConfigError) as info:
        make_agent(
            ["x"],
            tools=TOOLS,
            middleware=[("human_in_the_loop", {"interrupt_on": {"delete_file": "yes"}})],
        )
    assert str(info.value) == (
        "plugin 'human_in_the_loop': option \"interrupt_on['delete_file']\": expected a bool "
        "or a mapping of InterruptOnConfig's fields, got 'yes'"
    )
    with pytest.raises(ConfigError) as info:
        make_agent(
            ["x"], tools=TOOLS, middleware=[("human_in_the_loop", {"interrupt_on": {"": True}})]
        )
    assert str(info.value) == (
        "plugin 'human_in_the_loop': option 'interrupt_on': expected a mapping of tool names "
        "to a bool or a mapping of InterruptOnConfig's fields, got {'': True} ('' is not a "
        "tool name)"
    )


def test_bad_python_options_fail_on_construction() -> None:
    # A FieldError, as every middleware's own options raise (a ValueError too); its field is
    # the path of the entry at fault, as the same option given by name shows it.
    with pytest.raises(FieldError) as info:
        HumanInTheLoopMiddleware(interrupt_on={"x": {"allowed_decisions": ["skip"]}})
    assert info.value.field == "interrupt_on['x'].allowed_decisions[0]"
    assert str(info.value) == (
        "interrupt_on['x'].allowed_decisions[0]: expected one of 'approve', 'edit', "
        "'reject', 'respond', got 'skip'"
    )
    with pytest.raises(FieldError) as info:
        HumanInTheLoopMiddleware(interrupt_on={"x": 5})  # type: ignore[dict-item]
    assert info.value.field == "interrupt_on['x']"
    assert str(info.value) == (
        "interrupt_on['x']: expected a bool or a mapping of InterruptOnConfig's fields, got 5"
    )
    # ``when`` takes either predicate shape: each alternative is said once
    with pytest.raises(FieldError) as info:
        HumanInTheLoopMiddleware(interrupt_on={"x": {"when": 3}})  # type: ignore[dict-item]
    assert str(info.value) == (
        "interrupt_on['x'].when: expected a callable, a 'module:attr' string or None, got 3"
    )
    with pytest.raises(FieldError) as info:
        HumanInTheLoopMiddleware(interrupt_on=["x"])  # type: ignore[arg-type]
    assert str(info.value) == (
        "interrupt_on: expected a mapping of tool names to a bool or a mapping of "
        "InterruptOnConfig's fields, got ['x']"
    )
    # Several problems in one entry: the first named, the others after it (as an agent
    # file reports them).
    with pytest.raises(FieldError) as info:
        HumanInTheLoopMiddleware(
            interrupt_on={"x": {"allowed_decisions": ["skip"], "bogus": 1}, "y": True}
        )
    assert info.value.field == "interrupt_on['x'].allowed_decisions[0]"
    assert str(info.value) == (
        "interrupt_on['x'].allowed_decisions[0]: expected one of 'approve', 'edit', "
        "'reject', 'respond', got 'skip' (also interrupt_on['x']: unknown key 'bogus' "
        "(valid: allowed_decisions, description, when))"
    )
    with pytest.raises(ValueError) as info:
        InterruptOnConfig(allowed_decisions=("skip",))  # type: ignore[arg-type]
    assert str(info.value) == (
        "allowed_decisions: expected a non-empty list of decisions ('approve', 'edit', "
        "'reject', 'respond'), got ('skip',) ('skip' is not a decision)"
    )
    with pytest.raises(ValueError) as info:
        InterruptOnConfig(allowed_decisions=())
    assert str(info.value) == (
        "allowed_decisions: expected a non-empty list of decisions ('approve', 'edit', "
        "'reject', 'respond'), got () (to never ask about a tool, map it to False)"
    )


# -- async -----------------------------------------------------------------------------------


def test_async_pause_edit_and_resume(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", EMAIL, SEARCH), "done"], tools=TOOLS, middleware=[hitl(send_email=True)]
    )

    async def scenario() -> Any:
        paused = await agent.ainvoke("mail", thread_id="t")
        assert [r["name"] for r in paused.interrupts[0].value["action_requests"]] == ["send_email"]
        assert ran == []
        return await agent.ainvoke(
            resume({"type": "edit", "edited_action": {"args": {"to": "bo@x.org", "body": "b"}}}),
            thread_id="t",
        )

    result = asyncio.run(scenario())
    assert sorted(ran, key=lambda r: r[0]) == [
        ("search", {"q": "plait"}),
        ("send_email", {"to": "bo@x.org", "body": "b"}),
    ]
    assert tool_messages(result.messages)["c_mail"].text.startswith("Note: a human reviewer")
    assert result.text == "done"


def test_async_reject_goes_back_to_the_model() -> None:
    model = scripted(ai("", EMAIL), "fine")
    agent = plait.create_agent(
        model, TOOLS, middleware=[hitl(send_email=True)], checkpointer="memory"
    )

    async def scenario() -> Any:
        await agent.ainvoke("mail", thread_id="t")
        with pytest.raises(HumanInTheLoopError):
            await agent.ainvoke(resume(), thread_id="t")
        return await agent.ainvoke(resume({"type": "reject", "message": "no"}), thread_id="t")

    result = asyncio.run(scenario())
    assert ran == []
    assert tool_messages(result.messages)["c_mail"].status == "error"
    assert result.text == "fine"
