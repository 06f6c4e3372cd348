"""The terminal dialog for this plugin's interrupts, found by ``plait run``/``plait chat``
through the ``plait.answerers`` entry point: one decision per action request (approve,
edit, reject, respond — those the request's review config allows)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait.answerers import Asker

__all__ = ["ReviewAnswerer"]

_CHOICES = {
    "approve": ("a", "approve"),
    "edit": ("e", "edit"),
    "reject": ("r", "reject"),
    "respond": ("s", "respond"),
}
"""Each decision with the answers that pick it (its key letter, its word)."""


def _menu_word(decision: str) -> str:
    """``[a]pprove``, ``re[s]pond``: the decision with its key letter in brackets."""
    if decision not in _CHOICES:
        return decision
    key = _CHOICES[decision][0]
    at = decision.index(key)
    return f"{decision[:at]}[{key}]{decision[at + 1 :]}"


def _short(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


class ReviewAnswerer:
    """Answers a review interrupt (``{"action_requests": [...], "review_configs": [...]}``)
    with ``{"decisions": [...]}``, one per request, in order."""

    def claims(self, value: Any) -> bool:
        return isinstance(value, Mapping) and isinstance(value.get("action_requests"), list)

    def ask(self, value: Mapping[str, Any], asker: Asker) -> dict[str, Any]:
        requests = value["action_requests"]
        configs = value.get("review_configs") or []
        by_name = {c.get("action_name"): c for c in configs if isinstance(c, Mapping)}
        decisions: list[dict[str, Any]] = []
        for index, request in enumerate(requests):
            name = request.get("name", "?")
            args = request.get("args", {})
            config = configs[index] if index < len(configs) else by_name.get(name, {})
            allowed = list(config.get("allowed_decisions") or _CHOICES)
            asker.out.write(f"\nApproval needed: {name}({json.dumps(args, ensure_ascii=False)})\n")
            if request.get("description"):
                for line in str(request["description"]).splitlines():
                    asker.out.write(f"  {line}\n")
            menu = "  ".join(_menu_word(d) for d in allowed)
            while True:
                answer = asker.ask(f"  {menu} > ").strip().lower()
                choice = next((d for d in allowed if d in _CHOICES and answer in _CHOICES[d]), None)
                if choice is not None:
                    break
                asker.out.write(f"  please answer one of: {', '.join(allowed)}\n")
            decisions.append(self._decision(choice, name, args, asker))
        return {"decisions": decisions}

    @staticmethod
    def _decision(choice: str, name: str, args: Any, asker: Asker) -> dict[str, Any]:
        if choice == "approve":
            return {"type": "approve"}
        if choice == "edit":
            new_args = asker.edit_json(args)
            while not isinstance(new_args, dict):
                asker.out.write("  the arguments must be a JSON object\n")
                new_args = asker.edit_json(args)
            return {"type": "edit", "edited_action": {"name": name, "args": new_args}}
        if choice == "reject":
            reason = asker.ask("  reason (optional): ").strip()
            return {"type": "reject", **({"message": reason} if reason else {})}
        reply = asker.ask("  reply to give the model as the tool's result: ")
        return {"type": "respond", "message": reply}

    def waiting(self, value: Mapping[str, Any], id: str) -> list[str]:
        return [
            f"Waiting for approval: {request.get('name')}"
            f"({_short(json.dumps(request.get('args', {}), ensure_ascii=False), 80)})"
            for request in value["action_requests"]
        ]

    def example(self, value: Mapping[str, Any]) -> dict[str, Any]:
        return {"decisions": [{"type": "approve"} for _ in value["action_requests"]]}

    def resume_help(self) -> str:
        return (
            '  (one decision per call, in order: {"type": "approve"}, '
            '{"type": "edit", "edited_action": {"name": ..., "args": {...}}}, '
            '{"type": "reject", "message": "why"})'
        )
