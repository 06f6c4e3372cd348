"""Names a package exports but imports only when first used (PEP 562).

A plugin's package is imported whenever ``plait`` reads one of its entry points — the CLI
does for every command on every call — so a package whose names pull in a heavy SDK
(Starlette, DBOS, MCP, pydantic-evals) exports them lazily::

    from plait.lazy import lazy_exports

    _EXPORTS = {"Worker": "plait_dbos._worker", "submit": "plait_dbos._submit"}
    __all__ = sorted(_EXPORTS)
    __getattr__ = lazy_exports(__name__, _EXPORTS)

with the same names imported under ``if TYPE_CHECKING:`` for type checkers.

``frozen`` and ``define`` are ``attrs.frozen`` and ``attrs.define`` with a class's
``__repr__``, ``__eq__`` and ``__hash__`` made by attrs when first used rather than when
the class is made: most of what an attrs class costs at import is compiling them, and a
program calls few. plait's own classes use them; a plugin's option class can too::

    from plait.lazy import frozen

    @frozen(kw_only=True)
    class ShoutMiddleware(plait.Middleware):
        suffix: str = "!"

Two more differences make such a class cheaper to make, and change nothing it does:

- the code attrs compiles for it is kept in plait's cache folder and read back by the
  next process (``plait._attrs_compiled``), as Python keeps a module's bytecode;
- a class whose instances have a ``__dict__`` anyway (a base without ``__slots__``, as
  ``plait.Middleware``) is made without slots unless ``slots=`` is given: they would save
  no memory there, and cost attrs a second class.

Type checkers see attrs' own decorators (mypy's attrs plugin applies as usual).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from plait._attrs_compiled import making

__all__ = ["define", "frozen", "lazy_exports"]


def lazy_exports(
    module: str, names: Mapping[str, str], *, deprecated: Mapping[str, tuple[str, str]] = {}
) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module``: a name of ``names`` is imported from the module
    it maps to on first use and kept in ``module``'s namespace (later uses are plain
    lookups); any other name is an ``AttributeError``, as for an ordinary module.

    ``deprecated`` keeps names that left ``module``'s API importable for one release: each
    maps to ``("source:attribute", "what to use instead")``, and every use warns with a
    ``DeprecationWarning`` saying so (the name is never kept, so each use warns)::

        __getattr__ = lazy_exports(
            __name__, {}, deprecated={"words": (f"{__name__}:_words", "nothing: it is internal")}
        )
    """

    def __getattr__(name: str) -> Any:
        if name in deprecated:
            where, instead = deprecated[name]
            warnings.warn(
                f"{module}.{name} is deprecated and will be removed in the next release: {instead}",
                DeprecationWarning,
                stacklevel=2,
            )
            source, _, attribute = where.partition(":")
            return getattr(importlib.import_module(source), attribute)
        try:
            source = names[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[module], name, value)
        return value

    return __getattr__


# --- attrs classes whose __repr__, __eq__ and __hash__ are made on first use -------------
#
# attrs compiles each class's methods from generated source when the class is made; on
# plait's import that compiling is most of what its ~25 attrs classes cost, and
# __repr__ (~0.19 ms a class), __eq__ and __hash__ are two thirds of it, while a run
# calls few of them or none. ``frozen`` and ``define`` below are attrs' own, with those
# three methods left to attrs to make the first time one is looked up, on the class: the
# same methods (attrs makes them, for the same fields and options), later.

_FIRST_USE = {"repr": ("__repr__",), "eq": ("__eq__", "__ne__", "__hash__")}
"""Methods made together, by what attrs calls the option that makes them."""

_KEEPS_ATTRS_WAY = frozenset(
    {"these", "order", "hash", "unsafe_hash", "cache_hash", "str", "auto_detect"}
)
"""Options with which a class is left to attrs as it is (rare, and each changes which of
the methods attrs makes, or how)."""


class _MadeOnFirstUse:
    """Stands in a class for one method attrs makes when it is first looked up (a special
    method is looked up on the type, through this descriptor): attrs then makes the
    methods of its kind, on a stand-in class of the same fields, and they replace it."""

    __slots__ = ("frozen", "kind", "name", "owner")

    def __init__(self, owner: type, kind: str, name: str, *, frozen: bool) -> None:
        self.owner = owner
        self.kind = kind
        self.name = name
        self.frozen = frozen

    def __get__(self, instance: object, cls: type | None = None) -> Any:
        made = _attrs_methods(self.owner, self.kind, frozen=self.frozen)
        for name in _FIRST_USE[self.kind]:
            setattr(self.owner, name, made[name])
        method = made[self.name]
        if instance is None or method is None:
            return method
        return method.__get__(instance, cls)


