"""``otel`` never puts content where ``capture_content`` says it does not go, and with
content captured, records what the model was sent (after ``pii``), not the raw values."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

import plait
from plait.errors import ProviderError
from plait.testing import ai, call
from plait_guardrails import GuardrailTripped
from plait_pii import PIIMiddleware

from .conftest import Telemetry

SECRET = "jane.doe@example.com"


@plait.tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    raise ValueError(f"no order {order_id} for {SECRET}")


@plait.tool
def contact(customer: str) -> str:
    """The customer's e-mail address."""
    return f"write to {SECRET}"


@plait.tool
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


def everything(otel: Telemetry) -> str:
    """Every span as the exporter got it: attributes, status, events."""
    return "\n".join(span.to_json() for span in otel.spans())


@pytest.mark.parametrize("use_async", [False, True])
def test_without_capture_content_no_error_text_or_argument_reaches_a_span(
    otel: Telemetry, make_agent: Any, use_async: bool
) -> None:
    agent = make_agent(
        [
            ai("", call("lookup", order_id=f"{SECRET} 7"), call("lookup", order_id=7)),
            "sorry",
        ],
        tools=[lookup],
        middleware=[otel.middleware()],
    )
    if use_async:
        asyncio.run(agent.ainvoke("go"))
    else:
        agent.invoke("go")
    bad, raised = otel.named("execute_tool lookup")
    assert (bad.status.status_code, bad.status.description) == (StatusCode.ERROR, "tool_error")
    assert (raised.status.status_code, raised.status.description) == (
        StatusCode.ERROR,
        "ValueError",
    )
    assert [dict(e.attributes or {}) for e in raised.events] == [{"exception.type": "ValueError"}]
    assert SECRET not in everything(otel)


@pytest.mark.parametrize("use_async", [False, True])
def test_without_capture_content_a_guardrail_judges_reason_reaches_no_span(
    otel: Telemetry, make_agent: Any, use_async: bool
) -> None:
    """A judge's reason quotes the text it judged; its trip event on the run's span
    carried it whatever capture_content said."""
    judge = plait.ScriptedChatModel([f'{{"tripped": true, "reason": "it gives {SECRET}"}}'])
    guards = ("guardrails", {"input": [{"judge": judge, "prompt": "no e-mail", "name": "mail"}]})
    agent = make_agent(["never"], middleware=[otel.middleware(), guards])
    with pytest.raises(GuardrailTripped, match=f"it gives {SECRET}"):  # the caller sees it
        asyncio.run(agent.ainvoke("hi")) if use_async else agent.invoke("hi")
    (run,) = otel.named("invoke_agent agent")
    (event,) = [e for e in run.events if e.name == "guardrail.tripped"]
    assert dict(event.attributes or {}) == {"guardrail.name": "mail", "guardrail.kind": "input"}
    assert SECRET not in everything(otel)


def test_without_capture_content_a_failed_model_call_keeps_only_the_error_type(
    otel: Telemetry, make_agent: Any
) -> None:
    agent = make_agent(
        [ProviderError(f"bad request: {SECRET} is not allowed", status_code=400)],
        middleware=[otel.middleware()],
    )
    with pytest.raises(ProviderError):
        agent.invoke("hi")
    for span in otel.spans():
        assert span.status.description == "ProviderError"
    assert SECRET not in everything(otel)


def test_with_content_and_pii_a_tool_span_records_the_redacted_result(
    otel: Telemetry, make_agent: Any
) -> None:
    agent = make_agent(
        [ai("", call("contact", customer="c1")), "done"],
        tools=[contact],
        middleware=[
            otel.middleware(capture_content=True),
            PIIMiddleware("email", strategy="redact", apply_to_tool_results=True),
        ],
    )
    agent.invoke("whom do I write to?")
    (tool,) = otel.named("execute_tool contact")
    assert tool.attributes["gen_ai.tool.call.result"] == "write to [REDACTED_EMAIL]"
    (_, second) = otel.named("chat scripted")
    sent = json.loads(second.attributes["gen_ai.input.messages"])
    assert sent[-1]["parts"][0]["response"] == "write to [REDACTED_EMAIL]"
    assert SECRET not in everything(otel)


def test_with_content_and_pseudonyms_a_tool_span_records_the_placeholders(
    otel: Telemetry, make_agent: Any
) -> None:
    agent = make_agent(
        [ai("", call("send", to="<EMAIL_1>")), "sent"],
        tools=[send],
        middleware=[
            otel.middleware(capture_content=True),
            PIIMiddleware("email", strategy="pseudonymize"),
        ],
    )
    result = agent.invoke(f"mail {SECRET}")
    assert result.messages[2].text == f"sent to {SECRET}"  # the tool got the real value
    (tool,) = otel.named("execute_tool send")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"to": "<EMAIL_1>"}
    first = otel.named("chat scripted")[0]
    assert SECRET not in first.attributes["gen_ai.input.messages"]


