"""The replay server of ``plait.testing`` (``plait/replay.py``) with what this repository's
provider tests add: answers in the Messages and Chat Completions formats, and Anthropic's
named-event streams. Tests get it from a ``server`` fixture (``provider_fixtures.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plait.testing import Received, Reply, split_bytes
from plait.testing import ReplayServer as _ReplayServer

__all__ = [
    "Received",
    "ReplayServer",
    "Reply",
    "captured",
    "claude_message",
    "claude_tool_use",
    "openai_completion",
    "split_bytes",
]


class ReplayServer(_ReplayServer):
    def anthropic_stream(self, events: Sequence[dict[str, Any]], **kw: Any) -> None:
        """Messages API events, each as ``event: TYPE`` plus its ``data:``."""
        self.event_stream(events, **kw)


# -- answers captured from real servers ----------------------------------------------------

CAPTURED = Path(__file__).parent / "data"
"""Real servers' answers as they came off the socket (``tests/data/<server>/*.http``)."""

_RESENT = frozenset({"content-length", "transfer-encoding", "connection", "date", "server"})


def captured(name: str) -> Reply:
    """The answer captured in ``tests/data/NAME.http`` (raw HTTP/1.1: status line, headers,
    body), replayed as it was sent: same status, headers and, for a chunked body, the
    same chunks. The framing headers are the replay server's own."""
    raw = (CAPTURED / f"{name}.http").read_bytes()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    chunked = any(
        k.lower() == "transfer-encoding" and v.lower() == "chunked" for k, v in headers.items()
    )
    kept = {k.lower(): v for k, v in headers.items() if k.lower() not in _RESENT}
    status = int(status_line.split()[1])
    if not chunked:
        return Reply(status, body, kept)
    pieces: list[bytes] = []
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return Reply(status, b"", kept, pieces=tuple(pieces))
        pieces.append(body[:size])
        body = body[size + 2 :]


# -- answers in each provider's format -----------------------------------------------------


def claude_message(
    *content: dict[str, Any] | str, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """A Messages API answer; text given as ``str``, tool calls as ``claude_tool_use``. It
    stops for ``tool_use`` when it holds a tool call, else at ``end_turn``."""
    blocks = [{"type": "text", "text": c} if isinstance(c, str) else c for c in content]
    calls = any(block["type"] == "tool_use" for block in blocks)
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": blocks,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }


def claude_tool_use(id: str, name: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def openai_completion(
    content: str | None, *calls: tuple[str, str, dict[str, Any]]
) -> dict[str, Any]:
    """A Chat Completions answer; each call is ``(id, tool name, arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for id, name, args in calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4.1",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }
