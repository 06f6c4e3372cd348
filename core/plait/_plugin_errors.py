"""Naming the plugin in its errors: a plugin raises the problem, the kernel says whose it is.

A plugin raises ``ConfigError(problem)`` (``option=`` for one option) or ``FieldError(option,
problem)`` and never writes its own name. Wherever the kernel calls a plugin's code —
building it from its options, ``state_fields``/``agent_tools``/``validate_agent`` at build
time, node hooks and wrap hooks at run time — such an error gets ``plugin 'x':`` once, ``x``
being the name the agent enabled the plugin under (its entry-point name, or for an instance
passed directly the entry-point name of its class).

A wrap hook's ``handler`` runs the rest of the chain, so an error escaping a wrap hook may
be an inner one's: each layer names what its own plugin raised, and the innermost call (the
model, the tool, the run itself) marks what escapes it as nobody's, so the layers around
let it pass. Only ``ConfigError`` and ``FieldError`` are named: other errors (limits,
provider errors, a tool's failure) are outcomes whose text users and models read as is.
"""

from __future__ import annotations

import re
import sys
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from plait.errors import ConfigError, FieldError

NAMEABLE = (ConfigError, FieldError)
"""What the kernel names the plugin in."""

_NOBODYS = "_plait_not_a_plugins"
_REPEAT = r"#\d+$"  # compiled (and cached by re) when an error is first named
_BY_CLASS: weakref.WeakKeyDictionary[type, str | None] = weakref.WeakKeyDictionary()


def plugin_name(name: str, owner: object) -> str | None:
    """The plugin name to show for the middleware registered as ``name`` (``tool_retry#2``
    is ``tool_retry``): the entry-point name it was built from, or for an instance passed
    directly the entry-point name of its class; ``None`` when it is no plugin (the user's
    own middleware, or what ``create_agent`` adds for ``context_schema=`` or ``replay=``,
    which word their errors themselves)."""
    from plait import _entrypoints
    from plait.middleware import FunctionMiddleware

    if isinstance(owner, FunctionMiddleware):
        return None
    base = re.sub(_REPEAT, "", name)
    if base != type(owner).__name__:
        return base if base in _entrypoints.available("plait.middleware") else None
    cls = type(owner)
    if cls not in _BY_CLASS:
        _BY_CLASS[cls] = _entry_point_of(cls)
    return _BY_CLASS[cls]


def _entry_point_of(cls: type) -> str | None:
    """The ``plait.middleware`` entry point naming ``cls``, looking only at entry points
    whose module is imported already (the class's own distribution), so no plugin is
    imported to word an error."""
    from plait import _entrypoints

    for name, point in sorted(_entrypoints.available("plait.middleware").items()):
        module, _, attr = point.value.partition("[")[0].replace(" ", "").partition(":")
        if module in sys.modules and attr:
            try:
                if point.load() is cls:
                    return name
            except Exception:  # another plugin's broken entry point is not this error's
                continue
    return None


def named(exc: BaseException, name: str, owner: object) -> BaseException | None:
    """``exc`` worded as the plugin ``name``'s: a ``ConfigError`` named in place (return
    it: re-raise as is), a ``FieldError`` as a new ``ConfigError`` (raise it from ``exc``);
    ``None`` when ``exc`` is not this plugin's to name (already named, or nobody's)."""
    if getattr(exc, _NOBODYS, False) or (isinstance(exc, ConfigError) and exc.plugin):
        return None
    plugin = plugin_name(name, owner)
    if plugin is None:
        return None
    if isinstance(exc, ConfigError):
        exc.in_plugin(plugin)
        return exc
    if isinstance(exc, FieldError):
        return ConfigError(exc.message, option=exc.field, plugin=plugin)
    return None


def raise_named(exc: BaseException, name: str, owner: object) -> NoReturn:
    """Re-raise ``exc`` (being handled) worded as the plugin ``name``'s when it is its."""
    error = named(exc, name, owner)
    if error is None or error is exc:
        raise exc
    raise error from exc


class PluginCode:
    """``with PluginCode(name, owner):`` around a call of a plugin's own code at build time."""

    __slots__ = ("name", "owner")

    def __init__(self, name: str, owner: object) -> None:
        self.name = name
        self.owner = owner

    def __enter__(self) -> None:
        return None

    def __exit__(self, tp: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, NAMEABLE):
            error = named(exc, self.name, self.owner)
            if error is not None and error is not exc:
                raise error from exc


def nobodys(exc: BaseException) -> None:
    """Mark an error escaping the innermost call of a chain: no wrap hook raised it."""
    if isinstance(exc, NAMEABLE) and not (isinstance(exc, ConfigError) and exc.plugin):
        setattr(exc, _NOBODYS, True)


def innermost_sync(call: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``call`` marking what escapes it as nobody's (see ``nobodys``)."""

    def inner(request: Any) -> Any:
        try:
            return call(request)
        except NAMEABLE as exc:
            nobodys(exc)
            raise

    return inner


def innermost_async(call: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    """``call`` marking what escapes it as nobody's (see ``nobodys``)."""

    async def inner(request: Any) -> Any:
        try:
            return await call(request)
        except NAMEABLE as exc:
            nobodys(exc)
            raise

    return inner
