"""Building a middleware from its options without a structuring function generated for
its class (``plait.options.structure_options``' first path).

The converter structures an attrs class with a function it generates and compiles for that
class: each given option through the converter's hook for its field's type, unknown and
missing options refused, then ``cls(**converted)``. Compiling it is most of what building
a middleware with options costs the first time, and an agent built once per request, or a
short script, builds each class once. Here the same instance is built from the same hooks,
found once per class and field; when this is not exact for a class (renamed fields, type
variables, ``Annotated`` overrides), or anything goes wrong, the caller takes the full path,
which builds the instance or reports every problem in its words.

Only the annotations of the options given are evaluated (``_convert.field_type``), where the
full path evaluates every annotation of the class and its bases at once
(``attrs.resolve_types``): most of what the first build with options cost.
"""

from __future__ import annotations

import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from plait import _convert

try:  # what the generated functions call to find a field's hook (private to cattrs)
    from cattrs.gen._shared import find_structure_handler
except ImportError:  # another cattrs: every option set takes the full path
    find_structure_handler = None  # type: ignore[assignment]

__all__ = ["built_quickly"]

T = TypeVar("T")
Hook = Callable[[Any], Any]


_Plan = tuple[dict[str, "attrs.Attribute[Any]"], frozenset[str], dict[str, Hook | None]]
"""A class's options (its init fields by name), the required ones, and the hook of each
option an agent has given, ``None`` for an option only the full path builds exactly (a
plain tuple: a class here would be generated at import)."""


_PLANS: weakref.WeakKeyDictionary[type, _Plan | None] = weakref.WeakKeyDictionary()


def built_quickly(cls: type[T], options: Mapping[str, Any]) -> T | None:
    """``cls`` built from ``options`` as the converter's generated function builds it, or
    ``None`` for the full path (not exact for ``cls``, an unknown or missing option, a
    value its hook or the class refuses)."""
    try:
        plan = _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = _plan(cls)
    except TypeError:  # not weakly referenceable
        return None
    if plan is None:
        return None
    fields, required, hooks = plan
    if not required <= options.keys() or not options.keys() <= fields.keys():
        return None
    try:
        converted: dict[str, Any] = {}
        for name, value in options.items():
            try:
                hook = hooks[name]
            except KeyError:
                hook = hooks[name] = _hook(cls, fields[name])
            if hook is None:
                return None
            converted[name] = hook(value)
        return cls(**converted)
    except Exception:  # an unusable annotation too: the full path says so
        return None


def _plan(cls: type) -> _Plan | None:
    if find_structure_handler is None or getattr(cls, "__parameters__", None):
        return None  # generic classes: the full path's case
    if not attrs.has(cls):
        return None
    fields: dict[str, attrs.Attribute[Any]] = {}
    for field in attrs.fields(cls):
        if not field.init:
            continue
        if field.alias != field.name:
            return None  # renamed keys: the full path's case
        fields[field.name] = field
    required = frozenset(n for n, f in fields.items() if f.default is attrs.NOTHING)
    return fields, required, {}


def _hook(cls: type, field: attrs.Attribute[Any]) -> Hook | None:
    """What the generated function does with this field's value (``None``: what only
    the full path does)."""
    tp = _convert.field_type(cls, field)
    if isinstance(tp, TypeVar) or typing.get_origin(tp) is typing.Annotated:
        return None  # a type variable, or an Annotated that may carry a cattrs override
    converter = _convert.CONVERTER
    assert find_structure_handler is not None
    handler = find_structure_handler(field, tp, converter, False)
    if handler is None:
        return _unchanged
    if handler == converter._structure_call:
        return typing.cast(Hook, tp)
    return lambda value: handler(value, tp)


def _unchanged(value: Any) -> Any:
    return value
