"""A loopback server speaking the OpenAI Chat Completions, Anthropic Messages and Gemini
``generateContent`` wire formats, for code that names a real model: point
``OPENAI_BASE_URL`` at ``url + "/v1"``, ``ANTHROPIC_BASE_URL`` and
``GOOGLE_GEMINI_BASE_URL`` at ``url``. It answers with the scripted turns in order, then
with a default text; a request asking for a stream gets server-sent events. OTLP exports
(``OTEL_EXPORTER_OTLP_ENDPOINT`` at ``url + "/otlp"``) are accepted and kept in ``otlp``."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
from replay_server import claude_message, claude_tool_use, openai_completion


@attrs.frozen
class Turn:
    """One model answer: ``text`` and/or tool calls ``(name, args)``."""

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def say(text: str) -> Turn:
    return Turn(text)


def call(name: str, **args: Any) -> Turn:
    return Turn("", ((name, args),))


DEFAULT = Turn("Done.")


class DocsProvider:
    """The server; ``requests`` holds each request's path and JSON body, in order."""

    def __init__(self, turns: Iterable[Turn] = ()) -> None:
        self._turns = list(turns)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.otlp: list[tuple[str, bytes]] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # a reply's body would wait for a delayed ACK

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path.startswith("/otlp/"):
                    provider.otlp.append((self.path, data))
                    self._send(b"", "application/x-protobuf")  # an empty Export*Response
                    return
                body = json.loads(data)
                turn = provider._next(self.path, body)
                anthropic = self.path.endswith("/messages")
                if ":streamGenerateContent" in self.path:
                    self._send(_gemini_events(turn).encode(), "text/event-stream")
                elif ":generateContent" in self.path:
                    self._send(
                        json.dumps(_gemini(turn.text, turn.calls)).encode(), "application/json"
                    )
                elif body.get("stream"):
                    events = _claude_events(turn, provider._id()) if anthropic else None
                    data = events or _openai_events(turn, provider._id())
                    self._send(data.encode(), "text/event-stream")
                else:
                    answer = _claude(turn, provider._id()) if anthropic else _openai(turn)
                    self._send(json.dumps(answer).encode(), "application/json")

            def _send(self, data: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def _next(self, path: str, body: dict[str, Any]) -> Turn:
        with self._lock:
            self.requests.append((path, body))
            return self._turns.pop(0) if self._turns else DEFAULT

    def _id(self) -> str:
        return f"call_docs_{next(self._ids)}"

    @property
    def unused(self) -> list[Turn]:
        return list(self._turns)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _openai(turn: Turn) -> dict[str, Any]:
    calls = [(f"call_{i}", name, args) for i, (name, args) in enumerate(turn.calls)]
    return openai_completion(turn.text or None, *calls)


def _claude(turn: Turn, _id: str) -> dict[str, Any]:
    blocks: list[Any] = [turn.text] if turn.text else []
    blocks += [claude_tool_use(f"toolu_{i}", n, a) for i, (n, a) in enumerate(turn.calls)]
    return claude_message(*blocks)


def _sse(events: Iterable[Any], *, named: bool) -> str:
    if named:
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def _openai_events(turn: Turn, id: str) -> str:
    head = {"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": word} for word in _words(turn.text)]
    deltas += [
        {
            "tool_calls": [
                {
                    "index": i,
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        }
        for i, (name, args) in enumerate(turn.calls)
    ]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    finish = "tool_calls" if turn.calls else "stop"
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    chunks.append({**head, "choices": [], "usage": usage})
    return _sse(chunks, named=False)


def _claude_events(turn: Turn, id: str) -> str:
    message = claude_message()
    start = {**message, "id": id, "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    index = 0
    if turn.text:
        events.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events += [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}
            for w in _words(turn.text)
        ]
        events.append({"type": "content_block_stop", "index": 0})
        index = 1
    for i, (name, args) in enumerate(turn.calls, start=index):
        block = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
        events += [
            {"type": "content_block_start", "index": i, "content_block": block},
            {"type": "content_block_delta", "index": i, "delta": delta},
            {"type": "content_block_stop", "index": i},
        ]
    stop = "tool_use" if turn.calls else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        }
    )
    events.append({"type": "message_stop"})
    return _sse(events, named=True)


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]] if text else []


def _gemini(text: str, calls: Iterable[tuple[str, dict[str, Any]]], finish: bool = True) -> Any:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in calls]
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    usage = {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-docs"}


def _gemini_events(turn: Turn) -> str:
    """One response per word, then the calls and the finish reason."""
    responses = [_gemini(word, (), finish=False) for word in _words(turn.text)]
    responses.append(_gemini("", turn.calls))
    return "".join(f"data: {json.dumps(r)}\r\n\r\n" for r in responses)
