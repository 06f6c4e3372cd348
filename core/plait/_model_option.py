"""The check of an option naming a model (``plait.options.chat_model``), apart from the
rest of ``plait.options`` so that building an agent whose middleware names no model
generates no class for it."""

from __future__ import annotations

from typing import Any

import attrs

from plait._convert import FieldError, expected
from plait.lazy import frozen
from plait.models import MODEL_FORMS, OPTIONAL_MODEL_FORMS, ChatModel, infer_provider

__all__ = ["ChatModelOption", "chat_model"]


@frozen
class ChatModelOption:
    """A model option's check, usable as an attrs validator: a ``"provider:model"`` id, a
    bare id whose provider is inferred (``"gpt-4o"``) or a ``ChatModel`` (made into a model
    when the agent is built, so an unknown provider is reported there), ``None`` allowed if
    ``optional`` (for "the agent's model").

    ``expected a 'provider:model' id, a bare id whose provider is inferred (...), a
    ChatModel or None, got 'llama3'``.
    """

    optional: bool = False

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (an "expected ..., got ..." sentence), or ``None``."""
        if (value is None and self.optional) or isinstance(value, ChatModel):
            return None
        if isinstance(value, str) and (":" in value or infer_provider(value) is not None):
            return None
        return expected(OPTIONAL_MODEL_FORMS if self.optional else MODEL_FORMS, value)

    def check(self, name: str, value: Any) -> None:
        """Raise ``FieldError(name, ...)`` if ``value`` does not fit."""
        problem = self.problem(value)
        if problem is not None:
            raise FieldError(name, problem)

    def __call__(self, _: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        self.check(attribute.name, value)


def chat_model(*, optional: bool = False) -> ChatModelOption:
    """A model option's check: ``chat_model(optional=True)`` where ``None`` means the
    agent's model (``subagents``' ``default_model``, ``llm_tool_selector``'s ``model``)."""
    return ChatModelOption(optional)
