"""``GoogleChatModel``: Gemini's ``generateContent`` / ``streamGenerateContent`` over httpx.

Built on ``plait.models.http.HTTPChatModel`` — the kernel's public base for HTTP
providers — it supplies only the wire format (``_request`` builds the body, ``_wire``
reads the answer); pooled clients, async, streaming, typed errors and key redaction come
from the base.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import cattrs

from plait import ModelProfile
from plait.errors import ConfigError, ProviderError
from plait.messages import AIMessage, AIMessageChunk, assemble_chunks
from plait.models.http import ChatRequest, HTTPChatModel, PreparedCall, SSEEvent, StreamParser
from plait.options import expected
from plait_google import _request
from plait_google._wire import PROVIDER, PartReader

if TYPE_CHECKING:
    pass

__all__ = ["GoogleChatModel"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
VERTEX_API_VERSION = "v1beta1"
KEY_ENVS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
"""Where the key is read from, in the official SDK's order (``GOOGLE_API_KEY`` wins)."""


def _p(max_input: int, max_output: int) -> ModelProfile:
    return ModelProfile(max_input_tokens=max_input, max_output_tokens=max_output)


PROFILES: dict[str, ModelProfile] = {
    "gemini-3-pro-preview": _p(1_048_576, 65_536),
    "gemini-3-flash-preview": _p(1_048_576, 65_536),
    "gemini-2.5-pro": _p(1_048_576, 65_536),
    "gemini-2.5-flash": _p(1_048_576, 65_536),
    "gemini-2.5-flash-lite": _p(1_048_576, 65_536),
    "gemini-2.0-flash": _p(1_048_576, 8_192),
    "gemini-2.0-flash-lite": _p(1_048_576, 8_192),
    "gemini-1.5-pro": _p(2_097_152, 8_192),
    "gemini-1.5-flash": _p(1_048_576, 8_192),
}
"""Google's documented input and output limits. A name matches its family exactly or
with a version or preview suffix (``gemini-2.5-flash-preview-09-2025``,
``gemini-2.0-flash-001``)."""


def lookup_profile(model: str) -> ModelProfile | None:
    best = None
    for family in PROFILES:
        if model == family or model.startswith(family + "-"):
            rest = model[len(family) + 1 :]
            if model == family or rest[:1].isdigit() or rest.startswith(("preview", "latest")):
                if best is None or len(family) > len(best):
                    best = family
    return PROFILES[best] if best is not None else None


OVERFLOW_WORDS = ("input token count", "exceeds the maximum number of tokens")


