"""A middleware's options described for ``plait plugins`` and the docs' options tables
(``plait.options.describe_options``), apart from the rest of ``plait.options``: building an
agent never describes its options."""

from __future__ import annotations

import enum
import typing
from typing import Any

import attrs

from plait import _convert
from plait.lazy import frozen
from plait.schema import field_descriptions

__all__ = ["OptionInfo", "describe_options"]


@frozen
class OptionInfo:
    """One option of a middleware, as ``plait plugins`` lists it.

    :param type: a readable spelling such as ``int | None`` or ``list[str]``.
    :param default: the default's ``repr``, or ``None`` for a required option.
    :param help: the field's ``metadata["help"]`` (or ``"description"``), else its attribute
        docstring or the class docstring's ``Attributes:`` entry.
    """

    name: str
    type: str
    default: str | None
    required: bool
    help: str | None = None


def describe_options(cls: type) -> list[OptionInfo]:
    """The options of the middleware class ``cls``, in declaration order."""
    if not attrs.has(cls):
        return []
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # an annotation that cannot be resolved: show it as written
        hints = {}
    docs = field_descriptions(cls)
    infos: list[OptionInfo] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        tp = hints.get(field.name, field.type)
        required = field.default is attrs.NOTHING
        infos.append(
            OptionInfo(
                name=field.name,
                type=_convert.type_repr(tp) if tp is not None else "Any",
                default=None if required else _default_repr(field.default),
                required=required,
                help=field.metadata.get("help")
                or field.metadata.get("description")
                or docs.get(field.name),
            )
        )
    return infos


def _default_repr(default: Any) -> str:
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            return "(computed)"
        try:
            default = default.factory()
        except Exception:
            return f"{getattr(default.factory, '__name__', 'factory')}()"
    if isinstance(default, enum.Enum):
        return repr(default.value)
    if callable(default) and hasattr(default, "__qualname__"):
        return f"{getattr(default, '__module__', '?')}:{default.__qualname__}"
    return repr(default)
