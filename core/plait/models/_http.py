"""What the HTTP providers share: pooled httpx clients, SSE decoding, error mapping and
API-key redaction.

``OpenAIChatModel`` (and the plugins' providers) subclass ``HTTPChatModel`` and supply only
their wire format (request body, answer parsing, stream events). Every failure below the
wire format — HTTP status, timeout, refused connection, malformed body, a stream that
stops early — becomes a ``ProviderError`` here, never a raw httpx exception, and every
text that could echo the API key is redacted first. This module imports httpx, so only
the provider modules import it (``import plait`` never does).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import email.utils
import functools
import json
import logging
import os
import re
import ssl
import threading
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Self

import attrs
import cattrs
import httpx

from plait._convert import expected, number
from plait._stream import StopOnLeave
from plait.errors import ConfigError, ContextOverflowError, ProviderError
from plait.lazy import frozen
from plait.messages import AIMessage, AIMessageChunk, AnyMessage
from plait.models._leave import Shutter, sending, watch
from plait.models.base import ChatModel, ModelProfile, message_to_chunk
from plait.models.profiles import resolve_profile

if TYPE_CHECKING:
    from plait.models.base import ToolDefinition

__all__ = [
    "ChatRequest",
    "HTTPChatModel",
    "SSEDecoder",
    "SSEEvent",
    "Secret",
    "StreamParser",
    "ToolChoice",
    "merge_text_blocks",
    "parse_retry_after",
    "redact",
    "resolve_tool_choice",
    "retry_info_delay",
    "safe_tool_name",
]

logger = logging.getLogger("plait.models")

wire = cattrs.Converter()
"""Structures provider JSON into the small attrs classes each provider declares.
Unknown keys are ignored, so new API fields never break parsing."""


# -- secrets ---------------------------------------------------------------------------------


class Secret:
    """An API key that never shows itself in a repr, a str or a traceback's locals."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


# An API echoes a masked key in its 401 text ("sk-proj-****abcd"); the visible tail is still
# part of a secret, so any key-shaped token is removed, not only the exact key. The shapes
# are the vendors' knowledge: each provider class declares its own (``key_shapes``), and
# defining the class adds them here.
_KEY_SHAPES: dict[str, None] = {}
_key_shaped: re.Pattern[str] | None = None


def _declare_key_shapes(shapes: Sequence[str]) -> None:
    global _key_shaped
    new = [shape for shape in shapes if shape not in _KEY_SHAPES]
    if new:
        _KEY_SHAPES.update(dict.fromkeys(new))
        _key_shaped = re.compile("|".join(f"(?:{shape})" for shape in _KEY_SHAPES))


_CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"}
)
"""Headers whose value is a credential: given in a model's ``headers``, it is redacted from
errors as its ``api_key`` is."""


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` without any of ``secrets`` and without anything shaped like an API key of
    a provider defined in this process (each declares its ``key_shapes``)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED]")
    return _key_shaped.sub("[REDACTED]", text) if _key_shaped is not None else text


# -- what every provider reads the same way ---------------------------------------------------

TEXT_MARKS = "plait.text_marks"
"""The entry-point group where a provider plugin names the keys it puts on a text block
(Anthropic's ``cache_control`` and ``citations``, Gemini's ``thought_signature``): each
entry point's name is a key, its object the provider. Read from metadata only."""


def foreign_text_keys(own: Sequence[str] = ()) -> frozenset[str]:
    """The keys installed providers put on text blocks, less ``own``: what a provider whose
    API rejects them drops from a thread another provider wrote. Read from distribution
    metadata (no plugin is imported), so it holds in a process that never loaded them."""
    from plait import _entrypoints

    return frozenset(_entrypoints.installed(TEXT_MARKS)) - frozenset(own)


_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def safe_tool_name(value: str, *, max_length: int | None = 64) -> str:
    """``value`` as the tool and schema names every provider accepts (``^[A-Za-z0-9_-]+$``,
    at most 64 characters): each run of other characters becomes ``_``; may be empty."""
    name = _NAME_UNSAFE.sub("_", value)
    return name if max_length is None else name[:max_length]


@frozen
class ToolChoice:
    """A ``tool_choice`` read once for every provider, which then writes its wire form:
    ``mode`` is ``"auto"``, ``"none"``, ``"required"`` (also spelled ``"any"``) or
    ``"tool"``; for ``"tool"``, ``name`` is the tool's and ``tool`` its definition (``None``
    for a name the provider added itself, ``extra``)."""

    mode: str
    name: str | None = None
    tool: ToolDefinition | None = None


def resolve_tool_choice(
    provider: str, choice: str, tools: Sequence[ToolDefinition], *, extra: Sequence[str] = ()
) -> ToolChoice:
    """What ``choice`` asks of ``provider``'s model; a name that is no offered tool (nor
    one of ``extra``) is a ``ConfigError`` listing the tools, and so is a choice that
    needs a tool (``"required"``, a name) when none is offered: never dropped unsent."""
    if choice in ("auto", "none"):
        return ToolChoice(choice)
    if not tools and not extra:
        wanted = "'auto' or 'none' (no tool is offered)"
        raise ConfigError(f"{provider}: tool_choice: {expected(wanted, choice)}")
    if choice in ("required", "any"):
        return ToolChoice("required")
    for tool in tools:
        if tool.name == choice:
            return ToolChoice("tool", choice, tool)
    if choice in extra:
        return ToolChoice("tool", choice)
    names = ", ".join(tool.name for tool in tools) or "none"
    wanted = f"'auto', 'none', 'required' or the name of a tool ({names})"
    raise ConfigError(f"{provider}: tool_choice: {expected(wanted, choice)}")


# -- retry-after -----------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date).

    ``retry-after-ms`` wins because it is the more precise of the two; an unparsable or
    negative value is ignored rather than guessed at.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            millis = float(raw_ms)
        except ValueError:
            millis = -1.0
        if millis >= 0:
            return millis / 1000.0
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        current = time.time() if now is None else now
        return max(0.0, when.timestamp() - current)
    return seconds if seconds >= 0 else None


# -- server-sent events ----------------------------------------------------------------------


@frozen
class SSEEvent:
    """One dispatched server-sent event: its ``event`` name and its (joined) ``data``."""

    event: str
    data: str


_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEDecoder:
    """An incremental SSE parser: text goes in as it arrives, cut anywhere, and whole
    events come out (the WHATWG rules: ``field: value`` lines, ``:`` comments, a blank
    line dispatches, multi-line ``data`` joined with newlines)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, text: str) -> list[SSEEvent]:
        self._buffer += text
        events: list[SSEEvent] = []
        start = 0
        for match in _LINE_END.finditer(self._buffer):
            # A lone "\r" at the very end may be the first half of "\r\n": wait for more.
            if match.group() == "\r" and match.end() == len(self._buffer):
                break
            event = self._line(self._buffer[start : match.start()])
            if event is not None:
                events.append(event)
            start = match.end()
        self._buffer = self._buffer[start:]
        return events

    def finish(self) -> list[SSEEvent]:
        """Events left when the stream ends: a last line without its terminator, and an
        event the server did not close with a blank line."""
        events: list[SSEEvent] = []
        rest, self._buffer = self._buffer.rstrip("\r"), ""
        if rest:
            event = self._line(rest)
            if event is not None:
                events.append(event)
        event = self._line("")
        if event is not None:
            events.append(event)
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and not self._event:
                return None
            event = SSEEvent(self._event or "message", "\n".join(self._data))
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


# -- errors ----------------------------------------------------------------------------------


@frozen
class _APIError:
    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    metadata: dict[str, Any] | None = None
    """OpenRouter's: ``raw`` holds the upstream service's own reason."""
    status: str | None = None
    """Google's: the canonical error name (``NOT_FOUND``, ``RESOURCE_EXHAUSTED``)."""
    details: Any = None
    """Google's: typed detail objects, among them ``RetryInfo`` (``retry_info_delay``)."""


@frozen
class _ErrorEnvelope:
    """The error bodies seen in the wild: ``{"error": {...}}`` (OpenAI, Anthropic),
    ``{"error": "text"}`` (Ollama) and a flat ``{"message", "type", "code"}`` (vLLM)."""

    error: _APIError | str | None = None
    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    request_id: str | None = None


def _structure_error_field(value: Any, _: Any) -> _APIError | str | None:
    if value is None or isinstance(value, str):
        return value
    return wire.structure(value, _APIError)


def _structure_code(value: Any, _: Any) -> str | int | None:
    return value if isinstance(value, (str, int)) else None


wire.register_structure_hook(_APIError | str | None, _structure_error_field)
wire.register_structure_hook(str | int | None, _structure_code)


@frozen
class ErrorDetails:
    """What an error body says: the message, the error type (its ``code`` when that is a
    name, else ``type``, else Google's ``status``) and the request id some APIs put in the
    body (Anthropic)."""

    message: str
    type: str | None = None
    request_id: str | None = None
    retry_after: float | None = None
    """Seconds to wait that the body gives (Google's ``RetryInfo``), for an API that puts
    it there rather than in a ``retry-after`` header."""


_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)s\s*")


def retry_info_delay(details: Any) -> float | None:
    """The delay a Google API error asks for: the ``retryDelay`` of the
    ``type.googleapis.com/google.rpc.RetryInfo`` object in its ``error.details`` (a JSON
    Duration, ``"7s"`` or ``"0.5s"``), in seconds; ``None`` when there is none."""
    if not isinstance(details, list):
        return None
    for item in details:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("@type")
        if not isinstance(kind, str) or not kind.endswith("google.rpc.RetryInfo"):
            continue
        delay = item.get("retryDelay")
        if isinstance(delay, str):
            match = _DURATION.fullmatch(delay)
            if match is not None:
                return float(match[1])
        elif isinstance(delay, Mapping):  # the proto form some clients log
            seconds, nanos = delay.get("seconds", 0), delay.get("nanos", 0)
            try:
                return max(0.0, float(seconds) + float(nanos) / 1e9)
            except (TypeError, ValueError):
                return None
    return None


def error_details(content: bytes) -> ErrorDetails:
    """The details of an error body, whichever of the known shapes it has."""
    text = content.decode("utf-8", errors="replace").strip()
    try:
        envelope = wire.structure(json.loads(text), _ErrorEnvelope)
    except (ValueError, TypeError, RecursionError, cattrs.BaseValidationError):
        return ErrorDetails(text[:500] or "(empty body)")
    detail = envelope.error
    if isinstance(detail, str):
        return ErrorDetails(detail, None, envelope.request_id)
    if detail is None:
        detail = _APIError(envelope.message, envelope.type, envelope.code)
    code = detail.code if isinstance(detail.code, str) and detail.code else None
    message = detail.message or text[:500] or "(empty body)"
    raw = (detail.metadata or {}).get("raw")
    if isinstance(raw, str) and raw and raw not in message:
        message = f"{message}: {raw}"
    return ErrorDetails(
        message,
        code or detail.type or detail.status,
        envelope.request_id,
        retry_info_delay(detail.details),
    )


_INVALID_REQUEST = ("invalid_request", "bad_request", "badrequest")
"""Error types naming a request that will fail however often it is sent, whatever the
status (llama.cpp and some proxies answer them with a 500)."""

_INVALID_REQUEST_TEXT = re.compile(
    r"\binvalid request\b|\bbad request\b|['\"]loc['\"]\s*:\s*[(\[]\s*['\"]body['\"]",
    re.IGNORECASE,
)
"""An error message saying the request itself was refused, whatever its status and type:
"invalid request", "bad request", or a validation error located in the request body
(``'loc': ('body', 'tool_choice', ...)``), which llama-cpp-python's server (FastAPI)
answers with a 500 of type ``internal_server_error``."""


def says_invalid_request(error_type: str | None, message: str) -> bool:
    """Whether an error's type or message says the request was invalid: sending it
    again cannot succeed, whatever the HTTP status."""
    if error_type and any(kind in error_type.lower() for kind in _INVALID_REQUEST):
        return True
    return _INVALID_REQUEST_TEXT.search(message) is not None


def _first_given(*values: float | None) -> float | None:
    return next((value for value in values if value is not None), None)


def _replace(headers: dict[str, str], more: Mapping[str, str]) -> None:
    """Put ``more`` in ``headers``, each replacing a header of the same name however either
    is capitalised: the model's ``headers`` over the vendor's ``api_headers``, a request's
    over both."""
    for name, value in more.items():
        for same in [k for k in headers if k.lower() == name.lower()]:
            del headers[same]
        headers[name] = value


def _is_json(response: httpx.Response) -> bool:
    """A server that ignored ``"stream": true`` answers with one JSON body."""
    content_type = response.headers.get("content-type", "")
    return "json" in content_type and "event-stream" not in content_type


_RETRYABLE_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client: building one loads the CA bundle (~0.1 s), and an
    agent with fallbacks or sub-agents makes many clients. Like httpx's default, it trusts
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set, else certifi's bundle."""
    cafile = os.environ.get("SSL_CERT_FILE")
    capath = os.environ.get("SSL_CERT_DIR")
    if cafile or capath:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


# -- the model base --------------------------------------------------------------------------


class StreamParser(abc.ABC):
    """Turns one provider's SSE events into chunks; knows when the answer is complete."""

    complete: bool = False

    @abc.abstractmethod
    def feed(self, event: SSEEvent) -> list[AIMessageChunk]:
        """Chunks for ``event`` (none for pings); raises ``ProviderError`` on error events."""


@frozen
class PreparedCall:
    """One prepared request: the URL, the JSON body, and what parsing needs to know."""

    url: str
    body: dict[str, Any]
    context: Any = None
    headers: dict[str, str] = attrs.Factory(dict)
    """Headers this request adds to the model's own (e.g. Anthropic's ``anthropic-beta``)."""


class ChatRequest(NamedTuple):
    """One model call as a provider's ``_prepare`` reads it: the messages, the named options
    of ``ChatModel.invoke``, the settings (the model's own, overridden by the call's) and
    whether the answer is streamed.

    A named tuple rather than an attrs class: one is made for every model call, and a
    tuple is made in a third of the time of a frozen attrs instance."""

    messages: Sequence[AnyMessage]
    system_prompt: str | None = None
    tools: Sequence[ToolDefinition] = ()
    tool_choice: str | None = None
    response_format: Mapping[str, Any] | None = None
    provider_options: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] = MappingProxyType({})
    stream: bool = False

    def options_for(self, provider: str) -> dict[str, Any]:
        """A copy of ``provider``'s own ``provider_options`` (``{}`` when none are given)."""
        return dict((self.provider_options or {}).get(provider, {}))


_NAMED_OPTIONS = frozenset(
    ("system_prompt", "tools", "tool_choice", "response_format", "provider_options")
)


class HTTPChatModel(ChatModel):
    """A chat model over HTTP with one pooled ``httpx.Client`` and one ``httpx.AsyncClient``
    per instance, both created on first use; ``close``/``aclose`` release them."""

    provider: ClassVar[str] = "http"
    api_key_env: ClassVar[str] = ""
    base_url_env: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""
    key_shapes: ClassVar[Sequence[str]] = ()
    """Regular expressions matching this vendor's API keys (word-bounded): ``redact``
    removes any such token from every provider's errors, not only the exact key."""
    known_profiles: ClassVar[Mapping[str, ModelProfile]] = {}
    """This vendor's documented limits by model family (``lookup_profile`` matches a name
    to its family), the default ``profile`` of an instance."""
    auth_header: ClassVar[str] = "authorization"
    """The header that carries the API key."""
    auth_scheme: ClassVar[str] = "Bearer"
    """What precedes the key in ``auth_header`` ("Bearer KEY"); "" sends the bare key."""
    api_headers: ClassVar[Mapping[str, str]] = {}
    """Headers every request sends (an API version), unless the model's ``headers`` give
    the same header."""
    overflow_statuses: ClassVar[frozenset[int]] = frozenset((400, 413))
    """The HTTP statuses with which this vendor says a prompt is over the context window."""
    overflow_words: ClassVar[Sequence[str]] = ()
    """Lowercase words in such an error's type or message that say so; an error answered
    with one of ``overflow_statuses`` and one of these is a ``ContextOverflowError``."""

    _address_note: str = ""
    """Where ``base_url`` came from, said when nothing answers there (set by a factory that
    chose the address itself, such as the ``llamacpp:`` id)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _declare_key_shapes(cls.key_shapes)

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 60.0,
        profile: ModelProfile | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{self.provider}: model: {expected('a non-empty name', model)}")
        problem = number(above=0, optional=True).problem(timeout)
        if problem is not None:
            raise ConfigError(f"{self.provider}: timeout: {problem}")
        if api_key is not None and not isinstance(api_key, str):
            # its type only: a key given as bytes is still a key, never shown in an error
            raise ConfigError(
                f"{self.provider}: api_key: expected a string or None, "
                f"got a {type(api_key).__name__}"
            )
        if base_url is not None and not isinstance(base_url, str):
            raise ConfigError(f"{self.provider}: base_url: {expected('a URL or None', base_url)}")
        if headers is not None and not (
            isinstance(headers, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        ):
            # names only: a header's value may be a credential
            raise ConfigError(
                f"{self.provider}: headers: expected a mapping of header names to strings, "
                f"got a {type(headers).__name__}"
                + (f" with {sorted(map(str, headers))}" if isinstance(headers, Mapping) else "")
            )
        self.model_name = model
        key = api_key if api_key is not None else os.environ.get(self.api_key_env, "")
        self._api_key = Secret(key)
        url = base_url or os.environ.get(self.base_url_env) or self.default_base_url
        self.base_url = url.rstrip("/")
        if not key and self.base_url == self.default_base_url.rstrip("/"):
            raise ConfigError(
                f"{self.provider}: no API key; set {self.api_key_env} or pass api_key= "
                f"(or point base_url= / {self.base_url_env} at a server that needs none)"
            )
        self.timeout = timeout
        self.extra_headers = dict(headers or {})
        self.settings = dict(settings)
        self.profile = resolve_profile(self.provider, self.known_profiles, model, profile)
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        self._aclients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    @classmethod
    def from_id(cls, name: str, **settings: Any) -> Self:
        """The ``plait.models`` entry-point factory: ``"provider:NAME"`` → ``cls(NAME, ...)``."""
        return cls(name, **settings)

    # -- what each provider supplies -----------------------------------------------------

    def _auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry ``key``: ``auth_header``, ``auth_scheme`` then the key."""
        return {self.auth_header: f"{self.auth_scheme} {key}" if self.auth_scheme else key}

    @abc.abstractmethod
    def _prepare(self, request: ChatRequest) -> PreparedCall:
        """The request for one call."""

    @abc.abstractmethod
    def _parse(self, call: PreparedCall, data: Any, metadata: dict[str, Any]) -> AIMessage:
        """The answer in ``data`` (structured with ``wire``; shape errors are caught)."""

    @abc.abstractmethod
    def _stream_parser(self, call: PreparedCall, metadata: dict[str, Any], id: str) -> StreamParser:
        """A parser for the SSE events of one streamed call."""

    def _is_overflow(self, status: int, error_type: str | None, message: str) -> bool:
        """Whether an error response means the prompt exceeds the context window (read
        from ``overflow_statuses`` and ``overflow_words``)."""
        if status not in self.overflow_statuses:
            return False
        text = f"{error_type or ''} {message}".lower()
        return any(word in text for word in self.overflow_words)

    # -- clients -------------------------------------------------------------------------

    def _client_timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.timeout)

    def _sync_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                client = httpx.Client(timeout=self._client_timeout(), verify=_tls())
                self._client = watch(client)  # a stream's reader who leaves stops its call
            return self._client

    def _async_client(self) -> httpx.AsyncClient:
        # An AsyncClient's pooled connections belong to the loop that opened them, so each
        # running loop gets its own client (sync agents run async hooks on their own loop).
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._aclients.get(id(loop))
            if entry is None or entry[0] is not loop:
                for key, (old, _) in list(self._aclients.items()):
                    if old.is_closed():
                        del self._aclients[key]
                entry = (loop, httpx.AsyncClient(timeout=self._client_timeout(), verify=_tls()))
                self._aclients[id(loop)] = entry
            return entry[1]

    def close(self) -> None:
        """Close the sync client (the next call opens a new one)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close the async client of the running loop, and the sync client."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._aclients.pop(id(loop), None)
        if entry is not None:
            await entry[1].aclose()
        self.close()

    # -- the four calls ------------------------------------------------------------------

    def _call(
        self, messages: Sequence[AnyMessage], options: Mapping[str, Any], *, stream: bool
    ) -> PreparedCall:
        """The request for one call: the named options of ``ChatModel.invoke`` go to
        ``_prepare`` as such, every other key is a provider setting."""
        settings = dict(self.settings)
        named: dict[str, Any] = {}
        if isinstance(settings.get("tool_choice"), str):
            # The model's own tool_choice (init_chat_model(..., tool_choice="required"),
            # an agent file's model_settings) is read as a call's: the default of the
            # call's, never sent raw in a form the provider does not take.
            named["tool_choice"] = settings.pop("tool_choice")
        for key, value in options.items():
            if key in _NAMED_OPTIONS:
                if value is not None or key not in named:
                    named[key] = value
            else:
                settings[key] = value
        get = named.get
        return self._prepare(
            ChatRequest(  # in field order: positional arguments make it fastest
                messages,
                get("system_prompt"),
                get("tools") or (),
                get("tool_choice"),
                get("response_format"),
                get("provider_options"),
                settings,
                stream,
            )
        )

    def invoke(
        self,
        messages: Sequence[AnyMessage],
        *,
        system_prompt: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        tool_choice: str | None = None,
        response_format: Mapping[str, Any] | None = None,
        provider_options: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> AIMessage:
        with self._redacting():
            call = self._call(
                messages,
                {
                    "system_prompt": system_prompt,
                    "tools": tools,
                    "tool_choice": tool_choice,
                    "response_format": response_format,
                    "provider_options": provider_options,
                    **settings,
                },
                stream=False,
            )
            client = self._sync_client()
            shutter = Shutter()
            with StopOnLeave(shutter):  # the stream's reader left: cancelled, even unanswered
                noting = sending.set(shutter)
                try:
                    with self._guard():
                        response = client.post(
                            call.url, json=call.body, headers=self._headers(stream=False, call=call)
                        )
                        content = response.read()
                finally:
                    sending.reset(noting)
            return self._answer(call, response, content)

    async def ainvoke(self, messages: Sequence[AnyMessage], **options: Any) -> AIMessage:
        with self._redacting():
            call = self._call(messages, options, stream=False)
            with self._guard():
                response = await self._async_client().post(
                    call.url, json=call.body, headers=self._headers(stream=False, call=call)
                )
                content = await response.aread()
            return self._answer(call, response, content)

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        with self._redacting():
            call = self._call(messages, options, stream=True)
            client = self._sync_client()
            shutter = Shutter()
            # the stream's reader left: cancelled, waiting for headers or for a token
            with StopOnLeave(shutter):
                with self._guard():
                    request = client.build_request(
                        "POST",
                        call.url,
                        json=call.body,
                        headers=self._headers(stream=True, call=call),
                    )
                    noting = sending.set(shutter)  # set and reset between two yields
                    try:
                        response = client.send(request, stream=True)
                    finally:
                        sending.reset(noting)
                shutter.response = response
                try:
                    if response.status_code >= 400:
                        with self._guard():
                            content = response.read()
                        raise self._status_error(response, content)
                    if _is_json(response):
                        with self._guard():
                            content = response.read()
                        yield message_to_chunk(self._answer(call, response, content))
                        return
                    parser = self._stream_parser(call, self._metadata(response), uuid.uuid4().hex)
                    decoder = SSEDecoder()
                    received = False
                    with self._guard(stream=True):
                        for text in response.iter_text():
                            received = received or bool(text)
                            for event in decoder.feed(text):
                                yield from parser.feed(event)
                    for event in decoder.finish():
                        yield from self._feed_last(parser, event)
                    self._check_complete(parser, received)
                finally:
                    response.close()

    async def astream(
        self, messages: Sequence[AnyMessage], **options: Any
    ) -> AsyncIterator[AIMessageChunk]:
        with self._redacting():
            call = self._call(messages, options, stream=True)
            client = self._async_client()
            with self._guard():
                request = client.build_request(
                    "POST", call.url, json=call.body, headers=self._headers(stream=True, call=call)
                )
                response = await client.send(request, stream=True)
            try:
                if response.status_code >= 400:
                    with self._guard():
                        content = await response.aread()
                    raise self._status_error(response, content)
                if _is_json(response):
                    with self._guard():
                        content = await response.aread()
                    yield message_to_chunk(self._answer(call, response, content))
                    return
                parser = self._stream_parser(call, self._metadata(response), uuid.uuid4().hex)
                decoder = SSEDecoder()
                received = False
                shutter = Shutter()
                shutter.response = response
                with StopOnLeave(shutter):  # a dropped astream: as stream()
                    with self._guard(stream=True):
                        async for text in response.aiter_text():
                            received = received or bool(text)
                            for event in decoder.feed(text):
                                for chunk in parser.feed(event):
                                    yield chunk
                    for event in decoder.finish():
                        for chunk in self._feed_last(parser, event):
                            yield chunk
                    self._check_complete(parser, received)
            finally:
                await response.aclose()

    # -- shared plumbing -----------------------------------------------------------------

    def _headers(self, *, stream: bool, call: PreparedCall | None = None) -> dict[str, str]:
        headers = {"content-type": "application/json", **self.api_headers}
        if self.extra_headers:
            _replace(headers, self.extra_headers)
        headers["accept"] = "text/event-stream" if stream else "application/json"
        key = self._api_key.get()
        if key:
            headers.update(self._auth_headers(key))
        if call is not None and call.headers:
            _replace(headers, call.headers)
        return headers

    def _secrets(self) -> tuple[str, ...]:
        """The key, credentials given in ``headers`` instead of one (an OAuth token
        for Vertex AI, Azure's ``api-key``) and the password of a ``base_url`` that
        carries one (``https://user:pass@gateway/v1``, sent as basic auth): each is
        redacted from errors and logs like the key."""
        found = [self._api_key.get()]
        with contextlib.suppress(ValueError):
            password = urllib.parse.urlsplit(self.base_url).password
            if password:
                found += [password, urllib.parse.unquote(password)]
        for name, value in self.extra_headers.items():
            if name.lower() in _CREDENTIAL_HEADERS and isinstance(value, str):
                found.append(value)
                scheme, _, token = value.partition(" ")
                if token and scheme.isalpha():  # "Bearer <token>": the token alone too
                    found.append(token.strip())
        return tuple(found)

    def _metadata(self, response: httpx.Response) -> dict[str, Any]:
        request_id = response.headers.get("x-request-id") or response.headers.get("request-id")
        logger.debug(
            "%s POST %s -> %s (request id %s)",
            self.provider,
            redact(str(response.request.url), self._secrets()),
            response.status_code,
            request_id,
        )
        return {"provider": self.provider, "request_id": request_id}

    def _answer(self, call: PreparedCall, response: httpx.Response, content: bytes) -> AIMessage:
        if response.status_code >= 400:
            raise self._status_error(response, content)
        metadata = self._metadata(response)
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):
            raise self._invalid(
                response.status_code, "the response body is not JSON", content
            ) from None
        try:
            return self._parse(call, data, metadata)
        except (cattrs.BaseValidationError, ValueError, TypeError, KeyError, RecursionError) as exc:
            raise self._invalid(
                response.status_code, f"unexpected response shape ({type(exc).__name__})", content
            ) from None

    def _invalid(self, status: int, what: str, content: bytes) -> ProviderError:
        sample = redact(content[:200].decode("utf-8", errors="replace"), self._secrets())
        return ProviderError(
            f"{self.provider}: {what}: {sample!r}",
            status_code=status,
            provider=self.provider,
            error_type="invalid_response",
            retryable=True,
        )

    def _status_error(self, response: httpx.Response, content: bytes) -> ProviderError:
        status = response.status_code
        self._metadata(response)
        details = error_details(content)
        message, error_type = redact(details.message, self._secrets()), details.type
        retryable: bool | None = None
        should_retry = response.headers.get("x-should-retry")
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"
        elif says_invalid_request(error_type, message):
            retryable = False
        request_id = (
            response.headers.get("x-request-id")
            or response.headers.get("request-id")
            or details.request_id
        )
        suffix = f" (request id {request_id})" if request_id else ""
        text = (
            f"{self.provider} API error {status}"
            + (f" ({error_type})" if error_type else "")
            + f": {message}{suffix}"
        )
        kwargs: dict[str, Any] = dict(
            status_code=status,
            retry_after=_first_given(parse_retry_after(response.headers), details.retry_after),
            provider=self.provider,
            error_type=error_type,
            request_id=request_id,
        )
        if self._is_overflow(status, error_type, message):
            return ContextOverflowError(text, **kwargs)
        return ProviderError(text, retryable=retryable, **kwargs)

    def _scrub(self, exc: ProviderError) -> None:
        """The one redaction path every provider error leaves through: the key (and
        anything key-shaped) out of its text, and no exception context kept, whose
        request would still hold the key in its headers."""
        text = redact(exc.message, self._secrets())
        if text != exc.message or exc.args != (text,):
            exc.message = text
            exc.args = (text,)
        exc.__cause__ = None
        exc.__context__ = None
        exc.__suppress_context__ = True

    @contextlib.contextmanager
    def _redacting(self) -> Iterator[None]:
        try:
            yield
        except ProviderError as exc:
            self._scrub(exc)
            raise

    def _feed_last(self, parser: StreamParser, event: SSEEvent) -> list[AIMessageChunk]:
        try:
            return parser.feed(event)
        except ProviderError as exc:
            if exc.error_type != "invalid_response":
                raise
        raise self._cut()

    def _check_complete(self, parser: StreamParser, received: bool = True) -> None:
        if parser.complete:
            return
        if not received:
            # A stream that ends cleanly before its first byte was not cut: the server
            # chose to say nothing. llama-cpp-python's server does so for every error it
            # meets once the stream has started (a prompt longer than its context window,
            # a tool call it cannot stream), logging the reason instead; the same request
            # fails the same way again, so it is not retried.
            raise ProviderError(
                f"{self.provider}: the server ended the stream without sending anything; a "
                "server that fails after starting to stream does this (llama-cpp-python, "
                "for a prompt longer than its context window or a tool call it cannot "
                "stream): its log says why",
                provider=self.provider,
                error_type="empty_stream",
                retryable=False,
            )
        raise self._cut()

    def _cut(self) -> ProviderError:
        return ProviderError(
            f"{self.provider}: the stream ended before the answer was complete (no terminal event)",
            provider=self.provider,
            error_type="stream_interrupted",
            retryable=True,
        )

    @contextlib.contextmanager
    def _guard(self, *, stream: bool = False) -> Iterator[None]:
        """Map every httpx failure inside the block to a ``ProviderError``."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise ProviderError(
                f"{self.provider}: the request timed out after {self.timeout}s "
                f"({type(exc).__name__})",
                provider=self.provider,
                error_type="timeout",
                retryable=True,
            ) from None
        except httpx.ConnectError as exc:
            raise ProviderError(
                f"{self.provider}: could not connect to {self.base_url}{self._address_note}: "
                f"{redact(str(exc), self._secrets())}",
                provider=self.provider,
                error_type="connection_error",
                retryable=True,
            ) from None
        except httpx.HTTPError as exc:
            kind = "stream_interrupted" if stream else "transport_error"
            what = "the stream was cut" if stream else "the request failed"
            raise ProviderError(
                f"{self.provider}: {what}: {type(exc).__name__}: "
                f"{redact(str(exc), self._secrets())}",
                provider=self.provider,
                error_type=kind,
                retryable=isinstance(exc, _RETRYABLE_TRANSPORT),
            ) from None


_TRANSIENT_TYPES = frozenset(
    {
        None,
        "overloaded_error",
        "api_error",
        "rate_limit_error",
        "timeout_error",
        "server_error",
        "rate_limit_exceeded",
    }
)


def stream_error(provider: str, message: str, error_type: str | None) -> ProviderError:
    """An error the server reported inside a stream (after a 200 status)."""
    return ProviderError(
        f"{provider} stream error" + (f" ({error_type})" if error_type else "") + f": {message}",
        provider=provider,
        error_type=error_type,
        retryable=error_type in _TRANSIENT_TYPES,
    )


def body_error(provider: str, message: str, error_type: str | None) -> ProviderError:
    """An error body the server sent with a 200 status, instead of an answer."""
    return ProviderError(
        f"{provider} API error in a 200 response"
        + (f" ({error_type})" if error_type else "")
        + f": {message}",
        status_code=200,
        provider=provider,
        error_type=error_type,
        retryable=error_type in _TRANSIENT_TYPES,
    )


def loads_event(provider: str, event: SSEEvent, cls: type[Any]) -> Any:
    """The JSON ``data`` of ``event`` structured into ``cls``; bad data is an
    ``invalid_response`` error (at the end of a stream: a cut)."""
    try:
        return wire.structure(json.loads(event.data), cls)
    except (ValueError, TypeError, RecursionError, cattrs.BaseValidationError):
        raise ProviderError(
            f"{provider}: malformed stream event {event.event!r}: {event.data[:200]!r}",
            provider=provider,
            error_type="invalid_response",
            retryable=True,
        ) from None


def merge_text_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent plain text blocks as one, empty ones dropped: the block list
    ``assemble_chunks`` builds from a stream, so ``invoke`` can return the same."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        plain = set(block) == {"type", "text"} and block["type"] == "text"
        if plain and out and set(out[-1]) == {"type", "text"} and out[-1]["type"] == "text":
            out[-1] = {"type": "text", "text": str(out[-1]["text"]) + str(block["text"])}
        elif not (plain and not block["text"]):
            out.append(block)
    return out
