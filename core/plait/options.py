"""Middleware options: structuring them strictly, checking them, and describing them for
``plait plugins``.

A middleware class is an attrs class whose fields are its options. ``structure_options`` builds
one from a mapping (TOML, ``("name", {...})`` in ``middleware=[...]``) with the same strict
converter tools use, and turns every failure into a ``ConfigError`` that names the plugin, the
option's path and what was expected.

The validators here (``integer``, ``number``, ``positive_or_none``, ``non_empty_string``) and
``expected`` word a
bad value as that converter does, so an option, an agent file, a kernel argument, a tool
argument and a structured answer all say ``expected an int >= 1, got 0`` alike.
"""

from __future__ import annotations

import typing
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import cattrs

from plait import _convert
from plait._convert import (
    Bounded,
    ConversionError,
    FieldError,
    NonEmptyString,
    expected,
    integer,
    non_empty_string,
    number,
    pydantic_problems,
    show,
    structure,
)
from plait.errors import ConfigError
from plait.lazy import lazy_exports
from plait.middleware import check_arguments

try:  # what cattrs' generated functions call to find a field's hook (private to cattrs)
    from cattrs.gen._shared import find_structure_handler
except ImportError:  # another cattrs: every option set takes the full path
    find_structure_handler = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from plait._model_option import ChatModelOption, chat_model
    from plait._option_info import OptionInfo, describe_options
    from plait.tools import Tool
    from plait.types import AgentConfig

__all__ = [
    "Bounded",
    "ChatModelOption",
    "ConversionError",
    "FieldError",
    "NonEmptyString",
    "OptionInfo",
    "chat_model",
    "check_arguments",
    "check_tool_names",
    "describe_options",
    "expected",
    "integer",
    "non_empty_string",
    "number",
    "positive_or_none",
    "pydantic_problems",
    "show",
    "structure",
    "structure_options",
    "tool_names_field",
]

T = TypeVar("T")

__getattr__ = lazy_exports(
    __name__,
    {
        "ChatModelOption": "plait._model_option",
        "chat_model": "plait._model_option",
        "OptionInfo": "plait._option_info",
        "describe_options": "plait._option_info",
    },
)
"""Imported on first use: most agents' middleware name no model, and none describes its
options while an agent is built (each would generate an attrs class at import)."""


_OPTIONS_MAPPING = "a mapping of option names to values"


def structure_options(cls: type[T], options: Mapping[str, Any], *, plugin: str, at: str = "") -> T:
    """An instance of the middleware ``cls`` built from ``options``.

    :param plugin: the name the user gave (entry-point name), used in error messages.
    :param at: where ``options`` is inside the plugin's own options, for a nested table a
        plugin structures itself (``agents[0]``): the paths in errors start there.
    :raises ConfigError: e.g. ``plugin 'tool_call_limit': option 'run_limit': expected an
        int or None, got 'two'``; an unknown option lists the valid ones, a missing required one
        says so; several problems are reported together, separated by ``;``. A
        ``ConfigError`` the class raises itself (a check across options in
        ``__attrs_post_init__``) gets ``plugin`` too, once.
    """
    if not isinstance(options, Mapping):
        raise ConfigError(f"options: {expected(_OPTIONS_MAPPING, options)}", plugin=plugin)
    quick = _built_quickly(cls, options)
    if quick is not None:
        return quick
    try:
        result: T = _convert.structure(dict(options), cls)
    except _convert.ConversionError as exc:
        raise ConfigError(_convert.option_problems(exc, at=at), plugin=plugin) from None
    except (NameError, cattrs.errors.StructureHandlerNotFoundError) as exc:
        # the plugin's own annotations are at fault, not the user's options
        raise ConfigError(
            f"the option types of {cls.__qualname__} cannot be used: {exc}", plugin=plugin
        ) from exc
    except ConfigError as exc:
        # raised by the class with nothing structured wrong (a cross-option check)
        exc.in_plugin(plugin)
        raise
    return result


positive_or_none = integer(minimum=1, optional=True)
"""The validator of a count option that may be switched off with ``None`` (``max_files``,
``max_output_lines``...): an int of at least 1, or ``None``."""


def check_tool_names(
    names: Iterable[str | Tool],
    agent_config: AgentConfig,
    *,
    option: str,
    plugin: str | None = None,
) -> None:
    """Fail at ``create_agent`` when an option names tools the agent does not have.

    Call it from ``validate_agent`` (the kernel then names your plugin: leave ``plugin``
    out); a typo in a tool name would otherwise silently make the option apply to nothing.
    A ``Tool`` in ``names`` stands for its name.

    :raises ConfigError: e.g. ``plugin 'tool_retry': option 'tools' names a tool the agent
        does not have: 'serch' (did you mean 'search'?); the agent's tools are: fetch,
        search``.
    """
    known = sorted({tool.name for tool in agent_config.tools})
    given = (item if isinstance(item, str) else item.name for item in names)
    unknown = list(dict.fromkeys(name for name in given if name not in known))
    if not unknown:
        return
    described = [_convert.with_suggestion(name, known) for name in unknown]
    raise ConfigError(
        f"option {option!r} names "
        f"{'a tool' if len(unknown) == 1 else 'tools'} the agent does not have: "
        f"{', '.join(described)}; the agent's tools are: {', '.join(known) or 'none'}",
        plugin=plugin,
    )


def tool_names_field(*, kw_only: bool = False) -> Any:
    """An option naming some of the agent's tools (``tool_retry``'s ``tools``,
    ``tool_search``'s ``deferred``): ``None`` for every tool, or a list of names and
    ``Tool`` objects, kept as a tuple of names. Check the names against the agent with
    ``check_tool_names`` in ``validate_agent``."""
    return attrs.field(
        default=None, kw_only=kw_only, converter=_names_of_tools, validator=_check_tool_list
    )


def _names_of_tools(value: Any) -> Any:
    """A ``Tool`` stands for its name; a bare string is left for the validator to refuse."""
    if value is None or isinstance(value, str):
        return value
    from plait.tools import Tool

    return tuple(item.name if isinstance(item, Tool) else item for item in value)


def _check_tool_list(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or not all(isinstance(n, str) and n for n in value):
        raise FieldError(
            attribute.name,
            expected("a list of tool names or Tool objects, or None for every tool", value),
        )


# --------------------------------------------------------------------------- the quick path
#
# The converter structures an attrs class with a function it generates and compiles for
# that class: each given option through the converter's hook for its field's type, unknown
# and missing options refused, then ``cls(**converted)``. Compiling it is most of what
# building a middleware with options costs the first time, and an agent built once per
# request, or a short script, builds each class once. ``_built_quickly`` builds the same
# instance from the same hooks, found once per class and field; when this is not exact for
# a class (renamed fields, type variables, ``Annotated`` overrides), or anything goes
# wrong, ``structure_options`` takes the full path, which builds the instance or reports
# every problem in its words. Only the annotations of the options given are evaluated
# (``_convert.field_type``), where the full path evaluates every annotation of the class
# and its bases at once (``attrs.resolve_types``).

Hook = Callable[[Any], Any]

_Plan = tuple[dict[str, "attrs.Attribute[Any]"], frozenset[str], dict[str, Hook | None]]
"""A class's options (its init fields by name), the required ones, and the hook of each
option an agent has given, ``None`` for an option only the full path builds exactly (a
plain tuple: a class here would be generated at import)."""


_PLANS: weakref.WeakKeyDictionary[type, _Plan | None] = weakref.WeakKeyDictionary()


def _built_quickly(cls: type[T], options: Mapping[str, Any]) -> T | None:
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
