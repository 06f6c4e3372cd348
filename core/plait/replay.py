"""A real HTTP server on 127.0.0.1 that replays scripted answers in a provider's wire format
and records what it received, so a provider's tests go through httpx end to end — the
kernel's, the built-in plugins' and a third-party provider's alike.

Tests get one from the ``replay_server`` fixture of ``plait.testing`` (closed after the
test): queue answers with ``json``/``raw``/``sse`` (``split`` cuts a stream into chunks at
any byte, ``cut`` drops the connection mid-body), ``hold`` keeps the next answer back so a
client times out, and read what the provider sent in ``requests``/``last``.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

from plait.lazy import frozen

__all__ = ["Received", "ReplayServer", "Reply", "split_bytes"]


@frozen
class Received:
    """One request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@frozen
class Reply:
    """What the server answers next.

    ``pieces``: the body, written as separate HTTP chunks (chunked encoding), each flushed;
    ``cut``: close the socket after the pieces, without ending the chunked body;
    ``hold``: wait until this event is set before answering (to make the client time out).
    """

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = attrs.Factory(dict)
    pieces: tuple[bytes, ...] | None = None
    cut: bool = False
    hold: threading.Event | None = None


def split_bytes(data: bytes, size: int) -> tuple[bytes, ...]:
    """``data`` cut every ``size`` bytes, ignoring line and UTF-8 character boundaries."""
    return tuple(data[i : i + size] for i in range(0, len(data), size))


class ReplayServer:
    """Answers POSTs with the queued replies, in order, and records every request."""

    def __init__(self) -> None:
        self.replies: queue.Queue[Reply] = queue.Queue()
        self.requests: list[Received] = []
        self.holds: list[threading.Event] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: with Nagle's algorithm the body
            # waits for the client's delayed ACK, 40 ms a reply on Linux loopback.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                server.requests.append(
                    Received(
                        "POST",
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                try:
                    reply = server.replies.get_nowait()
                except queue.Empty:
                    reply = Reply(500, b'{"error": {"message": "no scripted reply"}}')
                if reply.hold is not None:
                    reply.hold.wait(10)
                try:
                    self._send(reply)
                except OSError:
                    self.close_connection = True

            def _send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                headers = {"content-type": "application/json", **reply.headers}
                for key, value in headers.items():
                    self.send_header(key, value)
                if reply.pieces is None:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    self.wfile.flush()
                    return
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                for piece in reply.pieces:
                    if not piece:
                        continue
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                if reply.cut:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    # -- scripting ---------------------------------------------------------------------

    def reply(self, reply: Reply) -> None:
        """Answer the next request with ``reply``."""
        self.replies.put(reply)

    def json(self, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.reply(Reply(status, json.dumps(data).encode(), dict(headers or {})))

    def raw(self, body: bytes, status: int = 200, content_type: str = "application/json") -> None:
        self.reply(Reply(status, body, {"content-type": content_type}))

    def sse(
        self,
        text: str,
        *,
        split: int | None = None,
        cut: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = text.encode("utf-8")
        pieces = split_bytes(data, split) if split else (data,)
        self.reply(
            Reply(
                200,
                b"",
                {"content-type": "text/event-stream", **(headers or {})},
                pieces=pieces,
                cut=cut,
            )
        )

    def openai_stream(self, chunks: Sequence[Any], *, done: bool = True, **kw: Any) -> None:
        """Chat Completions chunks as ``data:`` lines, ended by ``[DONE]``."""
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
        self.sse(text + ("data: [DONE]\n\n" if done else ""), **kw)

    def event_stream(
        self, events: Sequence[Mapping[str, Any]], key: str = "type", **kw: Any
    ) -> None:
        """Named events (the Messages API's, the Responses API's), each as ``event:`` its
        ``key`` field plus the event as ``data:``."""
        text = "".join(f"event: {e[key]}\ndata: {json.dumps(e)}\n\n" for e in events)
        self.sse(text, **kw)

    def hold(self) -> threading.Event:
        """Answer the next request only when the returned event is set (or after 10 s)."""
        event = threading.Event()
        self.holds.append(event)
        self.reply(Reply(200, b"{}", hold=event))
        return event

    @property
    def last(self) -> Received:
        """The latest request received."""
        return self.requests[-1]

    def close(self) -> None:
        for event in self.holds:
            event.set()
        self.httpd.shutdown()
        self.httpd.server_close()
