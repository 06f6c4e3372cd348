"""A provider's image form is its own knowledge: its distribution names the block types it
writes images as in ``plait.image_forms``, and every other provider then sends such an
image in its own form — read through the declared reader, imported only when a block of
that type is met. Here a third-party distribution (a ``.dist-info`` on ``sys.path``, as
pip installs it) declares ``acmePicture``; Gemini's ``inlineData``/``fileData`` come the
same way from plait-google (tests/integration/test_provider_crossover.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_distribution import install_distribution

from plait import _entrypoints
from plait.messages import HumanMessage
from plait.models.http import IMAGE_TYPES, Image, read_image
from plait.models.openai import OpenAIChatModel

READER = """
from plait.models.http import Image, image_from_url


def read(block):
    picture = block.get("acmePicture") or {}
    if "bytes" in picture:
        return Image(picture["format"], picture["bytes"])
    return image_from_url(picture.get("link"))
"""


def _install(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *, version: str, module: str, source: str
) -> None:
    """acme-pictures ``version`` on ``sys.path``, its ``module`` declaring ``acmePicture``
    read by its ``read`` (as pip installs it: a ``.dist-info`` beside the module)."""
    install_distribution(
        folder,
        monkeypatch,
        name="acme-pictures",
        version=version,
        module=module,
        source=source,
        group="plait.image_forms",
        entry_points={"acmePicture": "read"},
    )


@pytest.fixture
def acme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    _install(tmp_path, monkeypatch, version="1.0", module="acme_pictures", source=READER)
    yield
    _entrypoints.refresh()


def test_a_declared_form_is_read_by_its_plugins_reader_only_when_met(acme: None) -> None:
    assert "acmePicture" in IMAGE_TYPES
    assert "acme_pictures" not in sys.modules  # named in metadata, nothing imported
    block = {"type": "acmePicture", "acmePicture": {"format": "image/png", "bytes": "iVBO"}}
    assert read_image(block) == Image("image/png", "iVBO")
    assert "acme_pictures" in sys.modules
    linked = {"type": "acmePicture", "acmePicture": {"link": "gs://bucket/a.png"}}
    assert read_image(linked) is None  # no other form carries it


def test_a_form_found_again_is_read_by_what_is_installed_now(
    acme: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader imported once is not kept past ``refresh``: the distribution that declares
    the form now (here a newer one, earlier on ``sys.path``) reads it."""
    block = {"type": "acmePicture", "acmePicture": {"format": "image/png", "bytes": "iVBO"}}
    assert read_image(block) == Image("image/png", "iVBO")
    newer = tmp_path / "newer"
    newer.mkdir()
    webp = """
    from plait.models.http import Image

    def read(block):
        return Image("image/webp", block["acmePicture"]["bytes"])
    """
    _install(newer, monkeypatch, version="2.0", module="acme_pictures_2", source=webp)
    assert read_image(block) == Image("image/webp", "iVBO")


def test_an_undeclared_block_type_is_no_image() -> None:
    assert "acmePicture" not in IMAGE_TYPES
    assert read_image({"type": "acmePicture", "acmePicture": {"link": "https://x/a.png"}}) is None


def test_chat_completions_sends_a_declared_form_as_its_own(acme: None, replay_server: Any) -> None:
    replay_server.json(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "a cat"},
                    "finish_reason": "stop",
                }
            ],
        }
    )
    model = OpenAIChatModel("gpt-4o", api_key="sk-test", base_url=replay_server.url)
    picture = {"type": "acmePicture", "acmePicture": {"link": "https://example.org/cat.png"}}
    model.invoke([HumanMessage([{"type": "text", "text": "What is it?"}, picture])])
    assert replay_server.last.body["messages"][0]["content"] == [
        {"type": "text", "text": "What is it?"},
        {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}},
    ]
