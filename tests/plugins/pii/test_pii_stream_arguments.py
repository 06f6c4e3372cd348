"""``pseudonymize`` streams tool-call arguments as it streams text: a UI showing a call
being written gets each argument fragment restored as soon as no placeholder can still
continue it, not the whole call when the answer ends. The fragments add up to the
arguments the tool gets and ``result.messages`` shows, however the provider cut them,
with a restored value written as JSON string text (its quotes and backslashes escaped),
keys kept as written, several calls apart by index."""

from __future__ import annotations

import json
import re
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
    stored_calls,
    streamed_run,
)

from plait.messages import AIMessageChunk, ToolCallChunk
from plait.models import ScriptedChatModel
from plait.models.openai import OpenAIChatModel
from plait.testing import ReplayServer
from plait.types import ModelRequest
from plait_pii import PIIMiddleware

JANE, LI = "jane@example.com", "li@example.cn"


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_argument_fragments_are_restored_as_they_stream(use_async: bool) -> None:
    """Two calls written at once (fragments interleaved by index), placeholders cut by
    the fragments' ends: each fragment reaches the caller, restored, before the model
    writes the next, less only a tail a placeholder may still continue."""
    received.clear()
    pieces = [
        (AIMessageChunk("Writing."), {}),
        (part(0, "", "c1", "send_mail"), {0: ""}),
        (part(0, '{"to": "<EMAI'), {0: '{"to": "'}),
        (part(1, '{"data": {"<EMAIL_1>": "<EM', "c2", "save"), {1: '{"data": {"<EMAIL_1>": "'}),
        (part(0, 'L_2>", "body": "hi <EMAIL_1'), {0: f'{{"to": "{LI}", "body": "hi '}),
        (part(1, 'AIL_2>"}}'), {1: f'{{"data": {{"<EMAIL_1>": "{LI}"}}}}'}),
        (part(0, '>, from <EMAIL_2>"}'), {0: f'{{"to": "{LI}", "body": "hi {JANE}, from {LI}"}}'}),
    ]
    got: dict[int, str] = {}
    model = Paced(pieces, got)
    chunks, result, agent = streamed_run(model, f"mail {JANE}, cc {LI}", got, use_async)
    assert model.late == []
    # the fragments add up to the arguments result.messages shows and the tools got
    shown = calls_of(result)
    assert [json.loads(got[0]), json.loads(got[1])] == [c.args for c in shown]
    assert shown[0].args == {"to": LI, "body": f"hi {JANE}, from {LI}"}
    assert shown[1].args == {"data": {"<EMAIL_1>": LI}}  # a key stays as the model wrote it
    assert sorted(received) == [
        ("save", {"data": {"<EMAIL_1>": LI}}),
        ("send_mail", {"to": LI, "body": f"hi {JANE}, from {LI}"}),
    ]
    # each call's start came with its id and name; no fragment shows a placeholder's piece
    assert [(p.index, p.id, p.name, p.args) for c in chunks for p in c.tool_call_chunks] == [
        (0, "c1", "send_mail", ""),
        (0, None, None, '{"to": "'),
        (1, "c2", "save", '{"data": {"<EMAIL_1>": "'),
        (0, None, None, f'{LI}", "body": "hi '),
        (1, None, None, f'{LI}"}}}}'),
        (0, None, None, f'{JANE}, from {LI}"}}'),
    ]
    # the thread and the model keep placeholders
    stored = [c.args for c in stored_calls(agent)]
    assert stored == [
        {"to": "<EMAIL_2>", "body": "hi <EMAIL_1>, from <EMAIL_2>"},
        {"data": {"<EMAIL_1>": "<EMAIL_2>"}},
    ]
    assert JANE not in json.dumps([m.text for m in model.requests[0].messages[1:]] + stored)


SECRET = 'C:\\Users\\jd "Jo"\nline 2'
"""A value whose quotes, backslashes and line break are escaped inside a JSON string."""


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_restored_value_is_escaped_as_json_string_text(use_async: bool) -> None:
    """A restored value with quotes and backslashes is written escaped, so the streamed
    text stays the JSON the tool gets; a placeholder the model wrote with escapes
    (``\\u003c``) is the placeholder it spells, as the parsed arguments read it."""
    received.clear()
    pii = PIIMiddleware("secret", detector=r"C:\\[^»]*", strategy="pseudonymize")
    escaped = "\\u003cSECRET_1\\u003e"
    pieces = [
        (
            part(0, '{"to": "x", "body": "see <SEC', "c1", "send_mail"),
            {0: '{"to": "x", "body": "see '},
        ),
        (
            part(0, "RET_1> or " + escaped[:3]),
            {0: '{"to": "x", "body": "see ' + json.dumps(SECRET)[1:-1] + " or "},
        ),
        (
            part(0, escaped[3:] + '"}'),
            {0: json.dumps({"to": "x", "body": f"see {SECRET} or {SECRET}"}, ensure_ascii=False)},
        ),
    ]
    got: dict[int, str] = {}
    model = Paced(pieces, got)
    _, result, agent = streamed_run(model, f"the file: {SECRET}»", got, use_async, [pii])
    assert model.late == []
    expected = {"to": "x", "body": f"see {SECRET} or {SECRET}"}
    assert json.loads(got[0]) == calls_of(result)[0].args == expected
    assert received == [("send_mail", expected)]
    stored = stored_calls(agent)[0].args
    assert stored == {"to": "x", "body": "see <SECRET_1> or <SECRET_1>"}


