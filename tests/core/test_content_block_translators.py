"""A provider's content blocks are its own knowledge: its distribution names the reader of
them as LangChain's standard blocks in ``plait.content_blocks`` under its provider name,
and ``msg.content_blocks`` asks it — first for that provider's answers, after the
kernel's own reading for any other message — importing it only when a block needs it.
Here a third-party distribution (a ``.dist-info`` on ``sys.path``, as pip installs it)
declares provider ``acme``; Anthropic's and the Responses API's come the same way from
their plugins (tests/plugins/anthropic, tests/plugins/openai_responses)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_distribution import install_distribution

from plait import _entrypoints
from plait.messages import AIMessage, HumanMessage, ToolCall
from plait.models.http import CONTENT_BLOCKS

TRANSLATOR = """
from plait.models.http import tool_call_block, with_extras


def read(block, calls):
    kind = block.get("type")
    if kind == "acme_note":
        return [with_extras({"type": "text", "text": block["note"]}, block, ("type", "note"))]
    if kind == "acme_call" and block.get("ref") in calls:
        return [tool_call_block(calls[block["ref"]])]
    if kind == "text" and "acme_voice" in block:
        return [{"type": "text", "text": block["text"].upper()}]
    return None
"""

NOTE = {"type": "acme_note", "note": "filed", "shelf": 3}
VOICED = {"type": "text", "text": "hello", "acme_voice": "loud"}


def _install(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *, version: str, module: str, source: str
) -> None:
    """acme-chat ``version`` on ``sys.path``, its ``module`` reading provider ``acme``'s
    blocks with its ``read`` (as pip installs it: a ``.dist-info`` beside the module)."""
    install_distribution(
        folder,
        monkeypatch,
        name="acme-chat",
        version=version,
        module=module,
        source=source,
        group=CONTENT_BLOCKS,
        entry_points={"acme": "read"},
    )


@pytest.fixture
def acme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    _install(tmp_path, monkeypatch, version="1.0", module="acme_blocks", source=TRANSLATOR)
    yield
    _entrypoints.refresh()


def test_the_group_is_plait_content_blocks() -> None:
    assert CONTENT_BLOCKS == "plait.content_blocks"


def test_a_providers_answer_is_read_by_its_translator_first(acme: None) -> None:
    answer = AIMessage(
        [VOICED, NOTE, {"type": "acme_call", "ref": "c1"}],
        tool_calls=[ToolCall("lookup", {"q": "x"}, "c1")],
        response_metadata={"provider": "acme"},
    )
    assert answer.content_blocks == [
        {"type": "text", "text": "HELLO"},
        {"type": "text", "text": "filed", "extras": {"shelf": 3}},
        {"type": "tool_call", "id": "c1", "name": "lookup", "args": {"q": "x"}},
    ]


def test_another_message_is_read_by_the_kernel_first_then_by_the_translators(acme: None) -> None:
    """A text block is the kernel's for a user's message and another provider's answer;
    a block the kernel does not know goes to the installed translators."""
    expected = [
        {"type": "text", "text": "hello"},
        {"type": "text", "text": "filed", "extras": {"shelf": 3}},
    ]
    assert HumanMessage([VOICED, NOTE]).content_blocks == expected
    other = AIMessage([VOICED, NOTE], response_metadata={"provider": "openai"})
    assert other.content_blocks == expected


def test_a_translator_is_imported_only_when_a_block_needs_it(acme: None) -> None:
    assert "acme" in _entrypoints.installed(CONTENT_BLOCKS)
    assert HumanMessage([VOICED]).content_blocks == [{"type": "text", "text": "hello"}]
    assert "acme_blocks" not in sys.modules  # the kernel read every block
    assert HumanMessage([NOTE]).content_blocks[0]["text"] == "filed"
    assert "acme_blocks" in sys.modules


def test_without_its_distribution_a_providers_block_is_non_standard() -> None:
    assert "acme" not in _entrypoints.installed(CONTENT_BLOCKS)
    assert HumanMessage([NOTE]).content_blocks == [{"type": "non_standard", "value": NOTE}]
    voiced = AIMessage([VOICED], response_metadata={"provider": "acme"})
    assert voiced.content_blocks == [{"type": "text", "text": "hello"}]


def test_a_translator_found_again_is_the_one_installed_now(
    acme: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A translator imported once is not kept past ``refresh``: the distribution that
    declares the provider now (here a newer one, earlier on ``sys.path``) reads its blocks."""
    assert HumanMessage([NOTE]).content_blocks[0]["text"] == "filed"
    newer = tmp_path / "newer"
    newer.mkdir()
    shouting = """
    def read(block, calls):
        if block.get("type") == "acme_note":
            return [{"type": "text", "text": block["note"].upper()}]
        return None
    """
    _install(newer, monkeypatch, version="2.0", module="acme_blocks_2", source=shouting)
    assert HumanMessage([NOTE]).content_blocks == [{"type": "text", "text": "FILED"}]
