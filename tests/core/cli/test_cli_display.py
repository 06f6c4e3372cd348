"""The live display of ``plait run``/``chat``: the spinner only on a terminal, the model's
words as they stream."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from typing import Any

import plait
from plait.cli import Console, Spinner, _turn, format_call
from plait.messages import AIMessage, AIMessageChunk, ToolCall
from plait.models import ChatModel


class _Terminal(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.wrote = threading.Event()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.wrote.set()
        return super().write(text)


def test_spinner_draws_on_a_terminal_and_clears_its_line() -> None:
    stream = _Terminal()
    spinner = Spinner(stream)
    spinner.start()
    assert stream.wrote.wait(10)
    spinner.stop()
    text = stream.getvalue()
    assert "thinking..." in text
    assert text.endswith("\r")
    last_line = text.rsplit("\r", 2)[-2]
    assert last_line.strip() == ""  # the spinner's line is blanked when the model answers


def test_spinner_is_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    spinner = Spinner(stream)
    spinner.start()
    spinner.stop()
    assert stream.getvalue() == ""


def test_tool_calls_are_shown_on_one_line() -> None:
    call = ToolCall("search", {"query": "plait docs", "limit": 3, "tags": ["a", "b"]})
    assert format_call(call) == 'search(query="plait docs", limit=3, tags=["a", "b"])'
    long = ToolCall("write", {"text": "x" * 500})
    assert len(format_call(long)) < 100
    assert format_call(long).endswith("...)")


class _Logged(io.StringIO):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def write(self, text: str) -> int:
        self.log.append(f"out {text!r}")
        return super().write(text)


class _Streaming(ChatModel):
    """Streams a fixed answer in three pieces, logging each as it leaves the model."""

    provider = "test"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def invoke(self, messages: Any, **options: Any) -> AIMessage:
        raise AssertionError("the live display streams; it never calls invoke")

    def stream(self, messages: Any, **options: Any) -> Iterator[AIMessageChunk]:
        for piece in ("  It is", " sunny", " today."):
            self.log.append(f"model {piece!r}")
            yield AIMessageChunk(piece, id="answer")


def test_the_answer_is_written_word_by_word_as_the_model_streams_it() -> None:
    log: list[str] = []
    console = Console(_Logged(log), Spinner(io.StringIO()), prefix="agent> ")
    first, last = console.middleware()
    agent = plait.create_agent(_Streaming(log), middleware=[*first, *last])

    result = _turn(agent, "weather?", None, 5)

    assert log == [
        "model '  It is'",
        "out 'agent> '",
        "out 'It is'",
        "model ' sunny'",
        "out ' sunny'",
        "model ' today.'",
        "out ' today.'",
        "out '\\n'",
    ]
    assert result.text == "  It is sunny today."
    assert result.messages[-1].id in console.shown  # so it is not printed again
