"""Stopping an HTTP model call from the thread of a stream's reader who left.

A sync call blocks its run's thread in a socket read: waiting for the response's headers
(the provider has not started answering), for a non-streamed answer's body, or for the
next token. The reader's thread ends that read by shutting the socket down (not closing
it: the read in flight still owns it), so the read returns at once and the server sees
the client go. Until the headers arrive httpx gives no handle on the socket, so each sync
client's connection pools hand out network streams that note themselves, on every read
and write, to the call in progress in that thread (``sending``); once the headers arrive
the response's ``network_stream`` is that same stream.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = ["Shutter", "sending", "watch"]


def shut(stream: Any) -> None:
    """Shut down the socket under ``stream`` (an httpcore network stream) for reading and
    writing."""
    raw = stream.get_extra_info("socket")
    if isinstance(raw, socket.socket):
        # socket.socket's own: an SSLSocket's would also drop its TLS state under the read
        socket.socket.shutdown(raw, socket.SHUT_RDWR)
    elif raw is not None:  # an event loop's transport socket (asyncio.trsock)
        raw.shutdown(socket.SHUT_RDWR)


class Shutter:
    """The stop of one HTTP call (``StopOnLeave(Shutter())``): shuts the socket of the
    connection the call uses — noted by the pool's stream (``sending``) or, once the
    response is there, taken from it — and, if the stop came first, the socket noted next."""

    __slots__ = ("lock", "response", "stopped", "stream")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stream: Any = None
        self.response: httpx.Response | None = None
        self.stopped = False

    def note(self, stream: Any) -> None:
        """The call reads or writes ``stream`` (in its own thread)."""
        if stream is self.stream:
            return
        with self.lock:
            self.stream = stream
            if self.stopped:
                with contextlib.suppress(OSError):  # already closed: the read fails anyway
                    shut(stream)

    def __call__(self) -> None:
        with self.lock:
            self.stopped = True
            stream = self.stream
            if stream is None and self.response is not None:
                stream = self.response.extensions.get("network_stream")
            if stream is not None:
                shut(stream)


sending: ContextVar[Shutter | None] = ContextVar("plait_http_sending", default=None)
"""The HTTP call this context is making, whose stop a pooled stream notes itself to."""


class _NotingStream(httpcore.NetworkStream):
    """A pooled connection's network stream that notes itself to the call using it."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        call = sending.get()
        if call is not None:
            call.note(self)
        return self._stream.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        call = sending.get()
        if call is not None:
            call.note(self)
        self._stream.write(buffer, timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _NotingStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _NotingBackend(httpcore.NetworkBackend):
    """A connection pool's network backend whose streams note themselves."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _NotingStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        return _NotingStream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def watch(client: httpx.Client) -> httpx.Client:
    """``client`` with each of its connection pools (its own transport's, a proxy's)
    handing out noting streams. httpx takes no network backend, so the pool's is wrapped
    in place; a transport without one (a custom transport) is left as it is, and its calls
    are stopped once their headers arrive."""
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore.NetworkBackend) and not isinstance(backend, _NotingBackend):
            pool._network_backend = _NotingBackend(backend)  # type: ignore[union-attr]
    return client
