"""Values written encoded — JSON ``\\u`` escapes, URL percent-encoding — are found in
their decoded form and replaced where they stand, so the model never reads them."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import plait
from plait.models import ScriptedChatModel
from plait.testing import ai, call
from plait_pii import PIIMiddleware
from plait_pii._decoded import decode

IDN = "ivan@почта.рф"
sent: list[str] = []


@plait.tool
def lookup(name: str) -> str:
    """Look a customer up; answers as a JSON API does (``ensure_ascii``: escapes).

    Args:
        name: who.
    """
    return json.dumps({"name": name, "email": IDN, "backup": "jane@corp.example.com"})


@plait.tool
def profile_link(name: str) -> str:
    """A link to the customer's profile.

    Args:
        name: who.
    """
    query = urllib.parse.urlencode({"email": "jane@corp.example.com", "alt": IDN})
    return f"https://crm.example.com/profile?{query}"


@plait.tool
def send_mail(to: str) -> str:
    """Send a mail.

    Args:
        to: the address.
    """
    sent.append(to)
    return "sent"


def model_reads(model: ScriptedChatModel) -> str:
    """Everything the model was sent, decoded as the model would read it."""
    raw = json.dumps(
        [
            [m.content, [c.args for c in getattr(m, "tool_calls", ())]]
            for request in model.requests
            for m in request.messages
        ],
        ensure_ascii=False,
    )
    view = decode(raw)
    text = view.text if view is not None else raw
    return urllib.parse.unquote(text)


def test_the_tools_answers_really_are_encoded() -> None:
    assert "\\u043f" in lookup.func(name="x") and IDN not in lookup.func(name="x")
    assert "jane%40corp.example.com" in profile_link.func(name="x")


@pytest.mark.parametrize("strategy", ["redact", "mask", "hash", "pseudonymize"])
def test_escaped_and_percent_encoded_addresses_never_reach_the_model(
    make_agent: Any, strategy: str
) -> None:
    script = [
        ai("", call("lookup", id="c1", name="Ivan"), call("profile_link", id="c2", name="Ivan")),
        "done",
    ]
    mw = PIIMiddleware("email", strategy=strategy, apply_to_tool_results=True)
    agent = make_agent(script, tools=[lookup, profile_link], middleware=[mw])
    agent.invoke("look Ivan up", thread_id="t")
    reads = model_reads(agent.model)
    assert IDN not in reads and "jane@corp.example.com" not in reads
    assert "\\u043f" not in json.dumps(agent.get_state("t")["messages"][2].content)


def test_pseudonyms_of_encoded_values_restore_to_the_real_value(make_agent: Any) -> None:
    sent.clear()
    script = [
        ai("", call("lookup", id="c1", name="Ivan")),
        ai("", call("send_mail", id="c2", to="<EMAIL_1>")),
        "Mailed <EMAIL_1>; backup <EMAIL_2>.",
    ]
    mw = PIIMiddleware("email", strategy="pseudonymize", apply_to_tool_results=True)
    agent = make_agent(script, tools=[lookup, send_mail], middleware=[mw])
    result = agent.invoke("mail Ivan", thread_id="t")
    tool_result = agent.model.requests[1].messages[-1].text
    assert json.loads(tool_result) == {
        "name": "Ivan",
        "email": "<EMAIL_1>",
        "backup": "<EMAIL_2>",
    }  # still valid JSON: the escapes were replaced whole
    assert sent == [IDN]  # the tool got the decoded address, not its escapes
    assert result.text == f"Mailed {IDN}; backup jane@corp.example.com."


def test_the_same_value_plain_and_encoded_is_one_placeholder() -> None:
    mw = PIIMiddleware("email", strategy="pseudonymize")
    text = "jane@corp.example.com or jane%40corp.example.com or jane\\u0040corp.example.com"
    assert mw.redact(text) == "<EMAIL_1> or <EMAIL_1> or <EMAIL_1>"


def test_a_percent_encoded_url_is_replaced_as_written() -> None:
    text = "see https://example.com/search?q=a%20b&x=%E4%BD%A0 and https%3A%2F%2Fexample.com%2Fp"
    assert PIIMiddleware("url").redact(text) == "see [REDACTED_URL] and [REDACTED_URL]"


def test_streamed_answers_with_escapes_are_redacted(make_agent: Any) -> None:
    escaped = json.dumps(IDN)[1:-1]
    mw = PIIMiddleware("email", apply_to_output=True)
    agent = make_agent([f"Address: {escaped} (and jane%40corp.example.com)."], middleware=[mw])
    chunks = [e.data for e in agent.stream("?", mode="messages")]
    text = "".join(getattr(c, "content", "") for c in chunks)
    assert text == "Address: [REDACTED_EMAIL] (and [REDACTED_EMAIL])."


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab@.%\\u0123456789ABCDEFdpé", max_size=40))
def test_every_decoded_span_maps_back_to_the_text_it_came_from(text: str) -> None:
    view = decode(text)
    if view is None:
        return
    for start in range(len(view.text)):
        for end in range(start + 1, len(view.text) + 1):
            original = text[view.start(start) : view.end(end)]
            again = decode(original)
            assert (again.text if again else original) == view.text[start:end]


def test_a_long_escaped_address_streamed_in_pieces_is_not_released_in_part(
    make_agent: Any,
) -> None:
    from plait.messages import AIMessageChunk

    address = "ivan.petrov@почта-россии-длинный-домен.рф"
    escaped = json.dumps(address)[1:-1]
    assert len(escaped) > 128  # longer than the stream's look-back

    class Trickle(ScriptedChatModel):
        def stream(self, messages: Any, **kwargs: Any) -> Any:
            for chunk in super().stream(messages, **kwargs):
                for i in range(0, len(chunk.content), 3):
                    yield AIMessageChunk(chunk.content[i : i + 3], id=chunk.id)

    model = Trickle([f"Write to {escaped} today, " + "then wait. " * 40])
    mw = PIIMiddleware("email", apply_to_output=True)
    agent = make_agent(model, middleware=[mw])
    pieces = [getattr(e.data, "content", "") for e in agent.stream("?", mode="messages")]
    assert "".join(pieces) == "Write to [REDACTED_EMAIL] today, " + "then wait. " * 40
    assert "ivan.petrov" not in "".join(pieces)
    assert len([p for p in pieces if p]) > 10  # the prose after it still streams in pieces
