"""Tools and an offline "model" for the support example.

``issue_refund`` moves money, so the agent file puts it under the ``human_in_the_loop``
middleware: the run pauses before each refund, and ``plait chat`` asks for approve /
edit / reject.
"""

from __future__ import annotations

import json
import re
from typing import Any

from plait.messages import AIMessage, AnyMessage, ToolCall

_ORDERS = {
    "1042": {"item": "blue kettle", "amount": 25.0, "status": "delivered"},
    "2077": {"item": "desk lamp", "amount": 40.0, "status": "in transit"},
}


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up.

    Args:
        order_id: The order number, e.g. "1042".
    """
    order = _ORDERS.get(order_id)
    if order is None:
        raise ValueError(f"there is no order {order_id}")
    return {"order_id": order_id, **order}


def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
        amount: The amount in euros.
    """
    if order_id not in _ORDERS:
        raise ValueError(f"there is no order {order_id}")
    return f"Refunded {amount:.2f} EUR for order {order_id}."


def support_brain(messages: list[AnyMessage], tools: list[object]) -> AIMessage:
    """A scripted stand-in for a model: look the orders up, refund them, then report.

    It only reads the conversation, so the same function answers every turn. It sees the
    customer's messages as the ``pii`` middleware left them: e-mail addresses redacted.
    """
    last = messages[-1]
    if last.type == "human":
        numbers = re.findall(r"\b(\d{4})\b", last.text) or [""]
        calls = [ToolCall("lookup_order", {"order_id": number}) for number in numbers]
        return AIMessage(
            "Let me look that order up." if len(calls) == 1 else "Let me look those orders up.",
            tool_calls=calls,
        )
    answers = _latest_answers(messages)
    if answers[0].name == "lookup_order":
        found = [json.loads(m.text) for m in answers if m.status != "error"]
        if not found:
            return AIMessage(f"Sorry, I could not find that order. {answers[0].text}")
        refunds = [
            ToolCall("issue_refund", {"order_id": o["order_id"], "amount": o["amount"]})
            for o in found
        ]
        return AIMessage("", tool_calls=refunds)
    orders = {
        call.id: call.args.get("order_id")
        for message in messages
        if message.type == "ai"
        for call in message.tool_calls
    }
    ran = [m for m in answers if m.status != "error"]
    refused = [m for m in answers if m.status == "error"]
    done = [_refund_report(m, orders.get(m.tool_call_id)) for m in ran + refused]
    customer = next(m.text for m in reversed(messages) if m.type == "human")
    contact = re.search(r"\[REDACTED_EMAIL\]", customer)
    if ran and contact:
        done.append(f"I will send the confirmation to {contact.group(0)}.")
    return AIMessage(" ".join(done))


def _latest_answers(messages: list[AnyMessage]) -> list[AnyMessage]:
    """The tool messages answering the last AI message, in order."""
    answers: list[AnyMessage] = []
    for message in reversed(messages):
        if message.type != "tool":
            break
        answers.append(message)
    return answers[::-1]


def _refund_report(message: AnyMessage, order_id: str | None) -> str:
    if message.status == "error":
        return f"I have not refunded {f'order {order_id}' if order_id else 'it'}. {message.text}"
    # After an edit, human_in_the_loop puts a note before the result of the call that ran.
    result = message.text.rsplit("\n\n", 1)[-1]
    return f"A reviewer changed the refund. {result}" if message.text != result else result