def test_arguments_that_are_not_json_stay_unparsable() -> None:
    """A bad escape passes as written: the kernel still reports the arguments. The
    report quotes them, so the thread keeps it with the placeholder and the caller reads
    it with the value."""
    pieces: list[tuple[AIMessageChunk, dict[int, str]]] = [
        (part(0, '{"to": "<EMAIL_1>", "body": "\\x"}', "c1", "send_mail"), {})
    ]
    got: dict[int, str] = {}
    model = Paced(pieces, got)
    _, result, agent = streamed_run(model, f"mail {JANE}", got, False)
    assert got[0] == f'{{"to": "{JANE}", "body": "\\x"}}'
    (call,) = calls_of(result)
    assert call.error is not None and "not valid JSON" in call.error and JANE in call.error
    (kept,) = stored_calls(agent)
    assert kept.error == call.error.replace(JANE, "<EMAIL_1>")
    assert JANE not in repr(model.requests[-1].messages[1:])


# -- a real provider stream ------------------------------------------------------------------


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("split", [None, 7])
def test_a_provider_stream_shows_restored_arguments_before_the_answer_ends(
    replay_server: ReplayServer, split: int | None, use_async: bool
) -> None:
    """Chat Completions over loopback HTTP: the restored argument fragments reach the
    caller before the chunk that ends the answer (its finish reason), in the order the
    provider sent them."""
    received.clear()
    replay_server.openai_stream(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            arguments(0, "", id="call_1", name="send_mail"),
            arguments(0, '{"to": "<EMA'),
            arguments(0, 'IL_1>", "body": "hi"}'),
            openai_chunk({}, finish="tool_calls"),
        ],
        split=split,
    )
    replay_server.openai_stream(
        [openai_chunk({"content": "done"}), openai_chunk({}, finish="stop")], split=split
    )
    model = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test", base_url=replay_server.url + "/v1")
    got: dict[int, str] = {}
    chunks, result, _ = streamed_run(model, f"mail {JANE}", got, use_async)
    first = chunks[: next(i for i, c in enumerate(chunks) if c.content == "done")]
    events = [
        "end" if c.response_metadata.get("finish_reason") else p.args
        for c in first
        for p in (c.tool_call_chunks or [ToolCallChunk(0)])
        if p.args or c.response_metadata.get("finish_reason")
    ]
    assert events == ['{"to": "', f'{JANE}", "body": "hi"}}', "end"]
    assert json.loads(got[0]) == calls_of(result)[0].args == {"to": JANE, "body": "hi"}
    assert received == [("send_mail", {"to": JANE, "body": "hi"})]
    assert "<EMAIL_1>" in json.dumps(replay_server.requests[1].body["messages"])


# -- however the fragments are cut --------------------------------------------------------------

TABLE = {"email": {JANE: 1, 'q"uote\\d@x.io': 2, "li@example.cn": 12}}
REQUEST = ModelRequest(model=ScriptedChatModel(), messages=(), state={"pii_pseudonyms": TABLE})
PLACEHOLDERS = ["<EMAIL_1>", "<EMAIL_2>", "<EMAIL_12>", "<EMAIL_7>", "<EMA", "<", "a < b"]
strings = st.lists(
    st.sampled_from(PLACEHOLDERS) | st.text('ab"\\\n😀é', max_size=3), max_size=5
).map("".join)
values = st.recursive(
    strings | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=8,
)


def restored_stream(raw: str, cuts: list[int]) -> str:
    chunks, at, turn = [], 0, 0
    while at < len(raw):
        size = cuts[turn % len(cuts)]
        chunks.append(AIMessageChunk(tool_call_chunks=[ToolCallChunk(0, args=raw[at : at + size])]))
        at, turn = at + size, turn + 1
    mw = PIIMiddleware("email", strategy="pseudonymize")
    out = mw.transform_model_stream(iter(chunks), REQUEST)
    return "".join(p.args for c in out for p in c.tool_call_chunks)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(strings, values, max_size=4),
    st.booleans(),
    st.booleans(),
    st.lists(st.integers(1, 9), min_size=1, max_size=20),
)
def test_the_fragments_add_up_to_the_restored_arguments_however_cut(
    args: dict[str, Any], ascii_only: bool, escape_angles: bool, cuts: list[int]
) -> None:
    """Whatever the cuts, the streamed text is the same, and it parses to the model's
    arguments with every placeholder of a string value restored (keys kept), as
    ``result.messages`` shows them; escapes (``\\u003c``, ``\\ud83d\\ude00``) included."""
    raw = json.dumps(args, ensure_ascii=ascii_only)
    if escape_angles:  # a '<' is only ever inside a string
        raw = raw.replace("<", "\\u003c")
    streamed = restored_stream(raw, cuts)
    assert streamed == restored_stream(raw, [len(raw) or 1])
    assert json.loads(streamed) == restored(args)


