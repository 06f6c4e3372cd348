"""Tools and an offline "model" for the support example.

``issue_refund`` asks a human before it moves money: it pauses the run with
``plait.interrupt`` and a human-in-the-loop request (the shape the ``human_in_the_loop``
middleware uses), which ``plait chat`` shows as an approve / edit / reject prompt.
"""

from __future__ import annotations

import json
import re
from typing import Any

import plait
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
    """Refund an order, after a human approves it.

    Args:
        order_id: The order to refund.
        amount: The amount in euros.
    """
    answer = plait.interrupt(
        {
            "action_requests": [
                {
                    "name": "issue_refund",
                    "args": {"order_id": order_id, "amount": amount},
                    "description": f"Refund {amount:.2f} EUR for order {order_id}?",
                }
            ],
            "review_configs": [
                {
                    "action_name": "issue_refund",
                    "allowed_decisions": ["approve", "edit", "reject"],
                }
            ],
        }
    )
    decision = answer["decisions"][0]
    if decision["type"] == "reject":
        reason = decision.get("message") or "no reason given"
        return f"Refund not issued: a human rejected it ({reason}). Do not retry."
    if decision["type"] == "edit":
        args = decision["edited_action"]["args"]
        order_id, amount = str(args["order_id"]), float(args["amount"])
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
    if not last.text.startswith("Refunded"):
        return AIMessage(f"I have not refunded it. {last.text}")
    customer = next(m.text for m in reversed(messages) if m.type == "human")
    contact = re.search(r"\[REDACTED_EMAIL\]", customer)
    where = f" to {contact.group(0)}" if contact else ""
    return AIMessage(f"{last.text} I will send the confirmation{where}.")
