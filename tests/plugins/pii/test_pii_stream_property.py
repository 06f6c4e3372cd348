"""Streaming redaction gives exactly what redacting the whole text gives, however the
text is cut into chunks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plait.messages import AIMessageChunk
from plait.models import ScriptedChatModel
from plait.types import ModelRequest
from plait_pii import PIIMiddleware

VALUES = [
    "jane.doe@example.com",
    "4111 1111 1111 1111",
    "378282246310005",
    "10.0.0.254",
    "2001:db8::8a2e:370:7334",
    "00:1A:2B:3C:4D:5E",
    "https://example.com/a/b?c=d",
    "version 1.2.3.4",
    "v2.0.0.1",
]
WORDS = ["the", "host", "at", "value:", "(", ")", ",", ".", "\n", "über", "请", "and", "x" * 40]
TYPES = ["email", "credit_card", "ip", "mac_address", "url"]

pieces = st.lists(st.sampled_from(VALUES + WORDS), min_size=1, max_size=30)
REQUEST = ModelRequest(model=ScriptedChatModel(), messages=())


@settings(max_examples=150, deadline=None)
@given(pieces, st.lists(st.integers(1, 9), min_size=1, max_size=60), st.sampled_from(TYPES))
def test_stream_equals_whole_text(words: list[str], cuts: list[int], pii_type: str) -> None:
    text = " ".join(words)
    chunks = []
    position = 0
    index = 0
    while position < len(text):
        size = cuts[index % len(cuts)]
        chunks.append(AIMessageChunk(text[position : position + size], id="m"))
        position += size
        index += 1
    mw = PIIMiddleware(pii_type, strategy="mask", apply_to_output=True)
    streamed = "".join(c.content for c in mw.transform_model_stream(iter(chunks), REQUEST))
    assert streamed == mw.redact(text)
