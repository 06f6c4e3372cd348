"""Gemini's image blocks as the other providers read them.

A thread Gemini wrote may hold an image as an ``inlineData`` part (base64 with its
``mimeType``) or a ``fileData`` part (a ``fileUri``). plait-google names both block types
in the ``plait.image_forms`` entry-point group, pointing here, so Chat Completions,
Responses and Anthropic send such an image in their own form without the SDK knowing
Gemini's. A ``fileData`` URI that is not ``http(s)`` (``gs://``) has no form elsewhere:
``None``, and the block is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait.models.http import Image, image_from_url

__all__ = ["read_image"]


def read_image(block: Mapping[str, Any]) -> Image | None:
    """The image an ``inlineData`` or ``fileData`` block holds, or ``None``."""
    kind = block.get("type")
    part = block.get(str(kind))
    if not isinstance(part, Mapping) or not str(part.get("mimeType", "")).startswith("image/"):
        return None
    if kind == "inlineData" and isinstance(part.get("data"), str):
        return Image(str(part["mimeType"]), str(part["data"]))
    return image_from_url(part.get("fileUri")) if kind == "fileData" else None
