"""``redact``, ``mask`` and ``hash`` with ``apply_to_output`` stream tool-call arguments as
they stream text: a UI showing a call being written gets each argument fragment as soon
as no detection can still change it, redacted, not the whole call when the answer ends.
What is held is the run of the last characters a value of the type may still hold
(``jane@exa`` of ``"to": "jane@exa``), for the text and each string value alike. The
fragments add up to the arguments the tool gets and ``result.messages`` shows, each
string value redacted exactly as the whole answer's is, however the provider cut them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pii_streams import (
    Paced,
    arguments,
    calls_of,
    openai_chunk,
    part,
    received,
    send_mail,
    stored_calls,
    streamed_run,
)

import plait
from plait.errors import PIIDetectionError
from plait.messages import AIMessage, AIMessageChunk, ToolCallChunk, parse_tool_call
from plait.models import ScriptedChatModel
from plait.models.openai import OpenAIChatModel
from plait.testing import ReplayServer
from plait.types import ModelRequest
from plait_pii import PIIMiddleware
from plait_pii._detectors import BUILTIN, tails
from plait_pii._walk import map_strings

JANE, LI = "jane@example.com", "li@example.cn"
REQUEST = ModelRequest(model=ScriptedChatModel(), messages=())
STRATEGIES = ["redact", "mask", "hash"]


def output(strategy: str, pii_type: str = "email", **options: Any) -> PIIMiddleware:
    return PIIMiddleware(
        pii_type, strategy=strategy, apply_to_input=False, apply_to_output=True, **options
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_argument_fragments_are_redacted_as_they_stream(strategy: str, use_async: bool) -> None:
    """Two calls written at once (fragments interleaved by index), addresses cut by the
    fragments' ends: each fragment reaches the caller, redacted, before the model writes
    the next, less only the run a value may still continue (``hi`` may become
    ``hi@x.io``); the tool runs with the arguments the caller was shown."""
    received.clear()
    pii = output(strategy)
    jane, li = pii.redact(JANE), pii.redact(LI)
    pieces = [
        (AIMessageChunk("Writing."), {}),
        (part(0, "", "c1", "send_mail"), {0: ""}),
        (part(0, '{"to": "jane@exa'), {0: '{"to": "'}),
        (part(1, '{"data": {"k": "see li@exam', "c2", "save"), {1: '{"data": {"k": "see '}),
        (part(0, 'mple.com", "body": "hi'), {0: f'{{"to": "{jane}", "body": "'}),
        (part(1, 'ple.cn"}}'), {1: f'{{"data": {{"k": "see {li}"}}}}'}),
        (part(0, ', from li@example.cn"}'), {0: f'{{"to": "{jane}", "body": "hi, from {li}"}}'}),
    ]
    got: dict[int, str] = {}
    model = Paced(pieces, got)
    chunks, result, agent = streamed_run(model, "mail them", got, use_async, [pii])
    assert model.late == []
    expected = [{"to": jane, "body": f"hi, from {li}"}, {"data": {"k": f"see {li}"}}]
    assert [json.loads(got[0]), json.loads(got[1])] == [c.args for c in calls_of(result)]
    assert [c.args for c in calls_of(result)] == expected
    assert [c.args for c in stored_calls(agent)] == expected
    assert sorted(received) == [("save", expected[1]), ("send_mail", expected[0])]
    assert [(p.index, p.id, p.name, p.args) for c in chunks for p in c.tool_call_chunks] == [
        (0, "c1", "send_mail", ""),
        (0, None, None, '{"to": "'),
        (1, "c2", "save", '{"data": {"k": "see '),
        (0, None, None, f'{jane}", "body": "'),
        (1, None, None, f'{li}"}}}}'),
        (0, None, None, f'hi, from {li}"}}'),
    ]


def test_text_and_arguments_hold_the_same_tail() -> None:
    """Ordering, not timing: each chunk's text and argument fragment leave before the
    model makes the next, less the run of characters a value of the type may still hold
    (for cards digits and their separators, ``.5`` after one), text and string values
    alike; a number outside strings waits for the comma that ends it."""
    pii = output("mask", "credit_card")
    log: list[str] = []

    def model() -> Iterator[AIMessageChunk]:
        for text, args in [
            ("Using 4111 1111", '{"card": "4111 1111'),
            (" 1111 1111 ok", ' 1111 1111 ok", "n": 12'),
            ("", '3, "x": "pay now"}'),
        ]:
            log.append(f"model: {text!r} {args!r}")
            yield AIMessageChunk(text, tool_call_chunks=[ToolCallChunk(0, args=args)])

    for chunk in pii.transform_model_stream(model(), REQUEST):
        log.append(f"shown: {chunk.content!r} {chunk.tool_call_chunks[0].args!r}")
    assert log == [
        "model: 'Using 4111 1111' '{\"card\": \"4111 1111'",
        "shown: 'Using' '{\"card\": \"'",
        "model: ' 1111 1111 ok' ' 1111 1111 ok\", \"n\": 12'",
        "shown: ' **** **** **** 1111 ok' '**** **** **** 1111 ok\", \"n\": '",
        "model: '' '3, \"x\": \"pay now\"}'",
        "shown: '' '123, \"x\": \"pay now\"}'",
    ]


# -- a real provider stream ------------------------------------------------------------------


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_provider_stream_shows_redacted_arguments_before_the_answer_ends(
    replay_server: ReplayServer, strategy: str, use_async: bool
) -> None:
    """Chat Completions over loopback HTTP: the redacted argument fragments reach the
    caller before the chunk that ends the answer (its finish reason), in the order the
    provider sent them; the value cut in two is redacted whole."""
    received.clear()
    replay_server.openai_stream(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            arguments(0, "", id="call_1", name="send_mail"),
            arguments(0, '{"to": "jane@exa'),
            arguments(0, 'mple.com", "body": "hi there'),
            arguments(0, '"}'),
            openai_chunk({}, finish="tool_calls"),
        ],
        split=7,
    )
    replay_server.openai_stream(
        [openai_chunk({"content": "done"}), openai_chunk({}, finish="stop")], split=7
    )
    pii = output(strategy)
    model = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test", base_url=replay_server.url + "/v1")
    got: dict[int, str] = {}
    chunks, result, _ = streamed_run(model, "mail jane", got, use_async, [pii])
    events = [
        "end" if c.response_metadata.get("finish_reason") else p.args
        for c in chunks
        for p in (c.tool_call_chunks or [ToolCallChunk(0)])
        if p.args or c.response_metadata.get("finish_reason")
    ]
    jane = pii.redact(JANE)
    assert events == ['{"to": "', f'{jane}", "body": "hi ', 'there"}', "end", "end"]
    assert json.loads(got[0]) == calls_of(result)[0].args == {"to": jane, "body": "hi there"}
    assert received == [("send_mail", {"to": jane, "body": "hi there"})]
    assert JANE not in json.dumps(replay_server.requests[1].body["messages"])


# -- whatever the cuts -------------------------------------------------------------------------

VALUES = [
    "jane.doe@example.com",
    "ivan@почта.рф",
    "jane%40example.com",
    "ftp://me@host.com/x",
    "https://ab!ab!ab!ab!ab!ab!ab!ab!ab!ab!ab!ab!x:pw@host.com/p",  # no address
    "x@y.method(",
    "4111 1111 1111 1111",
    "4111-1111-1111-1111.5",
    "378282246310005",
    "10.0.0.254",
    "10.0.0.1x",
    "version 1.2.3.4",
    "2001:db8::8a2e:370:7334",
    "00:1A:2B:3C:4D:5E",
    "https://example.com/a/b?c=d",
    "example.org/path.",
    "555-1234",
]
WORDS = ["the", "at", "value:", ",", ".", "\n", 'q"uote', "back\\slash", "über", "请", "，"]
TYPES = ["email", "credit_card", "ip", "mac_address", "url", "phone"]
PHONE = r"\d{3}-\d{4}"
"""A detector pii knows nothing of: it holds ``LOOKBACK`` characters."""

texts = st.lists(st.sampled_from(VALUES + WORDS), max_size=8).map(" ".join)
values = st.recursive(
    texts | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


def middleware(pii_type: str, strategy: str) -> PIIMiddleware:
    return output(strategy, pii_type, **({"detector": PHONE} if pii_type == "phone" else {}))


def cut(raw: str, cuts: list[int]) -> list[str]:
    pieces, at, turn = [], 0, 0
    while at < len(raw):
        size = cuts[turn % len(cuts)]
        pieces.append(raw[at : at + size])
        at, turn = at + size, turn + 1
    return pieces


def streamed_arguments(pii: PIIMiddleware, raw: str, cuts: list[int]) -> str:
    chunks = [AIMessageChunk(tool_call_chunks=[ToolCallChunk(0, args=p)]) for p in cut(raw, cuts)]
    out = pii.transform_model_stream(iter(chunks), REQUEST)
    return "".join(p.args for c in out for p in c.tool_call_chunks)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(texts, values, max_size=4),
    st.sampled_from(TYPES),
    st.sampled_from(STRATEGIES),
    st.booleans(),
    st.lists(st.integers(1, 9), min_size=1, max_size=20),
)
def test_the_fragments_add_up_to_the_arguments_redacted_whole_however_cut(
    args: dict[str, Any], pii_type: str, strategy: str, ascii_only: bool, cuts: list[int]
) -> None:
    """Whatever the cuts, the streamed text is the same, and it parses to the model's
    arguments with each string value redacted as the whole answer's is (keys kept):
    what ``result.messages`` shows and the tool gets."""
    pii = middleware(pii_type, strategy)
    raw = json.dumps(args, ensure_ascii=ascii_only)
    streamed = streamed_arguments(pii, raw, cuts)
    assert streamed == streamed_arguments(pii, raw, [len(raw)])
    assert json.loads(streamed) == map_strings(args, pii.redact)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.dictionaries(texts, values, max_size=3), min_size=1, max_size=3),
    texts,
    st.sampled_from(TYPES),
    st.sampled_from(STRATEGIES),
    st.lists(st.integers(1, 9), min_size=1, max_size=20),
    st.randoms(use_true_random=False),
)
def test_interleaved_calls_and_text_each_add_up_to_their_redacted_whole(
    calls: list[dict[str, Any]],
    text: str,
    pii_type: str,
    strategy: str,
    cuts: list[int],
    rng: Any,
) -> None:
    """Fragments of several calls and of the text, interleaved at random: each call's
    fragments add up to its arguments redacted, the text to its text redacted, and each
    call's first fragment keeps its id and name."""
    streams = [[("text", piece) for piece in cut(text, cuts)]]
    for index, args in enumerate(calls):
        streams.append([(index, "")] + [(index, p) for p in cut(json.dumps(args), cuts)])
    chunks = []
    while any(streams):
        pieces = rng.choice([s for s in streams if s])
        where, piece = pieces.pop(0)
        if where == "text":
            chunks.append(AIMessageChunk(piece))
            continue
        first = piece == "" and not any(
            p.index == where for c in chunks for p in c.tool_call_chunks
        )
        start = (f"c{where}", f"tool{where}") if first else (None, None)
        chunks.append(
            AIMessageChunk(tool_call_chunks=[ToolCallChunk(where, start[0], start[1], piece)])
        )
    pii = middleware(pii_type, strategy)
    out = list(pii.transform_model_stream(iter(chunks), REQUEST))
    assert "".join(c.content for c in out) == pii.redact(text)
    for index, args in enumerate(calls):
        parts = [p for c in out for p in c.tool_call_chunks if p.index == index]
        assert (parts[0].id, parts[0].name) == (f"c{index}", f"tool{index}")
        assert json.loads("".join(p.args for p in parts)) == map_strings(args, pii.redact)


