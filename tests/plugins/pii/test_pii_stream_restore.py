"""``pseudonymize`` in a token stream: the caller streaming the answer to a UI reads the
real values ``result.messages`` holds, never ``<EMAIL_1>``, however the provider cut the
chunks, and text that cannot be part of a placeholder is not held back. Also: ``redact``
in a stream keeps the provider blocks it carries."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import attrs
import pytest

import plait
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCallChunk
from plait.models import ScriptedChatModel
from plait_pii import PIIMiddleware

JANE, LI = "jane@example.com", "li@example.cn"


class Chunked(ScriptedChatModel):
    """Streams each answer in exactly the chunks given (a string is a text chunk). After a
    piece named in ``awaited`` it waits (up to ``WAIT`` seconds) until the caller has read
    that piece before it makes the next, noting ``late`` if the caller never did: text
    held back by a middleware would reach the caller only with a later piece."""

    def __init__(
        self,
        answers: Sequence[Sequence[str | AIMessageChunk]],
        received: list[str],
        awaited: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(["(streamed)"] * len(answers))
        self.answers = [[_chunk(p) for p in pieces] for pieces in answers]
        self.received = received
        self.awaited = awaited
        self.late: list[str] = []

    def _pieces(self, messages: Sequence[AnyMessage], options: Any) -> list[AIMessageChunk]:
        self.invoke(messages, **options)  # recorded in ``requests``
        turn = len(self.requests)
        return [attrs.evolve(p, id=f"answer-{turn}") for p in self.answers[turn - 1]]

    def _read(self, piece: AIMessageChunk) -> bool:
        return piece.content not in self.awaited or piece.content in self.received

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        for piece in self._pieces(messages, options):
            yield piece
            deadline = time.monotonic() + WAIT
            while not self._read(piece) and time.monotonic() < deadline:
                time.sleep(0.001)
            if not self._read(piece):
                self.late.append(piece.content)

    async def astream(
        self, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        for piece in self._pieces(messages, options):
            yield piece
            deadline = time.monotonic() + WAIT
            while not self._read(piece) and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            if not self._read(piece):
                self.late.append(piece.content)


WAIT = 1.0


def _chunk(piece: str | AIMessageChunk) -> AIMessageChunk:
    return AIMessageChunk(piece) if isinstance(piece, str) else piece


def _args(index: int, call_id: str | None, name: str | None, args: str) -> AIMessageChunk:
    return AIMessageChunk(tool_call_chunks=[ToolCallChunk(index, call_id, name, args)])


sent: list[dict[str, Any]] = []


@plait.tool
def send_mail(to: str, body: str) -> str:
    """Send an e-mail.

    Args:
        to: the recipient's address.
        body: the text.
    """
    sent.append({"to": to, "body": body})
    return "queued"


def run(
    answers: Sequence[Sequence[str | AIMessageChunk]],
    use_async: bool,
    text: str,
    awaited: frozenset[str] = frozenset(),
) -> tuple[list[AIMessageChunk], Any, Chunked]:
    """One streamed run (``stream_mode="messages"``, as LangGraph callers write it): the AI
    chunks the caller got, the result and the model."""
    received: list[str] = []
    model = Chunked(answers, received, awaited)
    agent = plait.create_agent(
        model,
        tools=[send_mail],
        checkpointer="memory",
        middleware=[PIIMiddleware("email", strategy="pseudonymize")],
    )
    chunks: list[AIMessageChunk] = []

    def take(data: Any) -> None:
        token = data[0]
        if isinstance(token, AIMessageChunk):
            received.append(token.content)
            chunks.append(token)

    if use_async:

        async def consume() -> Any:
            stream = agent.astream(text, thread_id="t", stream_mode="messages")
            async for data in stream:
                take(data)
            return stream.result

        result = asyncio.run(consume())
    else:
        stream = agent.stream(text, thread_id="t", stream_mode="messages")
        for data in stream:
            take(data)
        result = stream.result
    return chunks, result, model


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_streamed_answer_shows_the_real_values_wherever_the_chunks_cut_a_placeholder(
    use_async: bool,
) -> None:
    sent.clear()
    call_turn = [
        "Writing to <",
        "EMA",
        "IL_2> and <EMAIL_",
        "1",
        ">: ",
        _args(0, "c1", "send_mail", '{"to": "<EMAI'),
        _args(0, None, None, 'L_2>", "body": "hi <EMAIL_1'),
        _args(0, None, None, '>, from <EMAIL_2>"}'),
    ]
    answer_turn = ["Sent to <EMAIL_2", ">", ", copy <EMAIL_1>", "."]
    chunks, result, model = run([call_turn, answer_turn], use_async, f"mail {LI}, cc {JANE}")

    streamed = "".join(c.content for c in chunks)
    final = "".join(m.text for m in result.messages if isinstance(m, AIMessage))
    assert streamed == final == f"Writing to {JANE} and {LI}: Sent to {JANE}, copy {LI}."
    assert not [c.content for c in chunks if "<" in c.content]
    # the arguments the caller streamed are those the tool got and result.messages shows
    streamed_args = json.loads("".join(p.args for c in chunks for p in c.tool_call_chunks))
    shown = next(m for m in result.messages if isinstance(m, AIMessage) and m.tool_calls)
    assert streamed_args == shown.tool_calls[0].args == sent[0]
    assert sent == [{"to": JANE, "body": f"hi {LI}, from {JANE}"}]
    # the model only ever read placeholders
    assert "<EMAIL_1>" in model.requests[0].messages[-1].text
    assert JANE not in json.dumps([m.text for m in model.requests[1].messages])


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_text_that_cannot_become_a_placeholder_leaves_in_the_chunk_it_came_in(
    use_async: bool,
) -> None:
    pieces = [
        "a < b, ",  # a '<' that no placeholder continues
        "then ",
        "<EM",  # may become <EMAIL_1>: held
        "AIL_",
        "1> and ",
        "<EMAIL_7",  # no such number in the table: not held
        "> or <EMAIL_1",  # held
        "x",  # breaks it: released as written
        " done",
    ]
    prompt = frozenset({"a < b, ", "then ", "<EMAIL_7", " done"})
    chunks, result, model = run([pieces], use_async, f"write to {JANE}", prompt)
    assert [c.content for c in chunks] == [
        "a < b, ",
        "then ",
        f"{JANE} and ",
        "<EMAIL_7",
        "> or ",
        "<EMAIL_1x",
        " done",
    ]
    assert result.text == "".join(c.content for c in chunks)
    # each piece that could not be held reached the caller before the model's next piece
    assert model.late == []


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_cited_text_block_is_restored_as_the_text_it_repeats(use_async: bool) -> None:
    """A provider's finished text block (with citations) stands in for the streamed text:
    restored too, the answer holds that text once."""
    block = {"type": "text", "text": "Ask <EMAIL_1>.", "citations": [{"cited_text": "x"}]}
    pieces = ["Ask <EMAIL", "_1>.", AIMessageChunk(blocks=[block])]
    chunks, result, _ = run([pieces], use_async, f"who? {JANE}")
    assert result.text == f"Ask {JANE}."
    assert [b["text"] for c in chunks for b in c.blocks] == [f"Ask {JANE}."]


def test_without_a_table_the_stream_passes_untouched() -> None:
    """Nothing numbered yet: no placeholder can be restored, so nothing is held (arguments
    stream as their fragments come)."""
    pieces = [
        "see <EM",
        "AIL_1>",
        _args(0, "c1", "send_mail", '{"to": "x", '),
        _args(0, None, None, '"body": "y"}'),
    ]
    chunks, _, _ = run([pieces, ["ok"]], False, "no address here")
    assert [c.content for c in chunks][:2] == ["see <EM", "AIL_1>"]
    assert [p.args for c in chunks for p in c.tool_call_chunks] == ['{"to": "x", ', '"body": "y"}']


class AnswersSecond(plait.Middleware):
    """Answers the second model call itself (as a cache would): the stream gets no token
    of that answer."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        if sum(isinstance(m, AIMessage) for m in request.messages):
            return AIMessage("Li is at <EMAIL_1>.")
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        if sum(isinstance(m, AIMessage) for m in request.messages):
            return AIMessage("Li is at <EMAIL_1>.")
        return await handler(request)


