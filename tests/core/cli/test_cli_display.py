"""The live display of ``plait run``/``chat``: the spinner only on a terminal."""

from __future__ import annotations

import io
import threading

from plait.cli import Spinner, format_call
from plait.messages import ToolCall


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
