"""Turning the ``middleware=[...]`` list into named instances.

An item is an entry-point name, a ``(name, options)`` pair, or an object. Names are
stable: the entry-point name (or class name), then ``name#2``, ``name#3`` for repeats.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from plait import _entrypoints
from plait._convert import expected
from plait.errors import ConfigError, FieldError
from plait.hookspecs import ALL_HOOKS
from plait.middleware import FunctionMiddleware, Middleware

_OPTIONS_MAPPING = "a mapping of option names to values"


def build(name: str, options: Mapping[str, Any]) -> object:
    """An instance of the middleware entry point ``name`` with ``options``."""
    cls = _entrypoints.load("plait.middleware", name, what="middleware")
    if not isinstance(options, Mapping):
        raise ConfigError(f"options: {expected(_OPTIONS_MAPPING, options)}", plugin=name)
    if attrs.has(cls):
        if not options:
            # No option to convert: the class's defaults, without generating (compiling) a
            # structuring function for it; a required option or a refused default is
            # reported by the full path below, in its words.
            try:
                return cls()
            except Exception:
                pass
        from plait.options import structure_options

        return structure_options(cls, options, plugin=name)
    try:
        return cls(**options)
    except FieldError as exc:
        raise ConfigError(exc.message, option=exc.field, plugin=name) from exc
    except ConfigError as exc:
        exc.in_plugin(name)
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc), plugin=name) from None


class Built:
    """A middleware already built from the entry point ``name`` (an agent file builds each
    one to check its options, then hands that instance on instead of building it again).
    A plain class: ``import plait`` compiles no methods (attrs) nor field annotations
    (a named tuple) for it."""

    __slots__ = ("name", "obj")

    def __init__(self, name: str, obj: object) -> None:
        self.name = name
        self.obj = obj


def _one(item: Any) -> tuple[str, object]:
    if isinstance(item, Built):
        return item.name, item.obj
    if isinstance(item, str):
        return item, build(item, {})
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        return item[0], build(item[0], item[1])
    if isinstance(item, FunctionMiddleware):
        return item.name, item
    if inspect.isclass(item):
        raise ConfigError(
            f"middleware {item.__name__} is a class; pass an instance, e.g. {item.__name__}()"
        )
    if inspect.isfunction(item):
        raise ConfigError(
            f"middleware {item.__name__!r} is a plain function; decorate it with a hook "
            "decorator such as @plait.before_model or @plait.wrap_model_call"
        )
    if not isinstance(item, Middleware) and not _implements_a_hook(item):
        raise ConfigError(
            f"middleware {item!r} ({type(item).__name__}) implements no plait hook; pass an "
            "entry-point name, a (name, options) pair, a plait.Middleware instance or a "
            "function decorated with a hook decorator such as @plait.before_model"
        )
    return type(item).__name__, item


def _implements_a_hook(item: object) -> bool:
    """Whether ``item`` has a marked hook method, or a method named after a hook (which the
    registry then refuses with its own message if unmarked)."""
    if any(callable(getattr(item, hook, None)) for hook in ALL_HOOKS):
        return True
    for attr in dir(item):
        static = inspect.getattr_static(item, attr, None)
        func = getattr(static, "__func__", static)
        if callable(func) and getattr(func, "plait_impl", None) is not None:
            return True
    return False


def resolve_middleware(items: Sequence[Any]) -> list[tuple[str, object]]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        wanted = "a list of names, (name, options) pairs or instances"
        raise ConfigError(f"middleware: {expected(wanted, items)}")
    resolved: list[tuple[str, object]] = []
    seen: dict[str, int] = {}
    for item in items:
        base, obj = _one(item)
        count = seen.get(base, 0) + 1
        seen[base] = count
        resolved.append((base if count == 1 else f"{base}#{count}", obj))
    return resolved
