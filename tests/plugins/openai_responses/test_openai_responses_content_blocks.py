"""The Responses API's output items read as LangChain 1.x's standard blocks
(``msg.content_blocks``) through this plugin's translator (entry point ``openai-responses``
in ``plait.content_blocks``). Where langchain-core is installed, the blocks are checked
against what its OpenAI translator makes of the same items."""

from __future__ import annotations

from typing import Any

import pytest

from plait.messages import AIMessage, ToolCall

RESPONSES_ANSWER: list[dict[str, Any]] = [
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [
            {"type": "summary_text", "text": "First."},
            {"type": "summary_text", "text": "Then."},
        ],
        "encrypted_content": "enc",
    },
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "paris", "sources": [{"type": "url", "url": "u"}]},
    },
    {"type": "code_interpreter_call", "id": "ci_1", "status": "failed", "code": "1/0"},
    {
        "type": "mcp_call",
        "id": "mcp_1",
        "name": "roll",
        "server_label": "dice",
        "arguments": '{"n": 2}',
        "output": "4",
    },
    {"type": "image_generation_call", "id": "ig_1", "result": "iVBOR", "output_format": "png"},
    {"type": "function_call", "call_id": "call_9", "id": "fc_9"},
    {"type": "text", "text": "done", "id": "msg_1"},
]


def test_responses_items_read_as_langchains_openai_translator_reads_them() -> None:
    message = AIMessage(
        RESPONSES_ANSWER,
        tool_calls=[ToolCall("f", {"x": 1}, "call_9")],
        response_metadata={"provider": "openai-responses"},
    )
    blocks = message.content_blocks
    assert blocks == [
        {"type": "reasoning", "id": "rs_1", "reasoning": "First.", "encrypted_content": "enc"},
        {"type": "reasoning", "id": "rs_1", "reasoning": "Then."},
        {
            "type": "server_tool_call",
            "id": "ws_1",
            "name": "web_search",
            "args": {"type": "search", "query": "paris"},
        },
        {
            "type": "server_tool_result",
            "tool_call_id": "ws_1",
            "status": "success",
            "output": {"sources": [{"type": "url", "url": "u"}]},
        },
        {
            "type": "server_tool_call",
            "id": "ci_1",
            "name": "code_interpreter",
            "args": {"code": "1/0"},
        },
        {"type": "server_tool_result", "tool_call_id": "ci_1", "status": "error"},
        {
            "type": "server_tool_call",
            "id": "mcp_1",
            "name": "remote_mcp",
            "args": {"n": 2},
            "extras": {"tool_name": "roll", "server_label": "dice"},
        },
        {"type": "server_tool_result", "tool_call_id": "mcp_1", "status": "success", "output": "4"},
        {
            "type": "image",
            "id": "ig_1",
            "base64": "iVBOR",
            "mime_type": "image/png",
            "extras": {"output_format": "png"},
        },
        {
            "type": "tool_call",
            "id": "call_9",
            "name": "f",
            "args": {"x": 1},
            "extras": {"item_id": "fc_9"},
        },
        {"type": "text", "text": "done", "id": "msg_1"},
    ]
    lc = pytest.importorskip("langchain_core.messages")
    theirs = lc.AIMessage(
        RESPONSES_ANSWER,
        tool_calls=[{"name": "f", "args": {"x": 1}, "id": "call_9"}],
        response_metadata={"model_provider": "openai"},
    )
    assert blocks == theirs.content_blocks
