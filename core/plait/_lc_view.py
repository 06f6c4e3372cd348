"""LangChain's reading of a message, for code ported from LangChain's docs: the text
``pretty_print`` shows, the ``usage_metadata`` dict and the standard ``content_blocks``.

Each is derived from what the message holds, when asked, never stored: the messages
(``plait.messages``) call in here from their methods, so ``import plait`` never loads this
module. It takes plain values (content, calls, a ``Usage``) rather than the message
classes, which keeps it out of ``plait.messages``' import graph.

The layouts and block shapes are langchain-core 1.x's (``BaseMessage.pretty_repr``,
``AIMessage.pretty_repr``, ``UsageMetadata``, ``messages/content.py``). Content blocks are
read as langchain-core reads them: what is no one vendor's here (text, LangChain's own
blocks, the reference provider's Chat Completions parts, the SDK's image forms), a
vendor's own blocks (Anthropic's ``thinking``, Responses' ``reasoning`` items) by the
translator its plugin declares in ``plait.content_blocks``, as langchain-core keeps one
translator per provider; a block none knows is wrapped as ``{"type": "non_standard",
"value": block}``, as LangChain wraps it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait._entrypoints import EntryPoint

__all__ = [
    "CONTENT_BLOCKS",
    "is_interactive",
    "pretty_text",
    "standard_blocks",
    "tool_call_block",
    "usage_metadata",
    "with_extras",
]

_WIDTH = 80
"""The width LangChain centres a message's title in."""

KNOWN_BLOCK_TYPES = frozenset(
    {
        "text",
        "reasoning",
        "refusal",
        "tool_call",
        "invalid_tool_call",
        "tool_call_chunk",
        "image",
        "audio",
        "file",
        "text-plain",
        "video",
        "server_tool_call",
        "server_tool_call_chunk",
        "server_tool_result",
        "non_standard",
    }
)
"""The block types langchain-core 1.x defines (``content.KNOWN_BLOCK_TYPES``)."""


# -- pretty_print ---------------------------------------------------------------------------


def is_interactive() -> bool:
    """Whether this is an interactive interpreter (IPython, Jupyter, the REPL), where
    LangChain prints the title bold."""
    return hasattr(sys, "ps2")