def test_no_value_holds_a_character_that_ends_its_type_s_run() -> None:
    """The rule a stream holds by: a character the type's ``Tail`` breaks on is in no
    value the detector finds (so no value can reach back across it), checked on every
    sample value of the type."""
    for pii_type, find in BUILTIN.items():
        tail = tails()[pii_type]
        found = [m.text for value in VALUES for m in find(f"see {value} now")]
        assert found, pii_type
        for value in found:
            breaks = [
                c
                for c in value
                if tail.ascii_breaks.fullmatch(c) and (c.isascii() or tail.breaks(c))
            ]
            assert breaks == [], (pii_type, value)


# -- arguments that are not JSON, and block -----------------------------------------------------


def run(model: Any, streamed: bool, pii: PIIMiddleware) -> tuple[list[AIMessageChunk], Any, Any]:
    """One run, streamed (``stream_mode="messages"``) or invoked."""
    if streamed:
        return streamed_run(model, "mail them", {}, False, [pii])
    agent = plait.create_agent(model, tools=[send_mail], checkpointer="memory", middleware=[pii])
    return [], agent.invoke("mail them", thread_id="t"), agent


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_streamed_run_ends_as_the_same_run_invoked(strategy: str) -> None:
    """The scripted model streams a call's arguments in two halves, the cut inside an
    address: the run streamed and the run invoked give the tool, ``result.messages`` and
    the thread the same redacted arguments and text."""
    call = plait.ToolCall("send_mail", {"to": JANE, "body": "hi"}, "c1")
    raw = json.dumps(call.args)
    assert raw.index(JANE) < len(raw) // 2 < raw.index(JANE) + len(JANE)  # the halves cut it
    answer = AIMessage(f"mailing {LI}", tool_calls=[call])
    ends = []
    for streamed in (True, False):
        received.clear()
        _, result, agent = run(ScriptedChatModel([answer, "done"]), streamed, output(strategy))
        ends.append((received[:], result.messages[1], agent.get_state("t")["messages"][1]))
    assert ends[0] == ends[1]
    pii = output(strategy)
    assert ends[0][0] == [("send_mail", {"to": pii.redact(JANE), "body": "hi"})]
    assert ends[0][1].text == f"mailing {pii.redact(LI)}"


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "invoked"])
def test_arguments_that_are_not_json_keep_no_value(streamed: bool) -> None:
    """A value the model wrote outside a string (``{"to": jane@example.com}``) is redacted
    where it stands, and the kernel's report of the arguments, which quotes them, holds
    no value either, streamed or not."""
    raw = '{"to": jane@example.com, "body": "hi li@example.cn", "n": 7}'
    answer = AIMessage("", tool_calls=[parse_tool_call("send_mail", raw, "c1")])
    pieces = [(part(0, raw[:12], "c1", "send_mail"), {}), (part(0, raw[12:]), {})]
    model = Paced(pieces, {}) if streamed else ScriptedChatModel([answer, "done"])
    chunks, result, agent = run(model, streamed, output("redact"))
    shown = "".join(p.args for c in chunks for p in c.tool_call_chunks)
    if streamed:
        assert shown == '{"to": [REDACTED_EMAIL], "body": "hi [REDACTED_EMAIL]", "n": 7}'
    (call,) = calls_of(result)
    assert call.error is not None and "not valid JSON" in call.error
    assert "[REDACTED_EMAIL]" in call.error
    everything = repr(agent.get_state("t")["messages"]) + repr(result.messages)
    assert re.findall(r"\w+@example\.\w+", everything) == []


def test_block_sends_what_came_before_the_value_and_nothing_of_it() -> None:
    """``block`` streams the same way: the fragments before the value leave, the value
    is held until it is whole, then the run stops."""
    pii = output("block")
    chunks = [
        part(0, p, *(("c1", "send_mail") if i == 0 else ()))
        for i, p in enumerate(['{"body": "hello there, ', "write to jane@exa", 'mple.com"}'])
    ]
    shown: list[str] = []
    with pytest.raises(PIIDetectionError, match="1 instance of email in the model output"):
        for chunk in pii.transform_model_stream(iter(chunks), REQUEST):
            shown.extend(p.args for p in chunk.tool_call_chunks)
    assert shown == ['{"body": "hello there, ', "write to "]
