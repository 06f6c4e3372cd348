"""``create_agent(context_schema=..., state_schema=...)``: LangChain's typed run context and
custom state, made into the two middleware that enforce them.

A context schema is checked when a run starts (``invoke(context=...)`` must be an
instance of it; a TypedDict's keys are checked like a tool's arguments). A state schema's
keys (beyond ``messages``) become state fields, exactly as a middleware's ``state_fields``
declare them: a default (the class's, else an empty list/dict/set for those types, else
``None``) and a reducer from ``Annotated[list[str], operator.add]`` as in LangGraph. They
are checkpointed with the thread and may be given in the input dict.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from plait import _convert, schema
from plait._structured import is_schema_class
from plait.errors import ConfigError
from plait.lazy import frozen
from plait.middleware import Middleware
from plait.types import AgentResult, RunRequest, StateField

__all__ = ["ContextSchema", "StateSchema", "schema_middleware"]

_OWN_KEYS = frozenset({"messages", "structured_response", "jump_to", "remaining_steps"})
"""Keys of LangChain's ``AgentState`` that plait keeps itself (a state schema that
subclasses ``AgentState`` declares no field for them)."""

_CLASSES = "an attrs class, a dataclass, a TypedDict or a pydantic model"


def _need_class(option: str, value: Any) -> None:
    if not is_schema_class(value):
        raise ConfigError(f"{option}: {_convert.expected(_CLASSES, value)}")


@frozen
class ContextSchema(Middleware):
    """Checks each run's ``context`` against ``create_agent(context_schema=...)``."""

    schema: type

    def _check(self, request: RunRequest) -> None:
        context = request.runtime.context
        cls = self.schema
        if typing.is_typeddict(cls):
            if not isinstance(context, Mapping):
                wanted = f"a {cls.__name__} dict (the agent's context_schema)"
                raise ConfigError(f"context: {_convert.expected(wanted, context)}")
            try:
                _convert.structure(dict(context), cls)
            except _convert.ConversionError as exc:
                raise ConfigError(f"context: {exc}") from None
        elif not isinstance(context, cls):
            wanted = f"an instance of {cls.__name__} (the agent's context_schema)"
            raise ConfigError(f"context: {_convert.expected(wanted, context)}")

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        self._check(request)
        return handler(request)

    async def awrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], Any]
    ) -> AgentResult:
        self._check(request)
        result: AgentResult = await handler(request)
        return result


@frozen
class StateSchema(Middleware):
    """Declares the keys of ``create_agent(state_schema=...)`` as state fields."""

    schema: type
    fields: Mapping[str, StateField]

    def state_fields(self) -> Mapping[str, StateField]:
        return self.fields


def state_fields_of(cls: type) -> dict[str, StateField]:
    """The state fields a state schema declares (``ConfigError`` naming a bad one)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise ConfigError(
            f"state_schema: cannot read the type hints of {cls.__name__}: {exc}"
        ) from None
    defaults = _defaults(cls)
    fields: dict[str, StateField] = {}
    for key, hint in hints.items():
        if key in _OWN_KEYS or key.startswith("_"):
            continue
        reducer: Callable[[Any, Any], Any] | None = None
        if typing.get_origin(hint) is typing.Annotated:
            base, *extras = typing.get_args(hint)
            reducer = next((m for m in extras if callable(m) and not isinstance(m, type)), None)
            hint = base
        if typing.get_origin(hint) in (typing.Required, typing.NotRequired):
            hint = typing.get_args(hint)[0]
        if key in defaults:
            default = defaults[key]
        else:
            origin = typing.get_origin(hint) or hint
            default = origin() if origin in (list, dict, set) else None
        if not schema.is_json_value(default):
            wanted = _convert.expected("a JSON value (state is checkpointed)", default)
            raise ConfigError(f"state_schema: {cls.__name__}.{key}: default: {wanted}")
        fields[key] = StateField(default=default, reducer=reducer)
    return fields


def _defaults(cls: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if attrs.has(cls):
        for field in attrs.fields(cls):
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                if not default.takes_self:
                    found[field.name] = default.factory()
            elif default is not attrs.NOTHING:
                found[field.name] = default
    elif _convert.is_dataclass_type(cls):
        for dc_field in dataclasses.fields(cls):
            if dc_field.default is not dataclasses.MISSING:
                found[dc_field.name] = dc_field.default
            elif dc_field.default_factory is not dataclasses.MISSING:
                found[dc_field.name] = dc_field.default_factory()
    elif _convert.is_pydantic_model(cls):
        for name, info in cls.model_fields.items():  # type: ignore[attr-defined]
            if not info.is_required():
                found[name] = info.get_default(call_default_factory=True)
    else:  # a TypedDict: class attributes are not allowed, so there are no defaults
        pass
    return found


def schema_middleware(context_schema: Any, state_schema: Any) -> list[tuple[str, object]]:
    """The middleware enforcing the two schemas (none for ``None``), to run outermost."""
    made: list[tuple[str, object]] = []
    if context_schema is not None:
        _need_class("context_schema", context_schema)
        made.append(("context_schema", ContextSchema(context_schema)))
    if state_schema is not None:
        _need_class("state_schema", state_schema)
        made.append(("state_schema", StateSchema(state_schema, state_fields_of(state_schema))))
    return made
