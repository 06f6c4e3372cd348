"""Messages read as LangChain users read them: ``pretty_print()``/``pretty_repr()`` with
LangChain's layout, ``usage_metadata`` from plait's ``Usage`` and ``content_blocks`` as
LangChain 1.x's standard blocks, each derived on use, leaving what is stored untouched.

Where langchain-core is installed, the texts and blocks are checked against what it makes
of the same messages; the pinned texts run everywhere."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import attrs
import pytest

import plait
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    Usage,
    from_json,
    to_json,
)
from plait.testing import ai, call, scripted

HUMAN = HumanMessage("What is the weather in Paris?")
TWO_CALLS = AIMessage(
    "Let me check both.",
    tool_calls=[
        ToolCall("get_weather", {"city": "Paris", "units": "metric"}, "call_1"),
        ToolCall("get_time", {"tz": "Europe/Paris"}, "call_2"),
    ],
)
TOOL = ToolMessage("18°C, sunny", tool_call_id="call_1", name="get_weather")
SYSTEM = SystemMessage("Be brief.")

PRINTED = {
    "human": """\
================================ Human Message =================================

What is the weather in Paris?""",
    "ai": """\
================================== Ai Message ==================================

Let me check both.
Tool Calls:
  get_weather (call_1)
 Call ID: call_1
  Args:
    city: Paris
    units: metric
  get_time (call_2)
 Call ID: call_2
  Args:
    tz: Europe/Paris""",
    "tool": """\
================================= Tool Message =================================
Name: get_weather

18°C, sunny""",
    "system": """\
================================ System Message ================================

