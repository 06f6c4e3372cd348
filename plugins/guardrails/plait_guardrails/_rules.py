"""Guardrails written as data: a regular expression, a list of keywords, or an LLM judge
asked with a prompt whether the text breaks a rule."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from plait.lazy import frozen
from plait.messages import HumanMessage
from plait.models import ChatModel, init_chat_model
from plait_guardrails._guardrail import GuardrailData, GuardrailResult

__all__ = ["Judge", "Match", "keyword_pattern"]


def keyword_pattern(keywords: Sequence[str]) -> re.Pattern[str]:
    """Any of ``keywords`` as a whole word (or phrase), case-insensitively."""
    words = "|".join(re.escape(word) for word in keywords)
    return re.compile(rf"(?<!\w)(?:{words})(?!\w)", re.IGNORECASE)


@frozen
class Match:
    """Trips (or rejects, or replaces) when ``pattern`` is found in the checked text."""

    pattern: re.Pattern[str]
    action: str = "trip"
    message: str | None = None
    reason: str | None = None
    keywords: tuple[str, ...] = ()

    def _reason(self, found: str) -> str:
        """Why it tripped, naming the rule, never the text it found (which may be the
        very secret the rule guards, and the reason is kept in the thread)."""
        if self.reason:
            return self.reason
        for word in self.keywords:
            if word.casefold() == found.casefold():
                return f"mentions {word!r}"
        if self.keywords:
            return "mentions a listed keyword"
        return f"matches the pattern {self.pattern.pattern!r}"

    def __call__(self, data: GuardrailData) -> GuardrailResult:
        found = self.pattern.search(data.text)
        if found is None:
            return GuardrailResult.allow()
        reason = self._reason(found.group())
        if self.action == "reject":
            return GuardrailResult.reject(self.message or _REJECTED, reason)
        if self.action == "replace":
            return GuardrailResult.replace(self.message or _REPLACED, reason)
        return GuardrailResult.trip(reason, info={"match": found.group()})


_REJECTED = "Error: this call was blocked by a guardrail; do not call the tool this way again."
_REPLACED = "[withheld by a guardrail]"

JUDGE_PROMPT = """You are a guardrail. Decide whether the text below breaks this rule:

{rule}

Answer with JSON only: {{"tripped": true or false, "reason": "one short sentence"}}.
"tripped" is true when the text breaks the rule."""

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "verdict",
    "properties": {"tripped": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["tripped", "reason"],
    "additionalProperties": False,
}


@frozen
class Judge:
    """Asks ``model`` whether the text breaks ``prompt`` (a rule in plain words, or a whole
    system prompt when it contains ``{text}``), with structured output. Its calls are
    model calls of the run, so the run's usage ledger counts them. An answer that is not
    a verdict trips (fail closed): a guardrail that cannot tell must not let text past."""

    model: str | ChatModel
    prompt: str
    action: str = "trip"
    message: str | None = None
    _resolved: list[ChatModel] = attrs.field(factory=list, eq=False, repr=False)

    def chat_model(self) -> ChatModel:
        if not self._resolved:
            self._resolved.append(init_chat_model(self.model))
        return self._resolved[0]

    def _request(self, data: GuardrailData) -> tuple[list[HumanMessage], dict[str, Any]]:
        if "{text}" in self.prompt:
            return [HumanMessage(self.prompt.replace("{text}", data.text))], {}
        system = JUDGE_PROMPT.format(rule=self.prompt)
        return [HumanMessage(f"The text ({data.kind}):\n\n{data.text}")], {"system_prompt": system}

    def __call__(self, data: GuardrailData) -> GuardrailResult:
        messages, options = self._request(data)
        answer = self.chat_model().invoke(messages, response_format=VERDICT_SCHEMA, **options)
        return self._verdict(answer.text)

    async def acall(self, data: GuardrailData) -> GuardrailResult:
        messages, options = self._request(data)
        model = self.chat_model()
        answer = await model.ainvoke(messages, response_format=VERDICT_SCHEMA, **options)
        return self._verdict(answer.text)

    def _verdict(self, text: str) -> GuardrailResult:
        try:
            verdict = json.loads(_unfenced(text))
            tripped, reason = verdict["tripped"], str(verdict.get("reason") or "")
            if not isinstance(tripped, bool):
                raise TypeError("'tripped' is not a boolean")
        except (ValueError, KeyError, TypeError) as exc:
            return GuardrailResult.trip(
                f"the judge's answer is not a verdict ({exc}): {text[:200]!r}",
                info={"judge_answer": text},
            )
        if not tripped:
            return GuardrailResult.allow(info={"reason": reason})
        reason = reason or "the judge found the rule broken"
        if self.action == "reject":
            return GuardrailResult.reject(self.message or _REJECTED, reason)
        if self.action == "replace":
            return GuardrailResult.replace(self.message or _REPLACED, reason)
        return GuardrailResult.trip(reason)


def _unfenced(text: str) -> str:
    """The JSON of an answer wrapped in a Markdown code fence (models do that)."""
    found = re.fullmatch(r"\s*```(?:json)?\s*(.*?)\s*```\s*", text, re.DOTALL)
    return found.group(1) if found else text
