"""pii: what reaches the model, the checkpoint, the tools and the stream."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

import plait
from plait.checkpoint import MemoryCheckpointer, StepDelta
from plait.errors import PIIDetectionError
from plait.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, ToolMessage
from plait.models import ScriptedChatModel
from plait.testing import ai, call
from plait_pii import PIIMatch, PIIMiddleware


class RecordingCheckpointer(MemoryCheckpointer):
    """Keeps every delta written, to prove raw PII never reached storage."""

    def __init__(self) -> None:
        super().__init__()
        self.deltas: list[StepDelta] = []

    def save(self, thread_id: str, delta: StepDelta) -> None:
        self.deltas.append(delta)
        super().save(thread_id, delta)

    def stored_text(self) -> str:
        return " ".join(
            json.dumps([m.content, [c.args for c in getattr(m, "tool_calls", ())]])
            for delta in self.deltas
            for m in delta.upserts
        )


class TrickleModel(ScriptedChatModel):
    """Streams each answer three characters at a time, so matches straddle chunks."""

    def stream(self, messages: Sequence[AnyMessage], **kwargs: Any) -> Iterator[AIMessageChunk]:
        chunks = list(super().stream(messages, **kwargs))
        text = "".join(c.content for c in chunks)
        for i in range(0, len(text), 3):
            yield AIMessageChunk(text[i : i + 3], id=chunks[0].id)
        for chunk in chunks:
            if chunk.tool_call_chunks or chunk.usage:
                yield AIMessageChunk(
                    tool_call_chunks=chunk.tool_call_chunks, usage=chunk.usage, id=chunk.id
                )

    async def astream(
        self, messages: Sequence[AnyMessage], **kwargs: Any
    ) -> AsyncIterator[AIMessageChunk]:
        for chunk in self.stream(messages, **kwargs):
            yield chunk


@plait.tool
def lookup(name: str) -> str:
    """Look up a person in the directory.

    Args:
        name: the person's name.
    """
    return f"{name}: alice@example.com, card 4111-1111-1111-1111"


@plait.tool
def send(to: str, cc: list[str], count: int) -> str:
    """Send a message.

    Args:
        to: the recipient.
        cc: copies.
        count: how many.
    """
    return f"sent to {to} cc {cc} x{count}"


def sha8(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


# -- input ---------------------------------------------------------------------------------


def test_input_is_redacted_before_the_model_and_the_first_checkpoint(make_agent: Any) -> None:
    saver = RecordingCheckpointer()
    recorder = plait.testing.HookRecorder()  # a before_agent hook: the input step is saved
    agent = make_agent(["noted"], middleware=[PIIMiddleware("email"), recorder], checkpointer=saver)
    result = agent.invoke("mail me at jane.doe@example.com please", thread_id="t")
    assert agent.model.requests[0].messages[0].text == "mail me at [REDACTED_EMAIL] please"
    assert result.messages[0].text == "mail me at [REDACTED_EMAIL] please"
    assert agent.get_state("t")["messages"][0].text == "mail me at [REDACTED_EMAIL] please"
    assert saver.deltas and "jane.doe" not in saver.stored_text()


def test_every_new_message_since_the_last_model_call(make_agent: Any) -> None:
    agent = make_agent(["one", "two"], middleware=[PIIMiddleware("email")])
    agent.invoke(["first a@x.com", "second b@y.org"], thread_id="t")
    assert [m.text for m in agent.model.requests[0].messages] == [
        "first [REDACTED_EMAIL]",
        "second [REDACTED_EMAIL]",
    ]
    agent.invoke(["third c@z.net", "fourth d@w.io"], thread_id="t")
    assert [m.text for m in agent.model.requests[1].messages] == [
        "first [REDACTED_EMAIL]",
        "second [REDACTED_EMAIL]",
        "one",
        "third [REDACTED_EMAIL]",
        "fourth [REDACTED_EMAIL]",
    ]


def test_output_is_untouched_unless_asked(make_agent: Any) -> None:
    agent = make_agent(["write to bob@corp.com"], middleware=[PIIMiddleware("email")])
    assert agent.invoke("hi").text == "write to bob@corp.com"


@pytest.mark.parametrize(
    ("pii_type", "text", "strategy", "expected"),
    [
        ("email", "jane@mail.example.com", "mask", "j***@****.com"),
        ("email", "jane@mail.example.com", "redact", "[REDACTED_EMAIL]"),
        ("email", "jane@mail.example.com", "hash", f"<email_hash:{sha8('jane@mail.example.com')}>"),
        ("credit_card", "4111-1111-1111-1111", "mask", "****-****-****-1111"),
        ("credit_card", "4111 1111 1111 1111", "mask", "**** **** **** 1111"),
        ("credit_card", "378282246310005", "mask", "***********0005"),
        ("credit_card", "4111111111111111", "redact", "[REDACTED_CREDIT_CARD]"),
        ("ip", "10.1.2.20", "mask", "*.*.*.20"),
        ("ip", "2001:db8::7334", "mask", "*:*:*:*:*:*:*:7334"),
        ("ip", "10.1.2.20", "hash", f"<ip_hash:{sha8('10.1.2.20')}>"),
        ("mac_address", "00:1A:2B:3C:4D:5E", "mask", "**:**:**:**:**:5E"),
        ("mac_address", "00-1a-2b-3c-4d-5e", "redact", "[REDACTED_MAC_ADDRESS]"),
        ("url", "https://example.com/private?id=7", "mask", "[MASKED_URL]"),
        ("url", "www.example.org/path", "redact", "[REDACTED_URL]"),
    ],
)
def test_strategy_formats(
    make_agent: Any, pii_type: str, text: str, strategy: str, expected: str
) -> None:
    agent = make_agent(["ok"], middleware=[PIIMiddleware(pii_type, strategy=strategy)])
    agent.invoke(f"value: {text} end")
    assert agent.model.requests[0].messages[0].text == f"value: {expected} end"


def test_block_raises_with_count_and_type(make_agent: Any) -> None:
    agent = make_agent(["never"], middleware=[PIIMiddleware("email", strategy="block")])
    with pytest.raises(PIIDetectionError, match=r"2 instances of email in the user input"):
        agent.invoke("a@x.com and b@y.com")
    assert agent.model.calls == 0


def test_version_numbers_are_not_ips_and_ipv6_is_found(make_agent: Any) -> None:
    agent = make_agent(["ok"], middleware=[PIIMiddleware("ip")])
    agent.invoke(
        "version 1.2.3.4, v2.0.0.1, ver 10.0.0.1; hosts 10.0.0.1 and fe80::1ff:fe23:4567:890a"
    )
    assert agent.model.requests[0].messages[0].text == (
        "version 1.2.3.4, v2.0.0.1, ver 10.0.0.1; hosts [REDACTED_IP] and [REDACTED_IP]"
    )


def test_structured_content_parts(make_agent: Any) -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}
    message = HumanMessage(
        [{"type": "text", "text": "see bob@corp.com"}, image, {"type": "text", "text": "ok"}]
    )
    agent = make_agent(["ok"], middleware=[PIIMiddleware("email"), PIIMiddleware("url")])
    agent.invoke([message])
    sent = agent.model.requests[0].messages[0]
    assert sent.id == message.id
    assert sent.content == [
        {"type": "text", "text": "see [REDACTED_EMAIL]"},
        image,
        {"type": "text", "text": "ok"},
    ]


def test_several_instances_stack(make_agent: Any) -> None:
    middleware = [
        PIIMiddleware("email"),
        PIIMiddleware("credit_card", strategy="mask"),
        PIIMiddleware("url", strategy="hash"),
    ]
    agent = make_agent(["ok"], middleware=middleware)
    agent.invoke("x@y.com paid with 5555 5555 5555 4444 at https://shop.example.com")
    assert agent.model.requests[0].messages[0].text == (
        "[REDACTED_EMAIL] paid with **** **** **** 4444 at "
        f"<url_hash:{sha8('https://shop.example.com')}>"
    )


def test_invalid_card_numbers_are_left_alone(make_agent: Any) -> None:
    agent = make_agent(["ok"], middleware=[PIIMiddleware("credit_card")])
    agent.invoke("order 4111 1111 1111 1112 and phone 555-123-4567")
    assert agent.model.requests[0].messages[0].text == (
        "order 4111 1111 1111 1112 and phone 555-123-4567"
    )


# -- custom detectors ----------------------------------------------------------------------


def test_custom_detectors_regex_pattern_and_function(make_agent: Any) -> None:
    def employee_ids(text: str) -> list[PIIMatch]:
        return [PIIMatch(m.group(), m.start(), m.end()) for m in re.finditer(r"EMP\d{5}", text)]

    middleware = [
        PIIMiddleware("ssn", detector=r"\b\d{3}-\d{2}-\d{4}\b", strategy="mask"),
        PIIMiddleware("ticket", detector=re.compile(r"TCK-[0-9]+")),
        PIIMiddleware("employee", detector=employee_ids, strategy="hash"),
    ]
    agent = make_agent(["ok"], middleware=middleware)
    agent.invoke("ssn 123-45-6789 ticket TCK-991 by EMP00042")
    assert agent.model.requests[0].messages[0].text == (
        f"ssn *******6789 ticket [REDACTED_TICKET] by <employee_hash:{sha8('EMP00042')}>"
    )


def test_overlapping_matches_become_one(make_agent: Any) -> None:
    def overlapping(text: str) -> list[PIIMatch]:
        found = []
        for m in re.finditer(r"\d{6}", text):
            s = m.start()
            for a, b in ((s, s + 4), (s + 2, s + 6), (s + 3, s + 5)):
                found.append(PIIMatch(text[a:b], a, b))
        return found

    agent = make_agent(["ok"], middleware=[PIIMiddleware("code", detector=overlapping)])
    agent.invoke("123456 rest 654321")
    assert agent.model.requests[0].messages[0].text == "[REDACTED_CODE] rest [REDACTED_CODE]"


def test_detector_returning_wrong_type_is_reported(make_agent: Any) -> None:
    mw = PIIMiddleware("code", detector=lambda text: [(0, 1)])  # type: ignore[arg-type, return-value]
    agent = make_agent(["ok"], middleware=[mw])
    with pytest.raises(TypeError, match="PIIMatch"):
        agent.invoke("x")


# -- output --------------------------------------------------------------------------------


def test_output_text_and_tool_arguments(make_agent: Any) -> None:
    script = [
        ai(
            "writing to bob@corp.com",
            call("send", id="s1", to="bob@corp.com", cc=["c@d.org", "plain"], count=2),
        ),
        "done, told bob@corp.com",
    ]
    mw = PIIMiddleware("email", apply_to_output=True)
    agent = make_agent(script, tools=[send], middleware=[mw])
    result = agent.invoke("go", thread_id="t")
    stored = agent.get_state("t")["messages"]
    first = stored[1]
    assert isinstance(first, AIMessage)
    assert first.text == "writing to [REDACTED_EMAIL]"
    assert first.tool_calls[0].args == {
        "to": "[REDACTED_EMAIL]",
        "cc": ["[REDACTED_EMAIL]", "plain"],
        "count": 2,
    }
    # the tool ran with the redacted arguments, still of the right shape
    assert stored[2].text == "sent to [REDACTED_EMAIL] cc ['[REDACTED_EMAIL]', 'plain'] x2"
    assert result.text == "done, told [REDACTED_EMAIL]"


def test_output_block(make_agent: Any) -> None:
    mw = PIIMiddleware("email", strategy="block", apply_to_input=False, apply_to_output=True)
    agent = make_agent(["leak a@b.com"], middleware=[mw])
    with pytest.raises(PIIDetectionError, match="1 instance of email in the model output"):
        agent.invoke("hi")


def test_streamed_output_is_redacted_across_chunks(make_agent: Any) -> None:
    model = TrickleModel(
        [
            ai(
                "mail jane.doe@example.com or 4111 1111 1111 1111 now",
                call("send", id="s1", to="x@y.com", cc=[], count=1),
            ),
            "bye jane.doe@example.com",
        ]
    )
    middleware = [
        PIIMiddleware("email", apply_to_output=True),
        PIIMiddleware("credit_card", strategy="mask", apply_to_output=True),
    ]
    agent = make_agent(model, tools=[send], middleware=middleware)
    events = list(agent.stream("go", thread_id="t", mode="messages"))
    chunks = [e.data for e in events if isinstance(e.data, AIMessageChunk)]
    streamed = "".join(c.content for c in chunks)
    assert "jane.doe" not in streamed and "4111 1111 1111 1111" not in streamed
    assert streamed == ("mail [REDACTED_EMAIL] or **** **** **** 1111 nowbye [REDACTED_EMAIL]")
    arg_text = "".join(p.args for c in chunks for p in c.tool_call_chunks)
    assert json.loads(arg_text) == {"to": "[REDACTED_EMAIL]", "cc": [], "count": 1}
    stored = agent.get_state("t")["messages"]
    assert stored[1].text == "mail [REDACTED_EMAIL] or **** **** **** 1111 now"
    assert stored[-1].text == "bye [REDACTED_EMAIL]"


def test_stream_keeps_left_context(make_agent: Any) -> None:
    text = "x" * 200 + " version 1.2.3.4 and host 10.0.0.9 " + "y" * 200
    model = TrickleModel([text])
    agent = make_agent(model, middleware=[PIIMiddleware("ip", apply_to_output=True)])
    events = list(agent.stream("go", mode="messages"))
    streamed = "".join(e.data.content for e in events if isinstance(e.data, AIMessageChunk))
    assert streamed == text.replace("10.0.0.9", "[REDACTED_IP]")


def test_async_stream_and_invoke(make_agent: Any) -> None:
    model = TrickleModel(["async c@d.com"])
    agent = make_agent(model, middleware=[PIIMiddleware("email", apply_to_output=True)])

    async def collect() -> str:
        out = []
        async for event in agent.astream("go", mode="messages"):
            if isinstance(event.data, AIMessageChunk):
                out.append(event.data.content)
        return "".join(out)

    assert asyncio.run(collect()) == "async [REDACTED_EMAIL]"
    agent = make_agent(["async e@f.com"], middleware=[PIIMiddleware("email", apply_to_output=True)])
    assert asyncio.run(agent.ainvoke("hi e@f.com")).text == "async [REDACTED_EMAIL]"


# -- tool results --------------------------------------------------------------------------


def test_tool_results_are_redacted_before_state(make_agent: Any) -> None:
    saver = RecordingCheckpointer()
    middleware = [
        PIIMiddleware("email", apply_to_tool_results=True),
        PIIMiddleware("credit_card", strategy="mask", apply_to_tool_results=True),
    ]
    script = [ai("", call("lookup", id="l1", name="Alice")), "found"]
    agent = make_agent(script, tools=[lookup], middleware=middleware, checkpointer=saver)
    agent.invoke("who is Alice", thread_id="t")
    tool_message = agent.get_state("t")["messages"][2]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.text == "Alice: [REDACTED_EMAIL], card ****-****-****-1111"
    assert agent.model.requests[1].messages[2].text == tool_message.text
    assert "alice@example.com" not in saver.stored_text()


def test_tool_results_block_stops_the_run(make_agent: Any) -> None:
    mw = PIIMiddleware("email", strategy="block", apply_to_tool_results=True)
    script = [ai("", call("lookup", id="l1", name="Alice")), "never"]
    agent = make_agent(script, tools=[lookup], middleware=[mw])
    with pytest.raises(PIIDetectionError, match="in the tool result"):
        agent.invoke("who")


def test_tool_results_async(make_agent: Any) -> None:
    mw = PIIMiddleware("email", apply_to_tool_results=True)
    script = [ai("", call("lookup", id="l1", name="Al")), "found"]
    agent = make_agent(script, tools=[lookup], middleware=[mw])
    result = asyncio.run(agent.ainvoke("who"))
    assert "[REDACTED_EMAIL]" in result.messages[2].text


def test_tool_command_results_are_redacted(make_agent: Any) -> None:
    @plait.tool
    def profile(runtime: plait.ToolRuntime) -> plait.Command:
        """Load the user's profile."""
        message = ToolMessage("mail z@q.com", tool_call_id=runtime.tool_call_id, name="profile")
        return plait.Command(update={"messages": [message]})

    mw = PIIMiddleware("email", apply_to_tool_results=True)
    agent = make_agent([ai("", call("profile", id="p1")), "ok"], tools=[profile], middleware=[mw])
    agent.invoke("me", thread_id="t")
    assert agent.get_state("t")["messages"][2].text == "mail [REDACTED_EMAIL]"