REAL = {f"<EMAIL_{number}>": value for value, number in TABLE["email"].items()}


def restored(value: Any) -> Any:
    """``value`` with the table's placeholders in its strings replaced, keys kept."""
    if isinstance(value, str):
        return re.sub(r"<EMAIL_\d+>", lambda m: REAL.get(m[0], m[0]), value)
    if isinstance(value, list):
        return [restored(item) for item in value]
    if isinstance(value, dict):
        return {key: restored(item) for key, item in value.items()}
    return value


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_two_pii_types_restore_fragments_that_carry_two_calls(use_async: bool) -> None:
    """Two pseudonymizing instances (an address, a value with quotes) restore one after
    the other, each reading the fragments the other wrote; a chunk carrying fragments of
    two calls (as a provider sending whole calls does) gives each its own."""
    received.clear()
    secret = PIIMiddleware("secret", detector=r"C:\\[^»]*", strategy="pseudonymize")
    email = PIIMiddleware("email", strategy="pseudonymize")
    both = AIMessageChunk(
        tool_call_chunks=[
            ToolCallChunk(0, "c1", "send_mail", '{"to": "<EMAIL_1>", "body": "<SECRET_'),
            ToolCallChunk(1, "c2", "save", '{"data": {"path": "<SECR'),
        ]
    )
    pieces = [
        (both, {0: f'{{"to": "{JANE}", "body": "', 1: '{"data": {"path": "'}),
        (part(1, 'ET_1>"}}'), {1: json.dumps({"data": {"path": SECRET}})}),
        (part(0, '1> for <EMAIL_1>"}'), {}),
    ]
    got: dict[int, str] = {}
    model = Paced(pieces, got)
    _, result, agent = streamed_run(model, f"{JANE}: {SECRET}»", got, use_async, [email, secret])
    assert model.late == []
    expected = [{"to": JANE, "body": f"{SECRET} for {JANE}"}, {"data": {"path": SECRET}}]
    assert [json.loads(got[0]), json.loads(got[1])] == [c.args for c in calls_of(result)]
    assert [c.args for c in calls_of(result)] == expected
    assert sorted(received) == [("save", expected[1]), ("send_mail", expected[0])]
    assert [c.args for c in stored_calls(agent)] == [
        {"to": "<EMAIL_1>", "body": "<SECRET_1> for <EMAIL_1>"},
        {"data": {"path": "<SECRET_1>"}},
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.dictionaries(strings, values, max_size=3), min_size=1, max_size=3),
    strings,
    st.lists(st.integers(1, 9), min_size=1, max_size=20),
    st.randoms(use_true_random=False),
)
def test_interleaved_calls_and_text_each_add_up_to_their_restored_whole(
    calls: list[dict[str, Any]], text: str, cuts: list[int], rng: Any
) -> None:
    """Fragments of several calls and of the text, interleaved at random: each call's
    fragments add up to its restored arguments, the text to its restored text, and each
    call's first fragment keeps its id and name."""
    streams = [[("text", text[at : at + 4]) for at in range(0, len(text), 4)]]
    for index, args in enumerate(calls):
        raw, turn, at = json.dumps(args), 0, 0
        pieces: list[tuple[Any, str]] = [(index, "")]
        while at < len(raw):
            pieces.append((index, raw[at : at + cuts[turn % len(cuts)]]))
            at, turn = at + cuts[turn % len(cuts)], turn + 1
        streams.append(pieces)
    chunks = []
    while any(streams):
        pieces = rng.choice([s for s in streams if s])
        where, piece = pieces.pop(0)
        if where == "text":
            chunks.append(AIMessageChunk(piece))
        else:
            first = piece == "" and not any(
                p.index == where for c in chunks for p in c.tool_call_chunks
            )
            start = (f"c{where}", f"tool{where}") if first else (None, None)
            chunks.append(
                AIMessageChunk(tool_call_chunks=[ToolCallChunk(where, start[0], start[1], piece)])
            )
    mw = PIIMiddleware("email", strategy="pseudonymize")
    out = list(mw.transform_model_stream(iter(chunks), REQUEST))
    assert "".join(c.content for c in out) == restored(text)
    for index, args in enumerate(calls):
        parts = [p for c in out for p in c.tool_call_chunks if p.index == index]
        assert (parts[0].id, parts[0].name) == (f"c{index}", f"tool{index}")
        assert json.loads("".join(p.args for p in parts)) == restored(args)
