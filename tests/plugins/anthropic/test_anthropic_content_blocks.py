"""Anthropic's content blocks read as LangChain 1.x's standard blocks (``msg.content_blocks``)
through this plugin's translator (entry point ``anthropic`` in ``plait.content_blocks``):
first for an Anthropic answer, after plait's own reading for a user's blocks and a
streamed chunk's. Where langchain-core is installed, the blocks are checked against what
its Anthropic translator makes of the same content."""

from __future__ import annotations

from typing import Any

import pytest

from plait.messages import AIMessage, AIMessageChunk, HumanMessage, ToolCall, ToolCallChunk, Usage

ANTHROPIC_ANSWER = [
    {"type": "thinking", "thinking": "They want sources.", "signature": "sig=="},
    {
        "type": "text",
        "text": "Paris is in France.",
        "citations": [
            {
                "type": "web_search_result_location",
                "cited_text": "Paris, capital of France",
                "url": "https://example.org/paris",
                "title": "Paris",
                "encrypted_index": "xyz",
            }
        ],
    },
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "P"}},
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://example.org/paris"}],
    },
    {"type": "redacted_thinking", "data": "opaque"},
]


def test_anthropic_blocks_read_as_langchains_anthropic_translator_reads_them() -> None:
    message = AIMessage(
        ANTHROPIC_ANSWER,
        tool_calls=[ToolCall("f", {"a": 1}, "toolu_1")],
        response_metadata={"provider": "anthropic"},
    )
    blocks = message.content_blocks
    assert blocks == [
        {"type": "reasoning", "reasoning": "They want sources.", "extras": {"signature": "sig=="}},
        {
            "type": "text",
            "text": "Paris is in France.",
            "annotations": [
                {
                    "type": "citation",
                    "cited_text": "Paris, capital of France",
                    "url": "https://example.org/paris",
                    "title": "Paris",
                    "extras": {"encrypted_index": "xyz"},
                }
            ],
        },
        {"type": "server_tool_call", "id": "srvtoolu_1", "name": "web_search", "args": {"q": "P"}},
        {
            "type": "server_tool_result",
            "tool_call_id": "srvtoolu_1",
            "status": "success",
            "output": [{"type": "web_search_result", "url": "https://example.org/paris"}],
            "extras": {"block_type": "web_search_tool_result"},
        },
        {"type": "non_standard", "value": {"type": "redacted_thinking", "data": "opaque"}},
        {"type": "tool_call", "id": "toolu_1", "name": "f", "args": {"a": 1}},
    ]
    lc = pytest.importorskip("langchain_core.messages")
    theirs = lc.AIMessage(ANTHROPIC_ANSWER, response_metadata={"model_provider": "anthropic"})
    assert blocks[:-1] == theirs.content_blocks


USER_PARTS: list[dict[str, Any]] = [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR", "detail": "high"}},
    {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}},
    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
    {"type": "image", "source": {"type": "url", "url": "https://example.org/b.png"}},
    {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
    },
    {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
    {
        "type": "file",
        "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
    },
    {"type": "image", "source_type": "url", "url": "https://example.org/c.png"},
    {"type": "image", "url": "https://example.org/v1.png"},
    {"type": "my_own", "x": 1},
]


def test_user_images_files_and_audio_read_as_standard_data_blocks() -> None:
    assert HumanMessage(USER_PARTS).content_blocks == [
        {
            "type": "image",
            "base64": "iVBOR",
            "mime_type": "image/png",
            "extras": {"detail": "high"},
        },
        {"type": "image", "url": "https://example.org/a.png"},
        {"type": "image", "base64": "/9j/", "mime_type": "image/jpeg"},
        {"type": "image", "url": "https://example.org/b.png"},
        {"type": "file", "base64": "JVBE", "mime_type": "application/pdf"},
        {"type": "audio", "base64": "UklG", "mime_type": "audio/wav"},
        {
            "type": "file",
            "base64": "JVBE",
            "mime_type": "application/pdf",
            "extras": {"filename": "a.pdf"},
        },
        {"type": "image", "url": "https://example.org/c.png"},
        {"type": "image", "url": "https://example.org/v1.png"},
        {"type": "non_standard", "value": {"type": "my_own", "x": 1}},
    ]


def test_user_blocks_equal_langchain_cores_apart_from_its_random_ids() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    theirs = lc.HumanMessage(USER_PARTS).content_blocks
    for block in theirs:
        if str(block.get("id", "")).startswith("lc_"):
            del block["id"]  # a fresh uuid per read in langchain-core; plait makes none
    assert HumanMessage(USER_PARTS).content_blocks == theirs


def test_a_streamed_chunk_reads_as_langchains_chunk_blocks() -> None:
    chunk = AIMessageChunk(
        "Let",
        tool_call_chunks=[ToolCallChunk(0, "call_1", "get_weather", '{"ci')],
        usage=Usage(3, 1),
        blocks=[{"type": "thinking", "thinking": "hm"}],
    )
    assert chunk.content_blocks == [
        {"type": "text", "text": "Let"},
        {"type": "reasoning", "reasoning": "hm"},
        {
            "type": "tool_call_chunk",
            "id": "call_1",
            "name": "get_weather",
            "args": '{"ci',
            "index": 0,
        },
    ]
    assert chunk.usage_metadata == {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    assert AIMessageChunk().content_blocks == []