@plait.tool
def lookup(name: str) -> str:
    """The address of a person."""
    return f"{name}: {LI}"


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_whole_messages_in_the_stream_show_real_values(use_async: bool) -> None:
    """A tool's answer and an answer that streamed no token reach the ``messages`` stream
    whole: shown with real values (``show_messages``), as the tokens are, while the
    ``updates`` events and the thread keep placeholders."""
    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[plait.ToolCall("lookup", {"name": "Li"}, "c1")])]
    )
    agent = plait.create_agent(
        model,
        tools=[lookup],
        checkpointer="memory",
        middleware=[
            PIIMiddleware("email", strategy="pseudonymize", apply_to_tool_results=True),
            AnswersSecond(),
        ],
    )
    modes = ["messages", "updates"]
    if use_async:

        async def consume() -> list[Any]:
            return [
                e async for e in agent.astream("Where is Li?", thread_id="t", stream_mode=modes)
            ]

        events = asyncio.run(consume())
    else:
        events = list(agent.stream("Where is Li?", thread_id="t", stream_mode=modes))
    whole = [
        data[0]
        for mode, data in events
        if mode == "messages" and not isinstance(data[0], AIMessageChunk)
    ]
    assert [(m.type, m.text) for m in whole] == [("tool", f"Li: {LI}"), ("ai", f"Li is at {LI}.")]
    updated = [
        m
        for mode, data in events
        if mode == "updates"
        for u in data.values()
        if isinstance(u, dict)
        for m in u.get("messages", ())
    ]
    assert "Li: <EMAIL_1>" in [m.text for m in updated]
    assert LI not in json.dumps([m.text for m in updated])
    assert [m.text for m in agent.get_state("t")["messages"][-2:]] == [
        "Li: <EMAIL_1>",
        "Li is at <EMAIL_1>.",
    ]
    assert LI not in json.dumps([m.text for m in model.requests[0].messages])


