"""A streamed OpenAI Response: the run's text and (when the client asks) its tool calls
as the Responses API's server-sent events, numbered in order.

The answer's text is one message item (output index 0) that every text delta of the run
goes to. A tool call the client asked to see is a ``function_call`` item of its own
(output indexes 1, 2, ... in the order the agent made them): added when the model names
it, its arguments as ``response.function_call_arguments.delta`` fragments, then
``.done`` and ``response.output_item.done``. A call the run dropped, or left open when it
ended, is done ``incomplete``. The agent ran every call already: the response still
ends ``completed``, and a client must not run them again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from plait_serve._http import sse_event

__all__ = ["ResponseStream"]


@attrs.define
class _Call:
    """A function-call item being streamed: its place in the output and arguments so far."""

    index: int
    item: dict[str, Any]
    open: bool = True


@attrs.define
class ResponseStream:
    """Turns ``_texts`` pieces of one run into Responses events (SSE text).

    ``pending`` and ``finished`` build the response object in progress and completed
    (``finished(text, end)`` with the run's end event); ``failed(text)`` a failed one."""

    item: str
    pending: dict[str, Any]
    finished: Callable[[str, Mapping[str, Any]], dict[str, Any]]
    failed: Callable[[str], dict[str, Any]]
    number: int = 0
    texts: list[str] = attrs.Factory(list)
    calls: dict[str, _Call] = attrs.Factory(dict)

    def event(self, kind: str, seq: int | None = None, **fields: Any) -> str:
        self.number += 1
        body = {"type": kind, "sequence_number": self.number, **fields}
        return sse_event(body, seq=seq, event=kind)

    def start(self) -> list[str]:
        message = {
            "type": "message",
            "id": self.item,
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        return [
            self.event("response.created", response=self.pending),
            self.event("response.in_progress", response=self.pending),
            self.event("response.output_item.added", output_index=0, item=message),
            self.event(
                "response.content_part.added",
                item_id=self.item,
                output_index=0,
                content_index=0,
                part=part,
            ),
        ]

    def feed(self, seq: int, text: str | None, end: Mapping[str, Any] | None) -> list[str]:
        """The events for one piece: a text delta, a tool call's piece, or the run's end."""
        if text is not None:
            self.texts.append(text)
            where = {"item_id": self.item, "output_index": 0, "content_index": 0}
            return [self.event("response.output_text.delta", seq, **where, delta=text, logprobs=[])]
        if end is None:
            return []
        if end["type"] == "tool_calls":
            return self._call(seq, end)
        if end["type"] == "run_error":
            failed = self.failed("".join(self.texts))
            failed["output"] += [call.item for call in self._by_index()]
            failed["error"] = {"code": "server_error", "message": end.get("message", "")}
            return [self.event("response.failed", seq, response=failed)]
        return self._completed(seq, end)

    def _by_index(self) -> list[_Call]:
        return sorted(self.calls.values(), key=lambda call: call.index)

    def _call(self, seq: int, piece: Mapping[str, Any]) -> list[str]:
        event = piece["event"]
        call_id, kind = event["tool_call_id"], event["type"]
        out = []
        call = self.calls.get(call_id)
        if call is None or (not call.open and kind == "tool_call_start"):
            # A call made again after a restarted step is an item of its own.
            index = len(self.calls) + 1
            item_id = f"fc_{call_id}" if call is None else f"fc_{call_id}_{index}"
            item = {
                "type": "function_call",
                "id": item_id,
                "call_id": call_id,
                "name": event.get("name", ""),
                "arguments": "",
                "status": "in_progress",
            }
            call = self.calls[call_id] = _Call(index, item)
            added = dict(item)
            out.append(
                self.event("response.output_item.added", seq, output_index=index, item=added)
            )
        if not call.open:
            return out
        where = {"item_id": call.item["id"], "output_index": call.index}
        fragment = None
        if kind == "tool_args":
            fragment = event["delta"]
        elif kind == "tool_call" and not event.get("streamed"):
            fragment = json.dumps(event["args"])
        if fragment:
            call.item["arguments"] += fragment
            out.append(
                self.event("response.function_call_arguments.delta", seq, **where, delta=fragment)
            )
        if kind == "tool_call":
            arguments, name = call.item["arguments"], call.item["name"]
            out.append(
                self.event(
                    "response.function_call_arguments.done",
                    seq,
                    **where,
                    arguments=arguments,
                    name=name,
                )
            )
            out += self._close(call, "completed", seq)
        elif kind == "tool_call_dropped":
            out += self._close(call, "incomplete", seq)
        return out

    def _close(self, call: _Call, status: str, seq: int | None = None) -> list[str]:
        call.open = False
        call.item["status"] = status
        item = dict(call.item)
        return [self.event("response.output_item.done", seq, output_index=call.index, item=item)]

    def _completed(self, seq: int, end: Mapping[str, Any]) -> list[str]:
        """The events that close the text, the message, any call left open and the
        response."""
        out = []
        for call in self._by_index():
            if call.open:
                out += self._close(call, "incomplete")
        whole = "".join(self.texts)
        done = self.finished(whole, end)
        done["output"] += [call.item for call in self._by_index()]
        part = {"type": "output_text", "text": whole, "annotations": []}
        where: dict[str, Any] = {"item_id": self.item, "output_index": 0, "content_index": 0}
        return [
            *out,
            self.event("response.output_text.done", **where, text=whole, logprobs=[]),
            self.event("response.content_part.done", **where, part=part),
            self.event("response.output_item.done", output_index=0, item=done["output"][0]),
            self.event("response.completed", seq, response=done),
        ]
