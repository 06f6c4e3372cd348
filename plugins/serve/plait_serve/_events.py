"""The run log's vocabulary: what a run's ``StreamEvent``s become once recorded.

Every protocol projects these events, one at a time and without memory of earlier ones,
so a client that reconnects after event ``n`` gets a correct stream from ``n + 1`` on.
Each event is a JSON object with a ``type``:

- ``thread``: the thread's first event, naming the key that owns it (never projected).
- ``run_started`` ``{run_id}``, then ``state_snapshot`` ``{values}`` (the state keys other
  than ``messages``).
- ``message_start`` / ``text`` ``{delta}`` / ``message_end``, each with ``message_id``:
  an AI message's text as it streams.
- ``tool_call`` ``{message_id, tool_call_id, name, args}``: a call the model made.
- ``tool_result`` ``{message_id, tool_call_id, name, content, status}``.
- ``state`` ``{values}``: state keys a step wrote.
- ``custom`` ``{value}``: what a hook or tool wrote with ``runtime.stream_writer``.
- ``run_finished`` ``{run_id, status, text, interrupts, usage}``: ``status`` is
  ``success``, ``interrupted`` (``interrupts`` lists each pending interrupt with the tool
  calls it reviews and the decisions each allows) or ``cancelled``; ``usage`` counts the
  run's ``input_tokens`` and ``output_tokens``.
- ``run_error`` ``{run_id, message, code}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from plait.messages import AIMessage, AIMessageChunk, ToolMessage, message_text
from plait.types import StreamEvent

__all__ = ["END_TYPES", "Recorder", "jsonable"]

END_TYPES = frozenset({"run_finished", "run_error"})
"""The types that end a run: a stream following one run stops after either."""

_INTERNAL_KEYS = frozenset({"messages", "__interrupt__"})


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: what JSON cannot hold becomes its ``str``."""
    return json.loads(json.dumps(value, default=str))


class Recorder:
    """Turns one run's ``StreamEvent``s (modes ``messages``, ``updates``, ``custom``)
    into run-log events. Text streams from the model chunks; tool calls come from the
    finished AI message (their arguments whole), tool results from the step's update."""

    def __init__(self) -> None:
        self._open: str | None = None  # the AI message whose text is streaming
        self._seen: set[str] = set()  # AI messages and tool calls already recorded

    def translate(self, event: StreamEvent) -> Iterator[dict[str, Any]]:
        if event.mode == "messages":
            if isinstance(event.data, AIMessageChunk):
                yield from self._chunk(event.data)
        elif event.mode == "updates":
            for update in event.data.values():
                if isinstance(update, dict):
                    yield from self._update(update)
        elif event.mode == "custom":
            yield {"type": "custom", "value": jsonable(event.data)}

    def _chunk(self, chunk: AIMessageChunk) -> Iterator[dict[str, Any]]:
        if not chunk.content:
            return
        message_id = chunk.id or self._open or f"msg-{len(self._seen)}"
        if self._open != message_id:
            yield from self._close()
            self._open = message_id
            yield {"type": "message_start", "message_id": message_id}
        yield {"type": "text", "message_id": message_id, "delta": chunk.content}

    def _close(self) -> Iterator[dict[str, Any]]:
        if self._open is not None:
            self._seen.add(self._open)
            yield {"type": "message_end", "message_id": self._open}
            self._open = None

    def _update(self, update: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for message in update.get("messages") or ():
            if isinstance(message, AIMessage):
                yield from self._ai(message)
            elif isinstance(message, ToolMessage):
                yield from self._close()
                yield {
                    "type": "tool_result",
                    "message_id": message.id,
                    "tool_call_id": message.tool_call_id,
                    "name": message.name,
                    "content": message_text(message.content),
                    "status": message.status,
                }
        values = {k: v for k, v in update.items() if k not in _INTERNAL_KEYS}
        if values:
            yield {"type": "state", "values": jsonable(values)}

    def _ai(self, message: AIMessage) -> Iterator[dict[str, Any]]:
        message_id = message.id
        if self._open is not None:
            message_id = self._open  # the streamed text's id, even if the chunks had none
            yield from self._close()
        elif message_id not in self._seen and message.text:
            # Not streamed (a hook answered, or a provider without streaming): whole.
            self._seen.add(message_id)
            yield {"type": "message_start", "message_id": message_id}
            yield {"type": "text", "message_id": message_id, "delta": message.text}
            yield {"type": "message_end", "message_id": message_id}
        self._seen.add(message_id)
        for call in message.tool_calls:
            if call.id in self._seen:
                continue
            self._seen.add(call.id)
            yield {
                "type": "tool_call",
                "message_id": message_id,
                "tool_call_id": call.id,
                "name": call.name,
                "args": jsonable(call.args),
            }

    def finish(self) -> Iterator[dict[str, Any]]:
        """What closes the run's open text message, before its end event."""
        yield from self._close()
