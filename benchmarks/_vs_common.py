"""What both frameworks share in ``vs_langchain.py``: the fake model's decisions, the
tool's body, the user's message and the bare-Python floor.

Neither framework is imported here, so the bare floor and the import-time children
measure nothing but themselves.
"""

from __future__ import annotations

import time
from typing import Any

#: The user's message. It carries an email address so that the PII middleware (email,
#: redact) has real work on the input in both frameworks.
PROMPT = "Look up the values one by one, then write to ann.lee@example.com when done."
FINAL = "done"
TOOL_NAME = "lookup"


def lookup(n: int) -> str:
    """Return the value stored under n.

    Args:
        n: the key to look up.
    """
    return f"value {n}"


class Brain:
    """The fake model's decisions: ``calls_per_turn`` tool calls, then a final answer,
    again and again. Both frameworks' fake models wrap one of these, so they send the
    same calls with the same ids and arguments, whatever they are given to read."""

    def __init__(self, calls_per_turn: int) -> None:
        self.calls_per_turn = calls_per_turn
        self.replies = 0

    def reply(self) -> tuple[str, list[tuple[str, dict[str, Any], str]]]:
        """The next answer: text and ``(tool name, arguments, call id)`` triples."""
        index = self.replies
        self.replies += 1
        position = index % (self.calls_per_turn + 1)
        if position == self.calls_per_turn:
            return FINAL, []
        return "", [(TOOL_NAME, {"n": index}, f"call_{index}")]


def bare_run(steps: int) -> tuple[float, int]:
    """The floor: a plain loop making the same model decisions and tool calls, keeping
    the transcript as tuples. Returns the seconds taken and the message count."""
    brain = Brain(steps)
    start = time.perf_counter()
    messages: list[tuple[str, Any]] = [("user", PROMPT)]
    while True:
        text, calls = brain.reply()
        messages.append(("ai", (text, calls)))
        if not calls:
            break
        for _name, args, call_id in calls:
            messages.append(("tool", (lookup(**args), call_id)))
    return time.perf_counter() - start, len(messages)