_STAND_IN = "plait.lazy.<stand-in>"
"""The module attrs is told the stand-in class is of: a name no module is imported as."""


def _attrs_methods(cls: type, kind: str, *, frozen: bool) -> dict[str, Any]:
    """The methods of ``kind`` attrs makes for ``cls``: attrs' own, made for a stand-in
    of the same name and fields (their options as ``cls``'s), then given ``cls``'s module.

    The stand-in's module is none that is imported: attrs compiles the methods of one
    class in one namespace, with an ``__init__``'s module globals over the others', and a
    module whose globals shadow a name a ``__repr__`` reads (``_compat``) would break it.
    """
    import attrs

    these = {
        field.name: attrs.field(
            init=field.init,
            repr=field.repr,
            eq=field.eq_key or field.eq,
            hash=field.hash,
        )
        for field in attrs.fields(cls)
    }
    stand_in = type(cls.__name__, (), {"__module__": _STAND_IN, "__qualname__": cls.__qualname__})
    with making():
        made = attrs.define(
            stand_in,
            these=these,
            init=False,
            slots=False,
            frozen=frozen,
            repr=kind == "repr",
            eq=kind == "eq",
            match_args=False,
            weakref_slot=False,
            getstate_setstate=False,
        )
    methods = {name: made.__dict__.get(name) for name in _FIRST_USE[kind]}
    for method in methods.values():
        if method is not None:
            method.__module__ = cls.__module__
    return methods


def _methods_later(maker: str, *, frozen: bool) -> Callable[..., Any]:
    """``attrs.<maker>`` (``define`` or ``frozen``) with ``__repr__``, ``__eq__`` and
    ``__hash__`` made on first use, where attrs would make them at once. attrs is imported
    with the first class (``plait.lazy`` is on the CLI's path, which imports none)."""

    def decorator(maybe_cls: type | None = None, /, **options: Any) -> Any:
        def wrap(cls: type) -> type:
            import attrs

            make = getattr(attrs, maker)
            given = options
            if "slots" not in given and _has_dict(cls):
                given = {**given, "slots": False}
            later = _deferrable(cls, given)
            with making():
                if not later:
                    return make(cls, **given)  # type: ignore[no-any-return]
                built: type = make(cls, **{**given, **dict.fromkeys(later, False)})
            is_frozen = given.get("frozen", frozen)
            for kind in later:
                for name in _FIRST_USE[kind]:
                    if name == "__hash__" and not is_frozen:
                        built.__hash__ = None  # type: ignore[assignment]  # attrs: unhashable
                    else:
                        setattr(built, name, _MadeOnFirstUse(built, kind, name, frozen=is_frozen))
            return built

        return wrap if maybe_cls is None else wrap(maybe_cls)

    decorator.__name__ = decorator.__qualname__ = maker
    decorator.__doc__ = (
        f"``attrs.{maker}``, with the same options and the same methods; ``__repr__``, "
        "``__eq__`` and ``__hash__`` are made by attrs when first looked up (at once when "
        "the class writes its own, or is given one of the options "
        f"{', '.join(sorted(_KEEPS_ATTRS_WAY))}). The code attrs compiles for the class "
        "is kept in plait's cache folder and read back by the next process, as Python "
        "keeps a module's bytecode (``PLAIT_NO_CACHE=1``: compiled in each process). A "
        "class whose base gives its instances a ``__dict__`` (``plait.Middleware``) is "
        "made without slots unless ``slots=`` is given: there they save no memory."
    )
    return decorator


def _has_dict(cls: type) -> bool:
    """Whether ``cls``'s instances have a ``__dict__`` whatever attrs does: a base other
    than ``object`` without ``__slots__`` of its own gives them one (``plait.Middleware``
    does), and then slots would save no memory, only cost attrs a second class."""
    return any("__slots__" not in vars(base) for base in cls.__mro__[1:-1])


def _deferrable(cls: type, options: Mapping[str, Any]) -> list[str]:
    """Which of ``repr`` and ``eq`` attrs would make for ``cls`` at once that can wait."""
    if _KEEPS_ATTRS_WAY & options.keys():
        return []
    own = cls.__dict__
    later = []
    if options.get("repr", True) is not False and "__repr__" not in own:
        later.append("repr")
    if options.get("eq", True) is not False and not {"__eq__", "__ne__", "__hash__"} & own.keys():
        later.append("eq")
    return later


if TYPE_CHECKING:
    from attrs import define as define
    from attrs import frozen as frozen
else:
    define = _methods_later("define", frozen=False)
    frozen = _methods_later("frozen", frozen=True)