def test_with_capture_content_the_error_text_is_recorded(otel: Telemetry, make_agent: Any) -> None:
    agent = make_agent(
        [ai("", call("lookup", order_id=7)), "sorry"],
        tools=[lookup],
        middleware=[otel.middleware(capture_content=True)],
    )
    agent.invoke("go")
    (raised,) = otel.named("execute_tool lookup")
    assert raised.status.description == f"no order 7 for {SECRET}"


@pytest.mark.parametrize("use_async", [False, True])
def test_with_capture_content_a_tools_error_is_recorded_as_pii_redacted_it(
    otel: Telemetry, make_agent: Any, use_async: bool
) -> None:
    """The model gets a tool's error in pii's words (``[REDACTED_EMAIL]``); the tool's
    span recorded the exception's own text, address and traceback included."""
    pii = PIIMiddleware("email", strategy="redact", apply_to_tool_results=True)
    agent = make_agent(
        [ai("", call("lookup", order_id=7)), "sorry"],
        tools=[lookup],
        middleware=[otel.middleware(capture_content=True), pii],
    )
    if use_async:
        asyncio.run(agent.ainvoke("go"))
    else:
        agent.invoke("go")
    (raised,) = otel.named("execute_tool lookup")
    assert raised.status.description == "no order 7 for [REDACTED_EMAIL]"
    assert [dict(e.attributes or {}) for e in raised.events] == [
        {"exception.type": "ValueError", "exception.message": "no order 7 for [REDACTED_EMAIL]"}
    ]
    assert raised.attributes["gen_ai.tool.call.result"].startswith(
        "Error: tool 'lookup' raised ValueError: no order 7 for [REDACTED_EMAIL]."
    )
    assert SECRET not in everything(otel)


def test_with_capture_content_a_tools_error_is_recorded_with_its_placeholder(
    otel: Telemetry, make_agent: Any
) -> None:
    """With ``pseudonymize`` the model is told the error with ``<EMAIL_1>`` as the tool's
    step is saved, and the span records those words."""
    pii = PIIMiddleware("email", strategy="pseudonymize", apply_to_tool_results=True)
    agent = make_agent(
        [ai("", call("lookup", order_id=7)), "sorry"],
        tools=[lookup],
        middleware=[otel.middleware(capture_content=True), pii],
    )
    agent.invoke("go")
    (raised,) = otel.named("execute_tool lookup")
    assert raised.status.description == "no order 7 for <EMAIL_1>"
    assert SECRET not in everything(otel)


def test_with_capture_content_a_tools_result_is_recorded_with_its_placeholder(
    otel: Telemetry, make_agent: Any
) -> None:
    pii = PIIMiddleware("email", strategy="pseudonymize", apply_to_tool_results=True)
    agent = make_agent(
        [ai("", call("contact", customer="x")), "ok"],
        tools=[contact],
        middleware=[otel.middleware(capture_content=True), pii],
    )
    agent.invoke("go")
    (tool,) = otel.named("execute_tool contact")
    assert tool.attributes["gen_ai.tool.call.result"] == "write to <EMAIL_1>"
    assert SECRET not in everything(otel)


@pytest.mark.parametrize("use_async", [False, True])
def test_without_capture_content_a_tool_name_the_model_invents_reaches_no_span(
    otel: Telemetry, make_agent: Any, use_async: bool
) -> None:
    # the name of a tool the agent does not have is the model's text, as its arguments are
    invented = f"mail_{SECRET}"
    agent = make_agent(
        [ai("", call("send", to="x"), call(invented, to="y")), "sorry"],
        tools=[send],
        middleware=[otel.middleware()],
    )
    result = asyncio.run(agent.ainvoke("go")) if use_async else agent.invoke("go")
    assert result.text == "sorry"
    assert SECRET not in everything(otel)
    tools = [s for s in otel.spans() if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert [s.name for s in tools] == ["execute_tool send", "execute_tool _OTHER"]
    assert [s.attributes["gen_ai.tool.name"] for s in tools] == ["send", "_OTHER"]
    assert tools[1].attributes["error.type"] == "tool_error"


def test_with_capture_content_an_invented_tool_name_is_recorded(
    otel: Telemetry, make_agent: Any
) -> None:
    agent = make_agent(
        [ai("", call("nope", to="y")), "sorry"],
        tools=[send],
        middleware=[otel.middleware(capture_content=True)],
    )
    agent.invoke("go")
    (span,) = otel.named("execute_tool nope")
    assert span.attributes["gen_ai.tool.name"] == "nope"
