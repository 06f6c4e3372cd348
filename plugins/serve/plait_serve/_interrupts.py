"""Server-authoritative interrupts: what a paused thread waits for, read from the
checkpoint, and the check every resume passes before anything runs.

A client never tells the server which call it may approve: the pending interrupt (its id,
the tool calls it reviews and the decisions each allows) comes from the thread's saved
state, and a resume that names another interrupt or call, gives a decision the call does
not allow, or arrives when nothing is paused is refused — never applied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plait.runlog import Pending, ReviewedCall, pending_interrupts

__all__ = ["Pending", "ResumeRefused", "ReviewedCall", "check_resume", "pending_interrupts"]


class ResumeRefused(Exception):
    """A resume the pending interrupt does not allow (HTTP 409); the message says why."""


def check_resume(
    thread_id: str, pending: Sequence[Pending], answers: Mapping[str | None, Any]
) -> Any:
    """The ``Command(resume=...)`` value for ``answers`` (``{interrupt_id: answer}``, or
    ``{None: answer}`` when the client named no interrupt), or ``ResumeRefused``.

    An answer to an approval is ``{"decisions": [...]}``, one decision per reviewed call in
    order; a decision may name its call (``"tool_call_id"``), and then must name the right
    one."""
    if not pending:
        raise ResumeRefused(f"thread {thread_id!r} has no pending interrupt to resume")
    by_id = {p.id: p for p in pending}
    if None in answers:
        if len(answers) != 1 or len(pending) != 1:
            raise ResumeRefused(
                f"thread {thread_id!r} waits for {len(pending)} interrupts "
                f"({', '.join(by_id)}): answer each by its id"
            )
        answers = {pending[0].id: answers[None]}
    for interrupt_id in answers:
        if interrupt_id not in by_id:
            raise ResumeRefused(
                f"interrupt {interrupt_id!r} is not pending on thread {thread_id!r} "
                f"(pending: {', '.join(by_id)})"
            )
    missing = [p.id for p in pending if p.id not in answers]
    if missing:
        raise ResumeRefused(
            f"the resume leaves interrupt(s) {', '.join(missing)} of thread {thread_id!r} "
            "unanswered: answer every pending interrupt"
        )
    resume = {p.id: _checked(p, answers[p.id]) for p in pending}
    return resume[pending[0].id] if len(pending) == 1 else resume


def _checked(pending: Pending, answer: Any) -> Any:
    if not pending.calls:
        return answer
    names = ", ".join(f"{c.name} ({c.id})" for c in pending.calls)
    if not isinstance(answer, Mapping) or not isinstance(answer.get("decisions"), list):
        raise ResumeRefused(
            f"interrupt {pending.id!r} reviews {names}: expected {{'decisions': [...]}} with "
            f"one decision per call, got {_short(answer)}"
        )
    decisions = answer["decisions"]
    if len(decisions) != len(pending.calls):
        raise ResumeRefused(
            f"interrupt {pending.id!r} reviews {len(pending.calls)} call(s) ({names}): "
            f"expected {len(pending.calls)} decision(s), got {len(decisions)}"
        )
    checked: list[Any] = []
    for index, (decision, call) in enumerate(zip(decisions, pending.calls, strict=True)):
        if not isinstance(decision, Mapping):
            raise ResumeRefused(
                f"decision {index}: expected an object with a 'type', got {_short(decision)}"
            )
        named = decision.get("tool_call_id")
        if named is not None and named != call.id:
            raise ResumeRefused(
                f"decision {index} names tool call {named!r}, but the call under review "
                f"there is {call.name} ({call.id})"
            )
        if decision.get("type") not in call.allowed_decisions:
            allowed = ", ".join(map(repr, call.allowed_decisions))
            raise ResumeRefused(
                f"decision {index} for {call.name} ({call.id}): expected one of {allowed}, "
                f"got {_short(decision.get('type'))}"
            )
        checked.append({k: v for k, v in decision.items() if k != "tool_call_id"})
    return {**answer, "decisions": checked}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