THINKING = {"type": "thinking", "thinking": "mail jane@example.com?", "signature": "c2ln"}


def redacting_run(pieces: list[Any], strategy: str, use_async: bool) -> tuple[list[Any], Any]:
    model = Chunked([pieces], [])
    agent = plait.create_agent(
        model, middleware=[PIIMiddleware("email", strategy=strategy, apply_to_output=True)]
    )
    chunks: list[AIMessageChunk] = []
    if use_async:

        async def consume() -> Any:
            stream = agent.astream("hi", stream_mode="messages")
            chunks.extend([d[0] async for d in stream])
            return stream.result

        return chunks, asyncio.run(consume())
    stream = agent.stream("hi", stream_mode="messages")
    chunks.extend(d[0] for d in stream)
    return chunks, stream.result


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_redacting_a_stream_keeps_provider_blocks(use_async: bool) -> None:
    """``redact`` with ``apply_to_output`` dropped a chunk that carried only blocks: a
    thinking block (which a provider wants back as signed) and a cited text block were
    lost from the answer. They are kept, the cited text redacted as the text it repeats."""
    cited = {"type": "text", "text": f"Ask {JANE}.", "citations": [{"cited_text": "x"}]}
    pieces = [
        AIMessageChunk(blocks=[THINKING]),
        "Ask jane@exa",
        "mple.com.",
        AIMessageChunk(blocks=[cited]),
    ]
    chunks, result = redacting_run(pieces, "redact", use_async)
    assert result.messages[-1].content == [
        THINKING,
        {"type": "text", "text": "Ask [REDACTED_EMAIL].", "citations": [{"cited_text": "x"}]},
    ]
    assert result.text == "Ask [REDACTED_EMAIL]."
    shown = [c.content for c in chunks] + [b.get("text", "") for c in chunks for b in c.blocks]
    assert JANE not in "".join(shown)


def test_block_stops_on_an_address_in_a_cited_block() -> None:
    from plait.errors import PIIDetectionError

    cited = {"type": "text", "text": f"Ask {JANE}.", "citations": []}
    with pytest.raises(PIIDetectionError):
        redacting_run(["Ask ", AIMessageChunk(blocks=[cited])], "block", False)
