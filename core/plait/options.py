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

from collections.abc import Iterable, Mapping
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
from plait._option_plan import built_quickly
from plait.errors import ConfigError
from plait.lazy import lazy_exports
from plait.middleware import check_arguments

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
    quick = built_quickly(cls, options)
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
