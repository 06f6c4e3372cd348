"""The live display of ``plait run``/``plait chat``: the spinner, the model's words as they
stream, and each tool call with what it returned, as two middleware around the agent's
own (``ModelDisplay`` first, ``ToolDisplay`` last)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING

import attrs

from plait._text import short
from plait.lazy import define
from plait.middleware import Middleware

if TYPE_CHECKING:
    from plait.messages import AIMessageChunk, ToolCall, ToolMessage
    from plait.types import Command, ModelRequest, ModelResponse, ToolCallRequest

__all__ = ["Console", "ModelDisplay", "Spinner", "ToolDisplay", "format_call", "short"]


def format_call(call: ToolCall) -> str:
    """``get_weather(city="Paris")``: a tool call on one line."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.args.items())
    return f"{call.name}({short(args, 80)})"


class Spinner:
    """A one-character spinner on stderr while the model works; only on a terminal."""

    FRAMES = "|/-\\"

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, label: str = "thinking") -> None:
        if not self.enabled or self._thread is not None:
            return
        self._stop.clear()

        def spin() -> None:
            index = 0
            while not self._stop.wait(0.1):
                frame = self.FRAMES[index % len(self.FRAMES)]
                self.stream.write(f"\r{frame} {label}...")
                self.stream.flush()
                index += 1
            self.stream.write("\r" + " " * (len(label) + 6) + "\r")
            self.stream.flush()

        self._thread = threading.Thread(target=spin, name="plait-spinner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None


@define(eq=False)
class Console:
    """What the live display writes to, and the ids of what it has already shown."""

    out: IO[str]
    spinner: Spinner
    prefix: str = ""
    """Written before the model's words (``"agent> "`` in a chat)."""
    shown: set[str] = attrs.Factory(set)
    streamed: bool = False
    """Whether the model call in progress has written words as they streamed."""

    def line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def middleware(self) -> tuple[list[Middleware], list[Middleware]]:
        """The display's middleware: one to put first in the list, one to put last."""
        return [ModelDisplay(self)], [ToolDisplay(self)]


@define(eq=False)
class ModelDisplay(Middleware):
    """First in the list, so outermost around model calls: the spinner covers the whole
    call (retries and fallbacks included), and the model's words beside its tool calls
    are shown as the other middleware left them."""

    console: Console

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        console = self.console
        console.spinner.start()
        try:
            response = handler(request)
        finally:
            console.spinner.stop()
            if console.streamed:
                console.line("")
        message = response.message
        if message is not None and console.streamed:
            console.shown.add(message.id)
        elif message is not None and message.tool_calls and message.text.strip():
            console.line(console.prefix + message.text.strip())
            console.shown.add(message.id)
        console.streamed = False
        return response

    def transform_model_stream(
        self, chunks: Iterator[AIMessageChunk], request: ModelRequest
    ) -> Iterator[AIMessageChunk]:
        """Write the model's words as they arrive (after the other middleware, e.g. PII
        redaction, have transformed them: this display is first, so it sees them last)."""
        console = self.console
        for chunk in chunks:
            text = chunk.content if console.streamed else chunk.content.lstrip()
            if text:
                if not console.streamed:
                    console.spinner.stop()
                    console.out.write(console.prefix)
                    console.streamed = True
                console.out.write(text)
                console.out.flush()
            yield chunk


@define(eq=False)
class ToolDisplay(Middleware):
    """Last in the list, so innermost around tool calls: it shows the call that really
    runs (after an approval edited it, say) and what the tool itself returned."""

    console: Console

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        from plait.messages import ToolMessage

        call = request.tool_call
        if call.id not in self.console.shown:  # a call re-run after an interrupt: once
            self.console.shown.add(call.id)
            self.console.line(f"  -> {format_call(call)}")
        try:
            result = handler(request)
        except Exception as exc:  # the kernel makes it an error ToolMessage; show it
            self.console.line(f"  !! {short(f'{type(exc).__name__}: {exc}')}")
            raise
        message = result if isinstance(result, ToolMessage) else _tool_message_of(result)
        if message is not None:
            mark = "!!" if message.status == "error" else "<-"
            self.console.line(f"  {mark} {short(message.text) or '(empty)'}")
        return result


def _tool_message_of(command: Command) -> ToolMessage | None:
    from plait.messages import ToolMessage

    messages = (command.update or {}).get("messages", [])
    if isinstance(messages, ToolMessage):
        return messages
    for message in messages if isinstance(messages, list | tuple) else ():
        if isinstance(message, ToolMessage):
            return message
    return None
