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
    """A scripted stand-in for a model: look the order up, refund it, then report.

    It only reads the conversation, so the same function answers every turn. It sees the
    customer's messages as the ``pii`` middleware left them: e-mail addresses redacted.
    """
    last = messages[-1]
    if last.type == "human":
        found = re.search(r"\b(\d{4})\b", last.text)
        return AIMessage(
            "Let me look that order up.",
            tool_calls=[ToolCall("lookup_order", {"order_id": found.group(1) if found else ""})],
        )
    if last.type == "tool" and last.name == "lookup_order":
        if last.status == "error":
            return AIMessage(f"Sorry, I could not find that order. {last.text}")
        order = json.loads(last.text)
        args = {"order_id": order["order_id"], "amount": order["amount"]}
        return AIMessage("", tool_calls=[ToolCall("issue_refund", args)])
    if last.status == "error":
        return AIMessage(f"I have not refunded it. {last.text}")
    # After an edit, human_in_the_loop puts a note before the result of the call that ran.
    result = last.text.rsplit("\n\n", 1)[-1]
    if last.text != result:
        return AIMessage(f"A reviewer changed the refund. {result}")
    customer = next(m.text for m in reversed(messages) if m.type == "human")
    contact = re.search(r"\[REDACTED_EMAIL\]", customer)
    where = f" to {contact.group(0)}" if contact else ""
    return AIMessage(f"{result} I will send the confirmation{where}.")
