"""Streams of tool-call argument fragments for the pii tests: a model that paces its
pieces on what the caller has been shown, the tools they call, a run streamed as
LangGraph callers stream it, and Chat Completions chunks for the loopback provider."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import attrs

import plait
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, ToolCallChunk
from plait.models import ScriptedChatModel
from plait.models.base import ChatModel
from plait_pii import PIIMiddleware

WAIT = 1.0


def part(index: int, args: str, call_id: str | None = None, name: str | None = None) -> Any:
    return AIMessageChunk(tool_call_chunks=[ToolCallChunk(index, call_id, name, args)])


class Paced(ScriptedChatModel):
    """Streams one answer of ``(piece, shown)`` pairs, then answers ``"done"``. After a
    piece it waits (up to ``WAIT`` seconds) until the caller holds, for each call index
    in ``shown``, exactly that argument text, before it makes the next piece; ``late``
    notes the pieces after which the caller did not. So an argument fragment the
    middleware held until the answer ended shows in ``late``."""

    def __init__(
        self, pieces: Sequence[tuple[AIMessageChunk, dict[int, str]]], got: dict[int, str]
    ) -> None:
        super().__init__(["(streamed)", "done"])
        self.pieces = pieces
        self.got = got
        self.late: list[tuple[int, dict[int, str]]] = []

    def _shown(self, shown: dict[int, str]) -> bool:
        return all(self.got.get(index, "") == text for index, text in shown.items())

    def _turn(self, messages: Sequence[AnyMessage], options: Any) -> Any:
        if any(isinstance(m, AIMessage) for m in messages):
            return None
        self.invoke(messages, **options)  # recorded in ``requests``
        return self.pieces

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        pieces = self._turn(messages, options)
        if pieces is None:
            yield from super().stream(messages, **options)
            return
        for number, (piece, shown) in enumerate(pieces):
            yield attrs.evolve(piece, id="answer-1")
            deadline = time.monotonic() + WAIT
            while not self._shown(shown) and time.monotonic() < deadline:
                time.sleep(0.001)
            if not self._shown(shown):
                self.late.append((number, dict(self.got)))

    async def astream(
        self, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        pieces = self._turn(messages, options)
        if pieces is None:
            async for chunk in super().astream(messages, **options):
                yield chunk
            return
        for number, (piece, shown) in enumerate(pieces):
            yield attrs.evolve(piece, id="answer-1")
            deadline = time.monotonic() + WAIT
            while not self._shown(shown) and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            if not self._shown(shown):
                self.late.append((number, dict(self.got)))


received: list[tuple[str, dict[str, Any]]] = []


@plait.tool
def send_mail(to: str, body: str) -> str:
    """Send an e-mail.

    Args:
        to: the recipient's address.
        body: the text.
    """
    received.append(("send_mail", {"to": to, "body": body}))
    return "queued"


@plait.tool
def save(data: dict[str, str]) -> str:
    """Save some fields.

    Args:
        data: the fields.
    """
    received.append(("save", {"data": data}))
    return "saved"


def streamed_run(
    model: ChatModel,
    prompt: str,
    got: dict[int, str],
    use_async: bool,
    pii: Sequence[PIIMiddleware] = (),
) -> tuple[list[AIMessageChunk], Any, plait.Agent]:
    """One run streamed as LangGraph callers stream it (``stream_mode="messages"``): the
    AI chunks the caller got (``got``: the argument text per call index, as it grows)."""
    agent = plait.create_agent(
        model,
        tools=[send_mail, save],
        checkpointer="memory",
        middleware=list(pii) or [PIIMiddleware("email", strategy="pseudonymize")],
    )
    chunks: list[AIMessageChunk] = []

    def take(data: Any) -> None:
        if isinstance(data[0], AIMessageChunk):
            chunks.append(data[0])
            for fragment in data[0].tool_call_chunks:
                got[fragment.index] = got.get(fragment.index, "") + fragment.args

    if use_async:

        async def consume() -> Any:
            stream = agent.astream(prompt, thread_id="t", stream_mode="messages")
            async for data in stream:
                take(data)
            return stream.result

        return chunks, asyncio.run(consume()), agent
    stream = agent.stream(prompt, thread_id="t", stream_mode="messages")
    for data in stream:
        take(data)
    return chunks, stream.result, agent


def calls_of(result: Any) -> list[plait.ToolCall]:
    return [c for m in result.messages if isinstance(m, AIMessage) for c in m.tool_calls]


def stored_calls(agent: plait.Agent) -> list[plait.ToolCall]:
    """The tool calls as the thread keeps them."""
    messages = agent.get_state("t")["messages"]
    return [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def arguments(index: int, text: str, **start: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": text}}
    if start:
        call.update(id=start["id"], type="function")
        call["function"]["name"] = start["name"]
    return openai_chunk({"tool_calls": [call]})
