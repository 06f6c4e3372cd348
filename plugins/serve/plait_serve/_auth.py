"""Who may call the server: bearer API keys, each owning the threads it made.

Keys come from ``PLAIT_SERVE_KEYS`` (separated by commas or whitespace) or a keys file
(one per line, ``#`` comments). A key is never stored: a thread records the owner as a
hash of its key. With no keys configured every caller is the one local owner, which
``plait serve`` allows on a loopback address only.

With several keys, each key has its own thread ids: the thread a key names ``x`` is
stored as ``scoped_id(owner, "x")``, so another key's ``x`` is another thread and no
answer tells a key which ids the others use (``plait_serve._app.Server.thread``).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from plait.errors import ConfigError

__all__ = [
    "ENV_KEYS",
    "LOCAL_OWNER",
    "AuthMiddleware",
    "is_loopback",
    "key_id",
    "load_keys",
    "scoped_id",
    "scoped_thread_id",
    "unscoper",
]

ENV_KEYS = "PLAIT_SERVE_KEYS"
"""The environment variable holding the server's API keys (separated by commas or spaces),
read with the keys file's when no ``keys`` are given."""
LOCAL_OWNER = "local"
"""The owner of every thread when no keys are configured."""
MIN_KEY_LENGTH = 16
_KEY_ID = "key-"  # how every key id begins


def key_id(key: str) -> str:
    """The owner id a thread records for ``key``: a hash, so the log never holds a key."""
    return _KEY_ID + hashlib.sha256(key.encode()).hexdigest()[:24]


def scoped_id(owner: str, thread_id: str) -> str:
    """Where the thread ``owner`` (a ``key_id``) names ``thread_id`` is stored on a
    server with several keys."""
    return f"{owner}/{thread_id}"


def scoped_thread_id(key: str, thread_id: str) -> str:
    """The stored id of the thread ``key`` names ``thread_id`` on a server with several
    keys: what ``agent.get_state`` and ``plait chat --thread`` take to read it outside
    the server (a server with one key or none stores ``thread_id`` as it is)."""
    return scoped_id(key_id(key), thread_id)


def unscoper(keys: Iterable[str]) -> Callable[[Any], Any] | None:
    """What turns a value a client reads into its client's words: every stored thread id
    it holds (in any text, at any depth of a JSON-like value) written as the client
    names the thread, its key's scope taken off — once, as ``Server.shown`` takes it off
    an id: a client's own id that begins like a scope keeps it. ``None`` without keys
    (ids are stored as given). Values without one are returned as they are (not
    copied)."""
    prefixes = [scoped_id(key_id(key), "") for key in keys]
    if not prefixes:
        return None
    scope = "(?:" + "|".join(map(re.escape, prefixes)) + ")"
    pattern = re.compile(f"{scope}((?:{scope})*)")  # the scopes after the first are the id's

    def unscope(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(r"\1", value) if _KEY_ID in value else value
        if isinstance(value, dict):
            told = {k: unscope(v) for k, v in value.items()}
            return value if all(told[k] is v for k, v in value.items()) else told
        if isinstance(value, list):
            items = [unscope(v) for v in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    return unscope


def _split(text: str) -> list[str]:
    return [part for part in text.replace(",", " ").split() if part]


def load_keys(
    keys: Iterable[str] | None = None,
    *,
    keys_file: str | os.PathLike[str] | None = None,
    environ: dict[str, str] | None = None,
) -> tuple[str, ...]:
    """The API keys: ``keys`` if given, else those of ``keys_file`` and of
    ``PLAIT_SERVE_KEYS``. A key shorter than 16 characters is a ``ConfigError``."""
    env = os.environ if environ is None else environ
    found: list[str] = []
    if keys is not None:
        if isinstance(keys, str):
            raise ConfigError(f"plait-serve: keys: expected a list of API keys, got {keys!r}")
        found.extend(keys)
    else:
        if keys_file is not None:
            try:
                text = Path(keys_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"plait-serve: keys file {os.fspath(keys_file)!r} cannot be read: "
                    f"{exc.strerror or exc}"
                ) from None
            for line in text.splitlines():
                found.extend(_split(line.split("#", 1)[0]))
        found.extend(_split(env.get(ENV_KEYS, "")))
    for key in found:
        if not isinstance(key, str) or len(key) < MIN_KEY_LENGTH:
            length = len(key) if isinstance(key, str) else type(key).__name__
            raise ConfigError(
                f"plait-serve: keys: expected API keys of at least {MIN_KEY_LENGTH} "
                f"characters, got one of {length}"
            )
    return tuple(dict.fromkeys(found))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _error(status: int, code: str, message: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="plait"'))
    return status, headers, body


class AuthMiddleware:
    """ASGI middleware: with keys configured, every request but ``public`` paths needs
    ``Authorization: Bearer <key>`` or ``X-Api-Key: <key>`` (else 401); the caller's
    owner id is put in ``scope["state"]["owner"]`` for the routes."""

    def __init__(self, app: Any, *, keys: tuple[str, ...], public: frozenset[str]) -> None:
        self.app = app
        self._keys = [(key.encode(), key_id(key)) for key in keys]
        self._public = public

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        owner = LOCAL_OWNER if not self._keys else self._owner(scope)
        if owner is None and scope.get("path") not in self._public:
            status, headers, body = _error(
                401,
                "unauthorized",
                "expected 'Authorization: Bearer <key>' with a key this server accepts",
            )
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        scope.setdefault("state", {})["owner"] = owner
        await self.app(scope, receive, send)

    def _owner(self, scope: dict[str, Any]) -> str | None:
        headers = dict(scope.get("headers", ()))
        scheme, _, token = bytes(headers.get(b"authorization", b"")).partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            # LangGraph's SDK sends its api_key as X-Api-Key: the same keys are accepted.
            token = bytes(headers.get(b"x-api-key", b""))
            if not token.strip():
                return None
        token = token.strip()
        owner = None
        for key, ident in self._keys:  # compare with every key: no timing tells which
            if hmac.compare_digest(token, key):
                owner = ident
        return owner
