"""The pieces both HTTP providers share: SSE decoding, retry-after, redaction, profiles,
and the lazy import of httpx."""

from __future__ import annotations

import email.utils
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plait.models._http import SSEDecoder, SSEEvent, parse_retry_after, redact
from plait.models.base import ModelProfile
from plait.models.openai import OpenAIChatModel
from plait.models.profiles import lookup_profile
from plait_anthropic import AnthropicChatModel

# Each vendor's limits are class data of its provider (``known_profiles``).
PROFILES = {
    "openai": OpenAIChatModel.known_profiles,
    "anthropic": AnthropicChatModel.known_profiles,
}

STREAM = (
    ": keep-alive comment\r\n"
    "event: message_start\r\n"
    'data: {"a": 1}\r\n'
    "\r\n"
    "data: line one\n"
    "data: line two\n"
    "\n"
    "event: ping\n"
    "data:\n"
    "\n"
    "id: 7\n"
    "retry: 100\n"
    "data:no-space\r"
    "\r"
    "data: [DONE]\n\n"
)

EVENTS = [
    SSEEvent("message_start", '{"a": 1}'),
    SSEEvent("message", "line one\nline two"),
    SSEEvent("ping", ""),
    SSEEvent("message", "no-space"),
    SSEEvent("message", "[DONE]"),
]


def decode(pieces: list[str]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    out: list[SSEEvent] = []
    for piece in pieces:
        out.extend(decoder.feed(piece))
    return out + decoder.finish()


def test_sse_decoder_follows_the_event_stream_rules() -> None:
    assert decode([STREAM]) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_sse_decoder_gives_the_same_events_however_the_text_is_cut(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert decode(pieces) == EVENTS


def test_sse_decoder_flushes_an_unterminated_last_event() -> None:
    assert decode(["data: x\n", "data: y"]) == [SSEEvent("message", "x\ny")]


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0
    when = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert parse_retry_after({"retry-after": when}, now=1_000_000.0) == 30.0
    assert parse_retry_after({"retry-after": when}, now=2_000_000.0) == 0.0
    assert parse_retry_after({"retry-after": "whenever"}) is None
    assert parse_retry_after({"retry-after": "-4"}) is None
    assert parse_retry_after({}) is None


def test_redact_removes_the_key_and_key_shaped_tokens() -> None:
    secret = "plain-secret-value"
    text = f"bad key {secret}; also sk-proj-****abcd and sk-ant-api03-xyzxyzxyz."
    cleaned = redact(text, [secret])
    assert secret not in cleaned and "abcd" not in cleaned and "xyzxyzxyz" not in cleaned
    assert cleaned.startswith("bad key [REDACTED]")


@pytest.mark.parametrize(
    ("provider", "name", "window", "output"),
    [
        ("openai", "gpt-4.1", 1_047_576, 32_768),
        ("openai", "gpt-4.1-nano-2025-04-14", 1_047_576, 32_768),
        ("openai", "gpt-4o-mini-2024-07-18", 128_000, 16_384),
        ("openai", "chatgpt-4o-latest", 128_000, 16_384),
        ("openai", "o3-mini", 200_000, 100_000),
        ("openai", "o4-mini-2025-04-16", 200_000, 100_000),
        ("openai", "gpt-5-mini-2025-08-07", 272_000, 128_000),
        ("openai", "gpt-5-chat-latest", 128_000, 16_384),
        ("anthropic", "claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("anthropic", "claude-opus-4-1-20250805", 200_000, 32_000),
        ("anthropic", "claude-opus-4-20250514", 200_000, 32_000),
        ("anthropic", "claude-3-7-sonnet-latest", 200_000, 64_000),
        ("anthropic", "claude-3-5-sonnet-20241022", 200_000, 8_192),
    ],
)
def test_known_profiles(provider: str, name: str, window: int, output: int) -> None:
    assert lookup_profile(PROFILES[provider], name) == ModelProfile(
        max_input_tokens=window, max_output_tokens=output
    )


@pytest.mark.parametrize(
    ("provider", "name"),
    [
        ("openai", "llama-3.1-8b"),
        ("openai", "gpt-4o-audio-preview"),
        ("openai", "gpt-4.1-finetuned"),
        ("anthropic", "claude-opus-4-9"),
        ("anthropic", "gpt-4o"),
    ],
)
def test_unknown_models_have_no_profile(provider: str, name: str) -> None:
    assert lookup_profile(PROFILES[provider], name) is None


def test_import_plait_does_not_import_httpx() -> None:
    code = (
        "import sys, plait, plait.models, plait.messages\n"
        "from plait.models import init_chat_model\n"
        "assert 'httpx' not in sys.modules, 'httpx imported'\n"
        "import plait.models.openai\n"
        "assert 'httpx' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