# -- options -------------------------------------------------------------------------------


def test_options_by_name(make_agent: Any) -> None:
    agent = make_agent(
        ["ok"],
        middleware=[
            ("pii", {"pii_type": "email", "strategy": "mask"}),
            ("pii", {"pii_type": "code", "detector": r"K-\d+"}),
        ],
    )
    agent.invoke("a.b@c.de K-12")
    assert agent.model.requests[0].messages[0].text == "a***@****.de [REDACTED_CODE]"


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"pii_type": "email", "strategy": "scramble"}, "strategy"),
        (
            {"pii_type": "code", "detector": "("},
            "plugin 'pii': option 'detector': expected a regular expression, got '(' "
            "(invalid regex: missing ), unterminated subpattern at position 0)",
        ),
        (
            {"pii_type": "ssn"},
            "plugin 'pii': option 'pii_type': expected a built-in type (email, credit_card, ip, "
            "mac_address, url) or an installed one (plait.pii_detectors: none), got 'ssn' (for "
            "another type, give a detector: a regex string, a compiled pattern, or a function "
            "returning PIIMatch objects)",
        ),
        (
            {"pii_type": "e mail", "detector": "x"},
            "plugin 'pii': option 'pii_type': expected a name of letters, digits and "
            "underscores, got 'e mail'",
        ),
        ({"pii_type": "email", "apply_to_input": False}, "enable at least one"),
        ({"pii_type": "email", "apply_to_output": "yes"}, "apply_to_output"),
        ({}, "pii_type"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(plait.ConfigError) as info:
        make_agent(["ok"], middleware=[("pii", options)])
    assert "pii" in str(info.value) and fragment in str(info.value)
    if fragment.startswith("plugin"):
        assert str(info.value) == fragment


def test_a_detector_that_is_not_one_is_worded_like_every_option() -> None:
    with pytest.raises(ValueError) as info:
        PIIMiddleware("code", detector=3)  # type: ignore[arg-type]
    assert str(info.value) == "detector: expected a regular expression, a callable or None, got 3"


def test_the_class_words_a_bad_strategy_or_switch_like_every_option() -> None:
    """``PIIMiddleware("email", strategy="scramble")`` raised attrs' tuple (the field's
    repr inside), and ``apply_to_input="no"`` was taken as true."""
    with pytest.raises(ValueError) as info:
        PIIMiddleware("email", strategy="scramble")  # type: ignore[arg-type]
    assert str(info.value) == (
        "strategy: expected one of 'block', 'redact', 'mask', 'hash', 'pseudonymize', "
        "got 'scramble'"
    )
    with pytest.raises(ValueError) as info:
        PIIMiddleware("email", apply_to_input="no")  # type: ignore[arg-type]
    assert str(info.value) == "apply_to_input: expected a bool, got 'no'"


def test_streamed_block_sends_nothing_of_the_value(make_agent: Any) -> None:
    model = TrickleModel([ai("ok", call("send", id="s1", to="leak@x.com", cc=[], count=1))])
    mw = PIIMiddleware("email", strategy="block", apply_to_input=False, apply_to_output=True)
    agent = make_agent(model, tools=[send], middleware=[mw])
    seen: list[AIMessageChunk] = []
    with pytest.raises(PIIDetectionError, match="model output"):
        for event in agent.stream("go", mode="messages"):
            if isinstance(event.data, AIMessageChunk):
                seen.append(event.data)
    assert "leak@x.com" not in "".join(
        c.content + "".join(p.args for p in c.tool_call_chunks) for c in seen
    )


def test_redact_for_direct_use() -> None:
    assert PIIMiddleware("url", strategy="mask").redact("go to www.example.com/x now") == (
        "go to [MASKED_URL] now"
    )
    with pytest.raises(PIIDetectionError, match="1 instance of ip"):
        PIIMiddleware("ip", strategy="block").redact("host 10.0.0.1")
