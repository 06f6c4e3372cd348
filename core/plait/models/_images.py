"""Image blocks in any provider's form, read and written, so a user's image survives a
thread that moves between providers (``model_fallback``, a thread carried on elsewhere).

The forms the SDK knows: Chat Completions ``{"type": "image_url", "image_url": {"url",
"detail"}}``, Responses ``{"type": "input_image", "image_url", "detail"}``, Anthropic
``{"type": "image", "source": {"type": "base64", "media_type", "data"} | {"type": "url",
"url"}}``. A URL is a ``data:`` URL (base64) or a web address.

Any other provider's form is that provider's knowledge: its distribution names the block
types it writes images as in the ``plait.image_forms`` entry-point group, each pointing at
a function reading such a block into an ``Image`` (plait-google's ``inlineData`` and
``fileData``). The names are read from metadata; a reader is imported when a block of its
type is met, so a process that never sees one never loads the plugin.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from plait.lazy import frozen

if TYPE_CHECKING:
    from plait._entrypoints import EntryPoint

__all__ = ["IMAGE_FORMS", "IMAGE_TYPES", "Image", "image_from_url", "read_image"]

IMAGE_FORMS = "plait.image_forms"
"""The entry-point group where a provider plugin names the block types it writes images
as: each name is a block ``type``, its object a function ``(block) -> Image | None``."""

_BUILT_IN = frozenset({"image_url", "input_image", "image"})

_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)", re.DOTALL)


def _installed() -> Mapping[str, Any]:
    from plait import _entrypoints

    return _entrypoints.installed(IMAGE_FORMS)


class _ImageTypes(AbstractSet[str]):
    """The block types that may hold an image: the SDK's forms and those installed
    providers declare (``plait.image_forms``), read from metadata when asked."""

    def __contains__(self, kind: object) -> bool:
        return kind in _BUILT_IN or (isinstance(kind, str) and kind in _installed())

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(_BUILT_IN | frozenset(_installed())))

    def __len__(self) -> int:
        return len(_BUILT_IN | frozenset(_installed()))

    def __repr__(self) -> str:
        return f"IMAGE_TYPES({sorted(self)!r})"


IMAGE_TYPES: AbstractSet[str] = _ImageTypes()
"""The block types that may hold an image, one per provider form."""


@frozen
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


def image_from_url(url: Any, detail: Any = None) -> Image | None:
    """The image a ``data:`` URL or a web address is; ``None`` for anything else (a
    ``gs://`` file, an OpenAI file id: no other form can carry it)."""
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
    if kind == "image_url":
        image = block.get("image_url")
        if isinstance(image, Mapping):
            return image_from_url(image.get("url"), image.get("detail"))
        return image_from_url(image)
    if kind == "input_image":
        return image_from_url(block.get("image_url"), block.get("detail"))
    if kind == "image":
        source = block.get("source")
        if not isinstance(source, Mapping):
            return None
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            return Image(str(source.get("media_type", "")), str(source["data"]))
        return image_from_url(source.get("url")) if source.get("type") == "url" else None
    point = _installed().get(kind) if isinstance(kind, str) else None
    return None if point is None else _reader(point)(block)


@functools.cache
def _reader(point: EntryPoint) -> Callable[[Mapping[str, Any]], Image | None]:
    """The reader an installed provider's entry point names, imported once per entry
    point: found again (``_entrypoints.refresh``), a form is read by what is installed
    now, not by what an earlier lookup imported."""
    reader: Callable[[Mapping[str, Any]], Image | None] = point.load()
    return reader
