"""A routing rule: conditions on one model call, all of which must hold, and the route
taken when they do. Cheap to check (no model call), so rules are tried on every call
before the classifier."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from plait.lazy import frozen
from plait.messages import HumanMessage
from plait.middleware import check_arguments
from plait.options import FieldError, expected, integer, non_empty_string
from plait.tokens import count_tokens
from plait.types import ModelRequest

__all__ = ["Rule"]

_count = integer(minimum=0, optional=True)


def _check_tools(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise FieldError(attribute.name, expected("a bool or None", value))


def _check_state(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise FieldError(attribute.name, expected("a mapping of state keys to values", value))


def _check_when(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise FieldError(attribute.name, expected("a callable (request) -> bool or None", value))


@check_arguments
@frozen(kw_only=True)
class Rule:
    """``route`` when every given condition holds for the model call."""

    route: str = attrs.field(validator=non_empty_string())
    """The route (a key of ``models``) this rule chooses."""
    min_messages: int | None = attrs.field(default=None, validator=_count)
    """At least this many messages in the request."""
    max_messages: int | None = attrs.field(default=None, validator=_count)
    """At most this many messages."""
    min_tokens: int | None = attrs.field(default=None, validator=_count)
    """At least this many tokens (``plait.tokens.count_tokens``: messages and system prompt)."""
    max_tokens: int | None = attrs.field(default=None, validator=_count)
    """At most this many tokens."""
    tools: bool | None = attrs.field(default=None, validator=_check_tools)
    """``True``: the call offers tools; ``False``: it offers none."""
    contains: str | None = attrs.field(default=None, validator=non_empty_string(optional=True))
    """The last user message contains this text (case-insensitive)."""
    state: Mapping[str, Any] = attrs.field(factory=dict, validator=_check_state)
    """State keys that must hold these values."""
    when: Callable[[ModelRequest], bool] | None = attrs.field(default=None, validator=_check_when)
    """A predicate on the ``ModelRequest``."""

    def matches(self, request: ModelRequest) -> bool:
        count = len(request.messages)
        if self.min_messages is not None and count < self.min_messages:
            return False
        if self.max_messages is not None and count > self.max_messages:
            return False
        if self.min_tokens is not None or self.max_tokens is not None:
            tokens = _tokens(request)
            if self.min_tokens is not None and tokens < self.min_tokens:
                return False
            if self.max_tokens is not None and tokens > self.max_tokens:
                return False
        if self.tools is not None and bool(request.tools) != self.tools:
            return False
        if self.contains is not None:
            last = last_user_text(request)
            if self.contains.lower() not in last.lower():
                return False
        if any(request.state.get(k) != v for k, v in self.state.items()):
            return False
        return self.when is None or bool(self.when(request))


def _tokens(request: ModelRequest) -> int:
    prompt = [HumanMessage(request.system_prompt)] if request.system_prompt else []
    return count_tokens([*prompt, *request.messages])


def last_user_text(request: ModelRequest) -> str:
    """The text of the request's last user message ("" if it has none)."""
    for message in reversed(request.messages):
        if isinstance(message, HumanMessage):
            return message.text
    return ""