def _title(kind: str, *, bold: bool) -> str:
    padded = f" {kind.title()} Message "
    side = "=" * ((_WIDTH - len(padded)) // 2)
    if bold:
        padded = f"\033[1m{padded}\033[0m"
    return f"{side}{padded}{side}{'=' * (len(padded) % 2)}"


def _call_lines(call: Any) -> list[str]:
    lines = [f"  {call.name} ({call.id})", f" Call ID: {call.id}"]
    if call.error:
        lines.append(f"  Error: {call.error}")
    lines.append("  Args:")
    lines.extend(f"    {key}: {value}" for key, value in call.args.items())
    return lines


def pretty_text(
    kind: str, content: Any, *, name: str | None, calls: Sequence[Any] | None, bold: bool
) -> str:
    """A message as LangChain's ``pretty_repr`` writes it: the title centred in 80
    columns, ``Name:`` when it has one, a blank line, the content as ``str`` shows it;
    for an AI message (``calls`` not ``None``) its calls under ``Tool Calls:``, and the
    calls whose arguments did not parse (LangChain's invalid tool calls) under
    ``Invalid Tool Calls:`` with their error."""
    text = _title(kind, bold=bold)
    if name is not None:
        text += f"\nName: {name}"
    text += f"\n\n{content}"
    if calls is None:
        return text
    lines: list[str] = []
    for heading, group in (
        ("Tool Calls:", [call for call in calls if not call.error]),
        ("Invalid Tool Calls:", [call for call in calls if call.error]),
    ):
        if group:
            lines.append(heading)
            for call in group:
                lines.extend(_call_lines(call))
    return (text.strip() + "\n" + "\n".join(lines)).strip()


# -- usage_metadata -------------------------------------------------------------------------


def usage_metadata(usage: Any) -> dict[str, Any] | None:
    """``Usage`` as LangChain's ``UsageMetadata`` dict. A detail is given only when its
    count is not zero: plait's ``Usage`` does not tell a zero from an unreported count.
    The cache writes by lifetime are under the keys langchain-anthropic uses."""
    if usage is None:
        return None
    found: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    given = {
        key: count
        for key, count in (
            ("cache_read", usage.cache_read_tokens),
            ("cache_creation", usage.cache_write_tokens),
            ("ephemeral_5m_input_tokens", usage.cache_write_5m_tokens),
            ("ephemeral_1h_input_tokens", usage.cache_write_1h_tokens),
        )
        if count
    }
    if given:
        found["input_token_details"] = given
    if usage.reasoning_tokens:
        found["output_token_details"] = {"reasoning": usage.reasoning_tokens}
    return found


# -- content_blocks -------------------------------------------------------------------------

CONTENT_BLOCKS = "plait.content_blocks"
"""The entry-point group where a provider plugin names the reader of its content blocks as
LangChain's: each name is a provider as its answers carry it in
``response_metadata["provider"]``, its object a function ``(block, calls) -> list[dict] |
None`` giving the standard blocks for one of that provider's blocks (``calls``: the
message's tool calls by id), or ``None`` for a block it does not know."""

Translator = Callable[[Mapping[str, Any], Mapping[str, Any]], "list[dict[str, Any]] | None"]


def _installed() -> Mapping[str, EntryPoint]:
    from plait import _entrypoints

    return _entrypoints.installed(CONTENT_BLOCKS)


@functools.cache
def _translator(point: EntryPoint) -> Translator:
    """The translator an installed provider's entry point names, imported once per entry
    point: found again (``_entrypoints.refresh``), a block is read by what is installed
    now, not by what an earlier lookup imported."""
    translator: Translator = point.load()
    return translator


def with_extras(
    made: dict[str, Any], block: Mapping[str, Any], known: Iterable[str]
) -> dict[str, Any]:
    """``made`` with the keys of ``block`` it did not read kept under ``extras``, as
    LangChain keeps them."""
    skip = set(known)
    rest = {key: value for key, value in block.items() if key not in skip}
    if rest:
        made["extras"] = rest
    return made


def tool_call_block(call: Any) -> dict[str, Any]:
    """A ``ToolCall`` as LangChain's ``tool_call`` block, or its ``invalid_tool_call`` when
    the arguments did not parse."""
    if call.error:
        return {
            "type": "invalid_tool_call",
            "id": call.id,
            "name": call.name,
            "args": None,
            "error": call.error,
        }
    return {"type": "tool_call", "id": call.id, "name": call.name, "args": call.args}


def _non_standard(block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "non_standard", "value": dict(block)}


def _text(block: Mapping[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = {"type": "text", "text": str(block.get("text", ""))}
    if block.get("id"):
        made["id"] = block["id"]
    if isinstance(block.get("annotations"), list) and block["annotations"]:
        made["annotations"] = list(block["annotations"])
    return made


def _image(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """An image in one of the SDK's forms (Chat Completions ``image_url``, Responses
    ``input_image``) or a plugin's (``plait.image_forms``) as a standard ``image`` block."""
    from plait.models._images import read_image

    image = read_image(block)
    if image is None:
        return None
    made: dict[str, Any] = (
        {"type": "image", "url": image.url}
        if image.data is None
        else {"type": "image", "base64": image.data, "mime_type": image.media_type}
    )
    if image.detail:
        made["extras"] = {"detail": image.detail}
    return made


def _openai_data(block: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions' ``input_audio`` and ``file`` parts as ``audio``/``file`` blocks."""
    from plait.models._images import image_from_url

    if block["type"] == "input_audio":
        audio = block["input_audio"]
        if "data" in audio and "format" in audio:
            return {
                "type": "audio",
                "base64": audio["data"],
                "mime_type": f"audio/{audio['format']}",
            }
        return _non_standard(block)
    part = block["file"]
    made: dict[str, Any]
    if "file_id" in part:
        made = {"type": "file", "file_id": part["file_id"]}
    else:
        data = image_from_url(part.get("file_data"))  # any data: URL, not only an image's
        if data is None or data.data is None:
            return _non_standard(block)
        made = {"type": "file", "base64": data.data, "mime_type": data.media_type}
    return with_extras(made, part, ("file_id", "file_data"))


def _v0(block: Mapping[str, Any]) -> dict[str, Any]:
    """LangChain 0.3's ``source_type`` blocks as their 1.x shape."""
    kind, source = block["type"], block["source_type"]
    made: dict[str, Any]
    if source == "url" and "url" in block:
        made = {"type": kind, "url": block["url"]}
    elif source == "base64" and "data" in block:
        made = {"type": kind, "base64": block["data"]}
    elif source == "id" and "id" in block:
        made = {"type": kind, "file_id": block["id"]}
    elif source == "text" and "text" in block:
        made = {"type": "text-plain", "text": block["text"]}
    else:
        return _non_standard(block)
    if "mime_type" in block:
        made["mime_type"] = block["mime_type"]
    known = ("type", "source_type", "url", "data", "id", "text", "mime_type")
    return with_extras(made, block, known)


def _generic(block: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """A block as LangChain reads it whoever wrote it: text, its standard types, its 0.3
    ``source_type`` blocks, the reference provider's parts and the SDK's image forms;
    ``None`` for a block only its provider's translator reads. A key no standard block has
    (a text's ``citations``, a reasoning's ``summary``, a ``source``) marks a provider's
    block of a standard type, left to that provider."""
    kind = block.get("type")
    if kind == "text":
        citations = block.get("citations")
        return None if isinstance(citations, list) and citations else [_text(block)]
    if kind == "reasoning":
        return None if "summary" in block else [dict(block)]
    if isinstance(block.get("source"), Mapping) and kind in ("image", "document"):
        return None
    if kind in ("image", "audio", "file") and "source_type" in block:
        return [_v0(block)]
    if kind == "input_audio" and isinstance(block.get("input_audio"), Mapping):
        return [_openai_data(block)]
    if kind == "file" and isinstance(block.get("file"), Mapping):
        return [_openai_data(block)]
    if kind in KNOWN_BLOCK_TYPES:
        return [dict(block)]
    if isinstance(kind, str):
        from plait.models._images import IMAGE_TYPES

        if kind in IMAGE_TYPES:
            made = _image(block)
            return None if made is None else [made]
    return None


def _standard(
    block: Mapping[str, Any], calls: Mapping[str, Any], provider: str | None
) -> list[dict[str, Any]]:
    """One content block as the standard blocks LangChain reads it as: by its provider's
    translator first (an AI message's), then the kernel's generic reading, then each other
    installed translator in name order; a block none knows as ``non_standard``."""
    points = _installed()
    first = points.get(provider) if provider is not None else None
    if first is not None:
        found = _translator(first)(block, calls)
        if found is not None:
            return found
    found = _generic(block)
    if found is not None:
        return found
    for name in sorted(points):
        if name != provider:
            found = _translator(points[name])(block, calls)
            if found is not None:
                return found
    return [_non_standard(block)]


def standard_blocks(
    content: Any, calls: Sequence[Any] = (), metadata: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """``content`` as LangChain 1.x's standard content blocks, new dicts each time.

    For an AI message (``metadata`` is its ``response_metadata``), the provider it names
    reads its blocks first, as langchain-core's translator for that provider does.
    ``calls`` are its tool calls: each not already standing in the content (as a
    provider's tool-call block a translator read) follows it as a ``tool_call`` block
    (``invalid_tool_call`` when its arguments did not parse). From its ``metadata``, a
    compatible server's ``reasoning`` text leads as a ``reasoning`` block, and a refusal
    (OpenAI's ``refusal`` text, or a ``"refusal"`` finish) ends it as a ``refusal`` block,
    as LangChain's translators add them, when the content has none.
    """
    items: list[Any] = [content] if isinstance(content, str) else list(content)
    by_id = {call.id: call for call in calls}
    metadata = metadata or {}
    provider = metadata.get("provider")
    provider = provider if isinstance(provider, str) else None
    found: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            if item:
                found.append({"type": "text", "text": item})
        elif isinstance(item, Mapping):
            found.extend(_standard(item, by_id, provider))
    placed = {
        block.get("id") for block in found if block["type"] in ("tool_call", "invalid_tool_call")
    }
    found.extend(tool_call_block(call) for call in calls if call.id not in placed)
    kinds = {block["type"] for block in found}
    reasoning = metadata.get("reasoning")
    if isinstance(reasoning, str) and reasoning and "reasoning" not in kinds:
        found.insert(0, {"type": "reasoning", "reasoning": reasoning})
    refusal = metadata.get("refusal")
    if "refusal" not in kinds:
        if isinstance(refusal, str) and refusal:
            found.append({"type": "refusal", "refusal": refusal})
        elif metadata.get("finish_reason") == "refusal":
            found.append({"type": "refusal", "refusal": ""})
    return found
