"""PII detection at any size and depth, and at domains that never reach the public DNS:
a long one-line contact list is scanned in one pass, arguments nested thousands of
levels deep are walked without recursion, and enterprise addresses are found."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

import plait
from plait.testing import ai, call
from plait_pii import PIIMiddleware
from plait_pii._walk import map_strings

received: list[Any] = []


@plait.tool
def lookup(query: dict[str, Any]) -> str:
    """Look a customer up.

    Args:
        query: what to look for.
    """
    received.append(query)
    return "found"


def nested(depth: int, leaf: dict[str, Any]) -> dict[str, Any]:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def leaf_of(value: dict[str, Any]) -> Any:
    while "a" in value:
        value = value["a"]
    return value


@pytest.fixture
def within_a_minute() -> Iterator[None]:
    """Fails the test if it runs past 60 s: a liveness bound for a scan that takes
    seconds when linear and many minutes when quadratic (figures: benchmarks/pii_scale.py)."""

    def expired(signum: int, frame: Any) -> None:
        raise AssertionError("the scan did not finish within 60 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_4_mb_contact_list_on_one_line_is_scanned_whole(within_a_minute: None) -> None:
    # 170,000 addresses separated by commas: no space, quote or bracket anywhere, so a scan
    # that looks back to the start of the token for every address never ends.
    addresses = [f"person{i}@example.com" for i in range(170_000)]
    text = ",".join(addresses)
    assert len(text) > 4_000_000
    found = PIIMiddleware("email").matches(text)
    assert [m.text for m in found] == addresses


def test_a_long_run_of_word_characters_before_an_address(within_a_minute: None) -> None:
    text = "x" * 2_000_000 + " reach me at jane@corp.example.com"
    assert [m.text for m in PIIMiddleware("email").matches(text)] == ["jane@corp.example.com"]


def test_an_address_in_a_url_authority_is_still_not_an_email() -> None:
    text = (
        "ftp://jane@files.example.com/x, https://git.example.org/u/bob@example.com ok@example.com"
    )
    found = [m.text for m in PIIMiddleware("email").matches(text)]
    assert found == ["bob@example.com", "ok@example.com"]


@pytest.mark.parametrize("depth", [600, 900])
def test_arguments_nested_thousands_deep_are_redacted(make_agent: Any, depth: int) -> None:
    received.clear()
    deep = nested(depth, {"to": "jane@corp.example.com"})
    mw = PIIMiddleware("email", apply_to_output=True)
    agent = make_agent(
        [ai("", call("lookup", id="c1", query=deep)), "done"],
        tools=[lookup],
        middleware=[mw],
        checkpointer=None,
    )
    assert agent.invoke("find her").text == "done"
    assert leaf_of(received[0]) == {"to": "[REDACTED_EMAIL]"}


@pytest.mark.parametrize("depth", [600, 900])
def test_pseudonymized_arguments_nested_thousands_deep_reach_the_tool_real(
    make_agent: Any, depth: int
) -> None:
    received.clear()
    deep = nested(depth, {"to": "<EMAIL_1>"})
    mw = PIIMiddleware("email", strategy="pseudonymize", apply_to_output=True)
    agent = make_agent(
        [ai("", call("lookup", id="c1", query=deep)), "done"],
        tools=[lookup],
        middleware=[mw],
        checkpointer=None,
    )
    assert agent.invoke("find jane@corp.example.com").text == "done"
    assert leaf_of(received[0]) == {"to": "jane@corp.example.com"}
    assert agent.model.requests[0].messages[0].text == "find <EMAIL_1>"


def test_values_nested_100_000_deep_are_rewritten_without_recursion() -> None:
    deep = nested(100_000, {"to": ["jane@corp.example.com", 7, ("bob@corp.example.com",)]})
    redacted = map_strings(deep, PIIMiddleware("email").redact)
    assert leaf_of(redacted) == {"to": ["[REDACTED_EMAIL]", 7, ["[REDACTED_EMAIL]"]]}
    numbered = map_strings(deep, PIIMiddleware("email", strategy="pseudonymize").redact)
    assert leaf_of(numbered) == {"to": ["<EMAIL_1>", 7, ["<EMAIL_1>"]]}


def test_a_deep_streamed_tool_call_is_redacted(make_agent: Any) -> None:
    received.clear()
    deep = nested(600, {"to": "jane@corp.example.com"})
    mw = PIIMiddleware("email", apply_to_output=True)
    agent = make_agent(
        [ai("", call("lookup", id="c1", query=deep)), "done"],
        tools=[lookup],
        middleware=[mw],
        checkpointer=None,
    )
    chunks = [event.data for event in agent.stream("find her", mode="messages")]
    streamed = "".join(
        part.args for chunk in chunks for part in getattr(chunk, "tool_call_chunks", ())
    )
    assert "jane@" not in streamed and "[REDACTED_EMAIL]" in streamed
    assert "jane@" not in repr(received)


PRIVATE = [
    "jane.doe@corp.internal",
    "bob@printer.local",
    "admin@router.lan",
    "it-desk@hq.corp",
    "dev@api.test",
    "user@shop.example",
    "noreply@bounce.invalid",
    "root@box.localhost",
    "family@nas.home.arpa",
    "ops@mail.eu.corp.internal",
]


@pytest.mark.parametrize("address", PRIVATE)
def test_addresses_at_reserved_and_private_use_domains_are_found(address: str) -> None:
    text = f"Please write to {address}, thanks"
    assert [m.text for m in PIIMiddleware("email").matches(text)] == [address]
    assert PIIMiddleware("email").redact(text) == "Please write to [REDACTED_EMAIL], thanks"


@pytest.mark.parametrize(
    "text",
    [
        "logo@2x.png",
        "name@3x.jpg",
        "<img src='hero@1.5x.local'>",
        "icon@2x.test",
        "user@localhost",
        "jane@local",
        "admin@home.arpa",
        "name@host.invalidtld",
    ],
)
def test_image_names_and_bare_reserved_names_are_not_addresses(text: str) -> None:
    assert PIIMiddleware("email").matches(text) == []