class GoogleChatModel(HTTPChatModel):
    """A Gemini model: ``GoogleChatModel("gemini-2.5-flash", temperature=0)``, or the id
    ``"google:gemini-2.5-flash"``.

    The key comes from ``api_key``, else ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``, and
    is sent as the ``x-goog-api-key`` header. ``base_url`` (else
    ``GOOGLE_GEMINI_BASE_URL``) is the host, ``api_version`` the path's version. With
    ``vertex=True`` the model is reached through Vertex AI instead: ``project`` and
    ``location`` (else ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``, default
    ``global``) make the path; without a project it is Vertex's express mode (an API
    key). Other keyword settings are checked here and sent with every request.
    """

    provider: ClassVar[str] = PROVIDER
    api_key_env: ClassVar[str] = "GOOGLE_API_KEY"
    base_url_env: ClassVar[str] = "GOOGLE_GEMINI_BASE_URL"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    key_shapes: ClassVar[Sequence[str]] = (r"\bAIza[A-Za-z0-9_\-]{35}",)
    auth_header: ClassVar[str] = "x-goog-api-key"
    auth_scheme: ClassVar[str] = ""
    overflow_statuses: ClassVar[frozenset[int]] = frozenset((400,))
    overflow_words: ClassVar[Sequence[str]] = OVERFLOW_WORDS
    """Google API keys: ``AIza`` and 35 more characters."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_version: str | None = None,
        vertex: bool = False,
        project: str | None = None,
        location: str | None = None,
        timeout: float | None = 60.0,
        profile: ModelProfile | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> None:
        if isinstance(model, str) and model.startswith("models/"):
            model = model[len("models/") :]
        if not isinstance(vertex, bool):
            raise ConfigError(f"{PROVIDER}: vertex: {expected('a bool', vertex)}")
        key = api_key
        if key is None:
            key = next((os.environ[name] for name in KEY_ENVS if os.environ.get(name)), "")
        authorized = any(name.lower() == "authorization" for name in headers or {})
        self.vertex = vertex
        self.project = project or (os.environ.get("GOOGLE_CLOUD_PROJECT") if vertex else None)
        self.location = location or os.environ.get("GOOGLE_CLOUD_LOCATION") or "global"
        if vertex:
            if not base_url:
                base_url = os.environ.get("GOOGLE_VERTEX_BASE_URL") or (
                    "https://aiplatform.googleapis.com"
                    if self.location == "global" or not self.project
                    else f"https://{self.location}-aiplatform.googleapis.com"
                )
            if not key and not authorized:
                raise ConfigError(
                    f"{PROVIDER}: Vertex AI needs credentials: an API key (api_key= or "
                    f"{' / '.join(KEY_ENVS)}; express mode) or an OAuth token in "
                    'headers={"Authorization": "Bearer ..."}'
                )
        else:
            url = (base_url or os.environ.get(self.base_url_env) or DEFAULT_BASE_URL).rstrip("/")
            if not key and url == DEFAULT_BASE_URL:
                raise ConfigError(
                    f"{PROVIDER}: no API key; set {' or '.join(KEY_ENVS)} or pass api_key= "
                    f"(or point base_url= / {self.base_url_env} at a server that needs none)"
                )
        _request.check_settings(settings)
        super().__init__(
            model,
            api_key=key,
            base_url=base_url,
            timeout=timeout,
            profile=profile,
            headers=headers,
            **settings,
        )
        self.api_version = (api_version or (VERTEX_API_VERSION if vertex else API_VERSION)).strip(
            "/"
        )
        if not isinstance(profile, ModelProfile):
            known = lookup_profile(model)
            if known is not None:
                self.profile = attrs.evolve(known, **dict(profile or {}))

    def model_url(self, method: str) -> str:
        """The URL of ``method`` (``generateContent``, ``streamGenerateContent``)."""
        if not self.vertex:
            path = f"models/{self.model_name}"
        elif self.project:
            path = (
                f"projects/{self.project}/locations/{self.location}/publishers/google/"
                f"models/{self.model_name}"
            )
        else:
            path = f"publishers/google/models/{self.model_name}"
        return f"{self.base_url}/{self.api_version}/{path}:{method}"

    def _prepare(self, request: ChatRequest) -> PreparedCall:
        body = _request.body(request, model=self.model_name)
        url = self.model_url("streamGenerateContent") + "?alt=sse" if request.stream else ""
        return PreparedCall(url or self.model_url("generateContent"), body)

    def _parse(self, call: PreparedCall, data: Any, metadata: dict[str, Any]) -> AIMessage:
        # streamGenerateContent without alt=sse answers with a JSON array of responses.
        reader = PartReader(None, metadata)
        chunks: list[AIMessageChunk] = []
        for response in data if isinstance(data, list) else [data]:
            chunks.extend(reader.feed(response))
        chunks.extend(reader.finish())
        if not reader.finished:
            raise ValueError("no candidate finished")
        return assemble_chunks(chunks)

    def _stream_parser(self, call: PreparedCall, metadata: dict[str, Any], id: str) -> StreamParser:
        return _GeminiStream(PartReader(id, metadata))


class _GeminiStream(StreamParser):
    """Each SSE event's data is one ``GenerateContentResponse``; the stream is whole once
    the candidate has a finish reason."""

    def __init__(self, reader: PartReader) -> None:
        self.reader = reader

    def feed(self, event: SSEEvent) -> list[AIMessageChunk]:
        try:
            chunks = self.reader.feed(json.loads(event.data))
        except (ValueError, TypeError, KeyError, RecursionError, cattrs.BaseValidationError):
            raise ProviderError(
                f"{PROVIDER}: malformed stream event: {event.data[:200]!r}",
                provider=PROVIDER,
                error_type="invalid_response",
                retryable=True,
            ) from None
        self.complete = self.reader.finished
        return chunks
