"""What a refusal looks like once a provider has parsed it, and the error that ends a run
on one.

Each provider keeps the signal where its answer carries it:

- OpenAI Chat Completions and the Responses API: the refusal text in
  ``response_metadata["refusal"]`` (the answer's ``content`` is empty);
- Anthropic: ``response_metadata["finish_reason"] == "refusal"`` (``stop_reason``);
- an OpenAI-compatible server's content filter (Azure): ``finish_reason ==
  "content_filter"``;
- Gemini: no answer at all but a ``ProviderError`` from provider ``google`` whose
  ``error_type`` is the finish reason that withheld it (``SAFETY``, ``PROHIBITED_CONTENT``…)
  or ``prompt_blocked`` for a prompt refused before any answer.
"""

from __future__ import annotations

from typing import Any

import attrs

from plait.errors import ProviderError, StopRun
from plait.lazy import frozen
from plait.messages import AIMessage
from plait.models import ChatModel

__all__ = ["ModelRefusedError", "Refusal", "refusal_in", "refusal_of_error"]

FINISH_REASONS = frozenset({"refusal", "content_filter"})
"""Finish reasons (Anthropic's ``stop_reason``, OpenAI's ``finish_reason``) of a refusal."""
GEMINI_WITHHELD = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "LANGUAGE",
        "prompt_blocked",
    }
)
"""The ``error_type`` of the ``ProviderError`` plait's Gemini provider raises when the API
withheld the answer or blocked the prompt."""


@frozen
class Refusal:
    """One model's refusal: who refused, the provider's reason and the text it gave."""

    provider: str
    model: str
    reason: str
    """``"refusal"``, ``"content_filter"`` or Gemini's finish reason (``"SAFETY"``...)."""
    text: str | None = None
    """The model's own words (OpenAI's refusal, Anthropic's text); Gemini gives none."""
    detail: str | None = None
    """The provider error a withheld Gemini answer was (finish reason, blocked categories)."""

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class ModelRefusedError(StopRun):
    """The model (and every fallback) refused; ``refusals`` holds each one, in order."""

    def __init__(self, message: str, refusals: tuple[Refusal, ...]) -> None:
        super().__init__(message)
        self.refusals = refusals


def refusal_in(message: AIMessage | None, model: ChatModel) -> Refusal | None:
    """The refusal ``message`` (an answer ``model`` gave) carries, if any."""
    if message is None or message.tool_calls:
        return None
    metadata = message.response_metadata
    refused = metadata.get("refusal")
    if isinstance(refused, str) and refused:
        return Refusal(model.provider, model.model_name, "refusal", refused)
    reason = metadata.get("finish_reason")
    if reason in FINISH_REASONS:
        return Refusal(model.provider, model.model_name, str(reason), message.text or None)
    return None


def refusal_of_error(error: Exception, model: ChatModel) -> Refusal | None:
    """The refusal ``error`` (raised by ``model``'s call) stands for, if it is one."""
    if (
        isinstance(error, ProviderError)
        and error.provider == "google"
        and error.error_type in GEMINI_WITHHELD
    ):
        return Refusal(model.provider, model.model_name, str(error.error_type), detail=str(error))
    return None
