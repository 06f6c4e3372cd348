"""Image blocks in any provider's form, read and written, so a user's image survives a
thread that moves between providers (``model_fallback``, a thread carried on elsewhere).

The forms: Chat Completions ``{"type": "image_url", "image_url": {"url", "detail"}}``,
Responses ``{"type": "input_image", "image_url", "detail"}``, Anthropic ``{"type":
"image", "source": {"type": "base64", "media_type", "data"} | {"type": "url", "url"}}``
and Gemini's ``inlineData``/``fileData`` part blocks. A URL is a ``data:`` URL (base64) or
a web address; a Gemini ``fileData`` URI that is not ``http(s)`` (``gs://``) has no form
elsewhere and is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Image", "read_image"]

_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)", re.DOTALL)
IMAGE_TYPES = frozenset({"image_url", "input_image", "image", "inlineData", "fileData"})
"""The block types that may hold an image, one per provider form."""


@attrs.frozen
class Image:
    """An image: base64 ``data`` with its ``media_type``, or a web ``url``."""

    media_type: str | None = None
    data: str | None = None
    url: str | None = None
    detail: str | None = None

    @property
    def as_url(self) -> str:
        """A ``data:`` URL, or the web address."""
        if self.data is not None:
            return f"data:{self.media_type};base64,{self.data}"
        return str(self.url)

    def chat_completions(self) -> dict[str, Any]:
        image: dict[str, Any] = {"url": self.as_url}
        if self.detail:
            image["detail"] = self.detail
        return {"type": "image_url", "image_url": image}

    def responses(self) -> dict[str, Any]:
        part: dict[str, Any] = {"type": "input_image", "image_url": self.as_url}
        if self.detail:
            part["detail"] = self.detail
        return part

    def anthropic(self) -> dict[str, Any]:
        if self.data is not None:
            source = {"type": "base64", "media_type": self.media_type, "data": self.data}
            return {"type": "image", "source": source}
        return {"type": "image", "source": {"type": "url", "url": self.url}}


def _from_url(url: Any, detail: Any = None) -> Image | None:
    if not isinstance(url, str) or not url:
        return None
    detail = detail if isinstance(detail, str) and detail else None
    match = _DATA_URL.fullmatch(url)
    if match is not None:
        return Image(match["mime"], match["data"], detail=detail)
    if url.startswith(("http://", "https://")):
        return Image(url=url, detail=detail)
    return None


def read_image(block: Mapping[str, Any]) -> Image | None:
    """The image a block of any provider's form holds; ``None`` for any other block, and
    for an image no other form can carry (a Gemini ``gs://`` file, an OpenAI file id)."""
    kind = block.get("type")
    if kind not in IMAGE_TYPES:
        return None
    if kind == "image_url":
        image = block.get("image_url")
        if isinstance(image, Mapping):
            return _from_url(image.get("url"), image.get("detail"))
        return _from_url(image)
    if kind == "input_image":
        return _from_url(block.get("image_url"), block.get("detail"))
    if kind == "image":
        source = block.get("source")
        if not isinstance(source, Mapping):
            return None
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            return Image(str(source.get("media_type", "")), str(source["data"]))
        return _from_url(source.get("url")) if source.get("type") == "url" else None
    field = block.get(str(kind))
    if not isinstance(field, Mapping) or not str(field.get("mimeType", "")).startswith("image/"):
        return None
    if kind == "inlineData" and isinstance(field.get("data"), str):
        return Image(str(field["mimeType"]), str(field["data"]))
    return _from_url(field.get("fileUri")) if kind == "fileData" else None
