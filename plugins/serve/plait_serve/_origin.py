"""Browsers that may drive the server: a web page of another origin, and a name that
rebinds to this machine, are refused before anything runs.

CORS only keeps a page from *reading* an answer. A "simple" cross-site request (a
``fetch`` with ``mode: "no-cors"`` and a ``text/plain`` body, a form) is still sent and
would start a run, tools and all: any page the developer opens could drive a ``plait dev``
server on loopback, which has no keys. So a request whose ``Origin`` header names
neither this server (its ``Host``) nor one of the allowed CORS origins is a ``403``.
And a name an attacker's DNS points at 127.0.0.1 (DNS rebinding) makes the attacker's
page same-origin with the server: without keys, only loopback names (``localhost``,
``127.0.0.1``, ``[::1]``) are answered. Clients that are not browsers send no ``Origin``;
with keys, a page cannot present one (browsers attach no ``Authorization`` by themselves).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable
from typing import Any

from plait_serve._auth import is_loopback

__all__ = ["OriginGuard"]


def _refusal(code: str, message: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return headers, body


def _host_name(host: str) -> str:
    """``host`` (a ``Host`` header) without its port."""
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class OriginGuard:
    """ASGI middleware refusing cross-site browser requests (``Origin`` neither the
    server's own nor in ``origins``) and, when ``loopback_only`` (no keys), requests for
    a host name that is not a loopback one."""

    def __init__(self, app: Any, *, origins: Iterable[str], loopback_only: bool) -> None:
        self.app = app
        self._origins = frozenset(origins)
        self._loopback_only = loopback_only

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refused = self._refused(dict(scope.get("headers", ())))
            if refused is not None:
                headers, body = _refusal(*refused)
                await send({"type": "http.response.start", "status": 403, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    def _refused(self, headers: dict[bytes, bytes]) -> tuple[str, str] | None:
        host = bytes(headers.get(b"host", b"")).decode("latin-1").strip().lower()
        if self._loopback_only and host and not is_loopback(_host_name(host)):
            return (
                "host_refused",
                f"host {host[:100]!r} is refused: a server without API keys answers only "
                "to loopback names (localhost, 127.0.0.1, [::1]); configure keys to serve "
                "it under another name",
            )
        raw = headers.get(b"origin")
        if raw is None:
            return None
        origin = bytes(raw).decode("latin-1").strip()
        if origin in self._origins:
            return None
        try:
            netloc = urllib.parse.urlsplit(origin).netloc.lower()
        except ValueError:
            netloc = ""
        if origin != "null" and netloc and netloc == host:
            return None  # the server's own page (plait dev)
        return (
            "origin_refused",
            f"requests from the browser origin {origin[:100]!r} are refused: allow it "
            "with --cors-origin (cors_origins=)",
        )