Be brief.""",
}


def _langchain(message: Any) -> Any:
    """The same message built with langchain-core."""
    lc = pytest.importorskip("langchain_core.messages")
    if isinstance(message, HumanMessage):
        return lc.HumanMessage(message.content)
    if isinstance(message, SystemMessage):
        return lc.SystemMessage(message.content)
    if isinstance(message, ToolMessage):
        return lc.ToolMessage(message.content, tool_call_id=message.tool_call_id, name=message.name)
    assert isinstance(message, AIMessage)
    return lc.AIMessage(
        message.content,
        tool_calls=[
            {"name": c.name, "args": c.args, "id": c.id} for c in message.tool_calls if not c.error
        ],
        invalid_tool_calls=[
            {
                "name": c.name,
                "args": None,
                "id": c.id,
                "error": c.error,
                "type": "invalid_tool_call",
            }
            for c in message.tool_calls
            if c.error
        ],
    )


@pytest.mark.parametrize("message", [HUMAN, TWO_CALLS, TOOL, SYSTEM], ids=lambda m: m.type)
def test_pretty_print_writes_langchains_layout(
    message: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(sys, "ps2", raising=False)  # not an interactive interpreter
    assert message.pretty_repr() == PRINTED[message.type]
    message.pretty_print()
    assert capsys.readouterr().out == PRINTED[message.type] + "\n"


BROKEN = AIMessage(
    "",
    tool_calls=[
        ToolCall("search", {"q": "x"}, "call_a"),
        ToolCall("lookup", {}, "call_b", "the arguments are not valid JSON"),
    ],
)
LISTED = HumanMessage([{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {}}])


@pytest.mark.parametrize(
    "message",
    [
        HUMAN,
        TWO_CALLS,
        TOOL,
        SYSTEM,
        BROKEN,
        LISTED,
        AIMessage(""),
        ToolMessage("1", tool_call_id="c"),
    ],
    ids=["human", "ai", "tool", "system", "invalid-call", "list-content", "empty-ai", "no-name"],
)
@pytest.mark.parametrize("html", [False, True])
def test_pretty_repr_equals_langchain_cores(message: Any, html: bool) -> None:
    assert message.pretty_repr(html) == _langchain(message).pretty_repr(html)


def test_a_call_whose_arguments_did_not_parse_is_listed_as_langchains_invalid_call() -> None:
    assert BROKEN.pretty_repr().splitlines()[1:] == [
        "Tool Calls:",
        "  search (call_a)",
        " Call ID: call_a",
        "  Args:",
        "    q: x",
        "Invalid Tool Calls:",
        "  lookup (call_b)",
        " Call ID: call_b",
        "  Error: the arguments are not valid JSON",
        "  Args:",
    ]


def test_an_interactive_interpreter_gets_the_title_bold(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "ps2", "... ", raising=False)
    HUMAN.pretty_print()
    printed = capsys.readouterr().out
    assert printed.startswith("================================\033[1m Human Message \033[0m===")
    assert printed.endswith("\n\nWhat is the weather in Paris?\n")


def test_a_runs_messages_print_as_in_langchains_tutorials(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(sys, "ps2", raising=False)

    @plait.tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"It's always sunny in {city}!"

    model = scripted(ai("", call("get_weather", id="call_1", city="Paris")), "Sunny in Paris.")
    agent = plait.create_agent(model, [get_weather])
    result = agent.invoke({"messages": [{"role": "user", "content": "weather in Paris?"}]})
    for message in result["messages"]:
        message.pretty_print()
    assert capsys.readouterr().out.splitlines() == [
        "================================ Human Message =================================",
        "",
        "weather in Paris?",
        "================================== Ai Message ==================================",
        "Tool Calls:",
        "  get_weather (call_1)",
        " Call ID: call_1",
        "  Args:",
        "    city: Paris",
        "================================= Tool Message =================================",
        "Name: get_weather",
        "",
        "It's always sunny in Paris!",
        "================================== Ai Message ==================================",
        "",
        "Sunny in Paris.",
    ]


# -- usage_metadata -------------------------------------------------------------------------


def test_usage_metadata_is_langchains_dict_read_from_usage() -> None:
    usage = Usage(
        input_tokens=1200,
        output_tokens=300,
        cache_read_tokens=1000,
        cache_write_tokens=150,
        reasoning_tokens=120,
        cache_write_5m_tokens=100,
        cache_write_1h_tokens=50,
    )
    assert AIMessage("hi", usage=usage).usage_metadata == {
        "input_tokens": 1200,
        "output_tokens": 300,
        "total_tokens": 1500,
        "input_token_details": {
            "cache_read": 1000,
            "cache_creation": 150,
            "ephemeral_5m_input_tokens": 100,
            "ephemeral_1h_input_tokens": 50,
        },
        "output_token_details": {"reasoning": 120},
    }


def test_usage_metadata_leaves_out_details_plait_was_not_told() -> None:
    assert AIMessage("hi", usage=Usage(10, 4)).usage_metadata == {
        "input_tokens": 10,
        "output_tokens": 4,
        "total_tokens": 14,
    }
    assert AIMessage("hi").usage_metadata is None


def test_usage_metadata_follows_the_usage_it_is_read_from() -> None:
    message = AIMessage("hi", usage=Usage(10, 4))
    later = attrs.evolve(message, usage=Usage(10, 4) + Usage(5, 1, cache_read_tokens=3))
    assert later.usage_metadata == {
        "input_tokens": 15,
        "output_tokens": 5,
        "total_tokens": 20,
        "input_token_details": {"cache_read": 3},
    }
    assert message.usage_metadata is not None
    message.usage_metadata["input_tokens"] = 0  # a copy each time: the message is unchanged
    assert message.usage_metadata["input_tokens"] == 10


def test_usage_metadata_is_accepted_by_langchain_core() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    usage = Usage(20, 7, cache_read_tokens=5, reasoning_tokens=2)
    metadata = AIMessage("hi", usage=usage).usage_metadata
    assert lc.AIMessage("hi", usage_metadata=metadata).usage_metadata == metadata


# -- content_blocks -------------------------------------------------------------------------


def test_text_and_tool_calls_read_as_standard_blocks() -> None:
    assert HUMAN.content_blocks == [{"type": "text", "text": "What is the weather in Paris?"}]
    assert TWO_CALLS.content_blocks == [
        {"type": "text", "text": "Let me check both."},
        {
            "type": "tool_call",
            "id": "call_1",
            "name": "get_weather",
            "args": {"city": "Paris", "units": "metric"},
        },
        {"type": "tool_call", "id": "call_2", "name": "get_time", "args": {"tz": "Europe/Paris"}},
    ]
    assert AIMessage("").content_blocks == []
    assert BROKEN.content_blocks[1] == {
        "type": "invalid_tool_call",
        "id": "call_b",
        "name": "lookup",
        "args": None,
        "error": "the arguments are not valid JSON",
    }


@pytest.mark.parametrize("message", [HUMAN, TWO_CALLS, TOOL, SYSTEM], ids=lambda m: m.type)
def test_content_blocks_equal_langchain_cores(message: Any) -> None:
    assert message.content_blocks == _langchain(message).content_blocks


def test_a_compatible_servers_reasoning_leads_as_a_reasoning_block() -> None:
    message = AIMessage("42", response_metadata={"reasoning": "6 times 7."})
    assert message.content_blocks == [
        {"type": "reasoning", "reasoning": "6 times 7."},
        {"type": "text", "text": "42"},
    ]


def test_a_refusal_the_provider_reported_ends_as_a_refusal_block() -> None:
    openai = AIMessage("", response_metadata={"refusal": "I can't help with that."})
    assert openai.content_blocks == [{"type": "refusal", "refusal": "I can't help with that."}]
    anthropic = AIMessage("", response_metadata={"finish_reason": "refusal"})
    assert anthropic.content_blocks == [{"type": "refusal", "refusal": ""}]
    assert AIMessage("ok", response_metadata={"finish_reason": "stop"}).content_blocks == [
        {"type": "text", "text": "ok"}
    ]


CHAT_COMPLETIONS_PARTS: list[dict[str, Any]] = [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR", "detail": "high"}},
    {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
    {
        "type": "file",
        "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
    },
    {"type": "image", "source_type": "url", "url": "https://example.org/c.png"},
    {"type": "image", "url": "https://example.org/v1.png"},
    {"type": "my_own", "x": 1},
]


def test_the_reference_providers_parts_and_langchains_own_are_read_by_the_kernel() -> None:
    """Chat Completions' parts, LangChain 0.3's ``source_type`` blocks and its standard
    ones need no provider plugin (Anthropic's ``source`` blocks are plait-anthropic's:
    tests/plugins/anthropic/test_anthropic_content_blocks.py)."""
    assert HumanMessage(CHAT_COMPLETIONS_PARTS).content_blocks == [
        {
            "type": "image",
            "base64": "iVBOR",
            "mime_type": "image/png",
            "extras": {"detail": "high"},
        },
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
    lc = pytest.importorskip("langchain_core.messages")
    theirs = lc.HumanMessage(CHAT_COMPLETIONS_PARTS).content_blocks
    for block in theirs:
        if str(block.get("id", "")).startswith("lc_"):
            del block["id"]  # a fresh uuid per read in langchain-core; plait makes none
    assert HumanMessage(CHAT_COMPLETIONS_PARTS).content_blocks == theirs


def test_a_responses_input_image_reads_as_an_image() -> None:
    part = {"type": "input_image", "image_url": "https://example.org/r.png"}
    assert HumanMessage([part]).content_blocks == [
        {"type": "image", "url": "https://example.org/r.png"}
    ]
    unreadable = {"type": "image_url", "image_url": {"url": "gs://bucket/x.png"}}
    assert HumanMessage([unreadable]).content_blocks == [
        {"type": "non_standard", "value": unreadable}
    ]


def test_content_blocks_are_new_on_each_read() -> None:
    message = HumanMessage([{"type": "image", "url": "https://example.org/v1.png"}])
    message.content_blocks[0]["url"] = "changed"
    assert message.content == [{"type": "image", "url": "https://example.org/v1.png"}]
    assert message.content_blocks == [{"type": "image", "url": "https://example.org/v1.png"}]


def test_a_streamed_chunk_reads_its_text_blocks_and_call_fragments() -> None:
    chunk = AIMessageChunk(
        "Let",
        tool_call_chunks=[ToolCallChunk(0, "call_1", "get_weather", '{"ci')],
        blocks=[{"type": "reasoning", "reasoning": "hm"}],
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
    assert AIMessageChunk().content_blocks == []


def test_streamed_tokens_and_updates_show_content_blocks_as_in_langchains_docs() -> None:
    @plait.tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"It's always sunny in {city}!"

    answers = [ai("", call("get_weather", id="call_1", city="SF")), "Sunny."]
    model = scripted(*answers, *answers)  # one run per stream mode
    agent = plait.create_agent(model, [get_weather])
    question = {"messages": [{"role": "user", "content": "weather in SF?"}]}
    seen = [
        (meta["langgraph_node"], token.content_blocks)
        for token, meta in agent.stream(question, stream_mode="messages")
    ]
    assert ("tools", [{"type": "text", "text": "It's always sunny in SF!"}]) in seen
    assert any(
        block["type"] == "tool_call_chunk" and block["name"] == "get_weather"
        for _, blocks in seen
        for block in blocks
    )
    last = [
        data["messages"][-1].content_blocks
        for update in agent.stream(question, stream_mode="updates")
        for data in update.values()
        if isinstance(data, dict) and data.get("messages")
    ]
    assert [
        {"type": "tool_call", "id": "call_1", "name": "get_weather", "args": {"city": "SF"}}
    ] in last
    assert [{"type": "text", "text": "Sunny."}] in last


# -- what is stored is untouched ------------------------------------------------------------


def test_the_readings_are_no_fields_and_leave_the_persisted_form_as_it_was() -> None:
    message = AIMessage(
        [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "hi"}],
        id="m1",
        tool_calls=[ToolCall("f", {"a": 1}, "c1")],
        usage=Usage(10, 4, cache_read_tokens=2),
    )
    before = to_json([message])
    read = (message.pretty_repr(), message.content_blocks, message.usage_metadata)
    assert all(read)
    assert to_json([message]) == before
    assert json.loads(before) == [
        {
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "hi"},
            ],
            "id": "m1",
            "tool_calls": [{"name": "f", "args": {"a": 1}, "id": "c1"}],
            "usage": {"input_tokens": 10, "output_tokens": 4, "cache_read_tokens": 2},
            "type": "ai",
        }
    ]
    assert from_json(before) == [message]
    assert [f.name for f in attrs.fields(AIMessage)] == [
        "content",
        "id",
        "metadata",
        "tool_calls",
        "usage",
        "response_metadata",
    ]


def test_importing_plait_and_saving_messages_never_loads_the_readings() -> None:
    code = textwrap.dedent(
        """
        import sys
        import plait
        from plait.messages import AIMessage, Usage, to_json
        to_json([AIMessage("hi", usage=Usage(1, 2))])
        print("plait._lc_view" in sys.modules)
        AIMessage("hi").pretty_repr()
        print("plait._lc_view" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.split() == ["False", "True"]
