"""Registering an agent's middleware with pluggy, and collecting its hook implementations
in middleware order (pluggy validates; the kernel orders and calls).

A middleware class whose hooks are plain methods, marked without options, of the names
and arguments of plait's specs is read without pluggy (``_plain_hooks``): pluggy could
only accept it, and finds the same implementations, after reading every spec and every
method's signature with ``inspect`` — most of what the first agent of a process spends
on its middleware's hooks. Anything else is registered with pluggy, which accepts it or
says what is wrong."""

from __future__ import annotations

import functools
import inspect
import os
import threading
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import pluggy

from plait import hookspecs
from plait.errors import ConfigError
from plait.middleware import JUMPS_ATTR


class _Registered:
    """What pluggy registers for a middleware: it compares by identity, so attrs value
    equality never makes two equal instances collide, and it holds the middleware's
    marked methods, bound, in its own ``__dict__`` — where every pluggy version looks
    (1.7 discovers hooks with ``inspect.getattr_static``, which sees no ``__getattr__``).
    """

    def __init__(self, name: str, target: object) -> None:
        self.__name = name
        for attr, static in _static_attributes(target).items():
            func = getattr(static, "__func__", static)
            if callable(func) and getattr(func, "plait_impl", None) is not None:
                self.__dict__[attr] = getattr(target, attr)

    def __repr__(self) -> str:
        return f"<middleware {self.__name!r}>"

    def __dir__(self) -> list[str]:
        """Only the marked methods: pluggy looks at each name ``dir()`` gives (an
        ordinary object's thirty-odd dunders would each be fetched and rejected)."""
        return [attr for attr in self.__dict__ if attr != "_Registered__name"]


def _static_attributes(target: object) -> dict[str, object]:
    """Every attribute of ``target`` as ``inspect.getattr_static`` would find it (the
    instance's own before its class's, a subclass's before its base's, a class's data
    descriptor before the instance's value), read from the dictionaries at once rather
    than one ``getattr_static`` per name of ``dir()``. ``object``'s own are left out:
    builtins, which cannot carry a hook's mark, and a third of what a middleware has."""
    found: dict[str, object] = {}
    for klass in reversed(type(target).__mro__[:-1]):
        found.update(vars(klass))
    own = getattr(target, "__dict__", None)
    if isinstance(own, dict):
        for attr, value in own.items():
            if not _is_data_descriptor(found.get(attr)):
                found[attr] = value
    return found


_ASYNC_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_MARKS_COROUTINES = hasattr(inspect, "markcoroutinefunction")
"""Python 3.12+: a plain function can be marked a coroutine function without the flag."""


def _is_async(func: Callable[..., Any]) -> bool:
    """``inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)``, read
    from the code of a plain function or method (what every middleware's hooks are) at a
    fraction of inspect's cost."""
    plain = getattr(func, "__func__", func)
    if type(plain) is types.FunctionType and not _MARKS_COROUTINES:
        return bool(plain.__code__.co_flags & _ASYNC_FLAGS)
    return inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)


def _is_data_descriptor(value: object) -> bool:
    kind = type(value)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


class Impl:
    """One middleware's implementation of one hook, callable with the spec's arguments in
    order (``call``), whatever subset of them the implementation accepts; ``owner`` is the
    middleware object, for naming its plugin in the errors it raises. A plain class:
    nothing compares or shows one, and at import a plain class is made in a few
    microseconds (an attrs class compiles its methods, a named tuple each field's
    annotation)."""

    __slots__ = ("call", "hook", "is_async", "jumps", "middleware", "owner")

    def __init__(
        self,
        middleware: str,
        hook: str,
        call: Callable[..., Any],
        is_async: bool,
        jumps: frozenset[str],
        owner: object,
    ) -> None:
        self.middleware = middleware
        self.hook = hook
        self.call = call
        self.is_async = is_async
        self.jumps = jumps
        self.owner = owner


def _caller(func: Callable[..., Any], accepted: Sequence[str], spec: tuple[str, ...]) -> Any:
    """``func`` callable with the spec's arguments in order, whatever subset it takes."""
    if tuple(accepted) == spec:
        return func
    wanted = [(name, i) for i, name in enumerate(spec) if name in accepted]
    if not wanted:
        return lambda *args: func()
    if len(wanted) == 1:
        ((name, index),) = wanted
        return lambda *args: func(**{name: args[index]})

    def call(*args: Any) -> Any:
        return func(**{name: args[i] for name, i in wanted})

    return call


def _traced(impl_call: Callable[..., Any], middleware: str, hook: str) -> Callable[..., Any]:
    import logging  # here: only PLAIT_TRACE needs it

    _trace = logging.getLogger("plait.trace")

    def call(*args: Any) -> Any:
        _trace.info("%s.%s(%s)", middleware, hook, ", ".join(map(_short, args)))
        result = impl_call(*args)
        _trace.info("%s.%s -> %s", middleware, hook, _short(result))
        return result

    return call


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


class _Found(NamedTuple):
    """One hook implementation a middleware class provides: the attribute that holds it,
    the hook it implements, its pluggy options and the arguments it accepts. A named tuple
    (not a plain class, as ``Impl`` is): what is read from a class's methods without pluggy
    is compared, field by field, with what pluggy finds."""

    attr: str
    hook: str
    opts: dict[str, Any]
    argnames: tuple[str, ...]


_BY_CLASS: weakref.WeakKeyDictionary[type, tuple[_Found, ...]] = weakref.WeakKeyDictionary()
"""What pluggy found and validated in each middleware class, the first time an agent used
it: later agents (one per request, say) bind the same methods without pluggy's signature
inspection of every attribute."""


@functools.cache
def _checker() -> pluggy.PluginManager:
    """The plugin manager that validates middleware against plait's hook specs: made
    once per process (reading the specs is most of pluggy's cost), each middleware
    registered on it only while it is checked."""
    pm = pluggy.PluginManager("plait")
    pm.add_hookspecs(hookspecs)
    return pm


_CHECKING = threading.Lock()
"""Agents built on several threads check their middleware one at a time on the shared
plugin manager."""


@functools.cache
def _spec_args() -> dict[str, tuple[str, ...]]:
    """Each hook's arguments in order, as its spec declares them (its positional
    parameters without a default, as pluggy reads a spec; ``test_registry`` checks them
    against pluggy's)."""
    return {name: _positional(getattr(hookspecs, name)) for name in hookspecs.ALL_HOOKS}


def _positional(func: types.FunctionType) -> tuple[str, ...]:
    """A plain function's positional parameters that have no default, from its code."""
    code = func.__code__
    names = code.co_varnames[: code.co_argcount]
    defaults = len(func.__defaults__ or ())
    return names[: len(names) - defaults]


_PLAIN_OPTS = {
    "wrapper": False,
    "hookwrapper": False,
    "optionalhook": False,
    "tryfirst": False,
    "trylast": False,
    "specname": None,
}
"""The options of a method marked ``@hookimpl`` with no arguments (as
``plait.Middleware`` marks methods named after hooks)."""

_SIGNATURE_ATTRS = ("__wrapped__", "__signature__", "__partialmethod__")
"""What makes ``inspect.signature`` read a function other than by its code."""


@functools.cache
def _plain_specs() -> frozenset[str]:
    """The hooks whose spec adds no check of its own (historic, warnings on use)."""
    plain = set()
    for name in hookspecs.ALL_HOOKS:
        opts = getattr(getattr(hookspecs, name), "plait_spec", None) or {}
        if not (opts.get("historic") or opts.get("warn_on_impl") or opts.get("warn_on_impl_args")):
            plain.add(name)
    return frozenset(plain)


def _plain_hooks(obj: object) -> tuple[_Found, ...] | None:
    """What ``_validated`` finds in ``obj``, when pluggy could only accept it: every
    marked attribute a method of its class (a plain function), marked with no options,
    named after a spec without checks of its own, its arguments (read from its code, as
    ``inspect.signature`` would read them) among the spec's. ``None`` otherwise."""
    cls = type(obj)
    if cls.__getattribute__ is not object.__getattribute__:
        return None  # attributes may not be what the class dictionaries say
    spec_args = _spec_args()
    plain = _plain_specs()
    by_hook: dict[str, _Found] = {}
    for attr, static in _static_attributes(obj).items():
        func = getattr(static, "__func__", static)
        if not callable(func):
            continue
        opts = getattr(func, "plait_impl", None)
        if opts is None:
            continue
        if (
            type(static) is not types.FunctionType
            or opts != _PLAIN_OPTS
            or attr not in plain
            or any(name in static.__dict__ for name in _SIGNATURE_ATTRS)
        ):
            return None
        args = _positional(static)[1:]  # bound to the instance: pluggy leaves self out
        if not set(args) <= set(spec_args[attr]):
            return None  # pluggy says which argument no spec has
        by_hook[attr] = _Found(attr, attr, dict(opts), args)
    return tuple(by_hook[hook] for hook in hookspecs.ALL_HOOKS if hook in by_hook)


def _own_hooks(obj: object) -> bool:
    """Whether the instance itself holds what may be a hook its class does not define: a
    callable marked as one, or named after one (``_check_unmarked`` refuses it unmarked).
    Another callable it holds, an option's function, is no hook to pluggy either."""
    try:
        own = vars(obj)
    except TypeError:  # slotted: every method is the class's
        return False
    return any(
        callable(value) and (attr in hookspecs.HOOKS or hasattr(value, "plait_impl"))
        for attr, value in own.items()
    )


def _validated(name: str, obj: object) -> tuple[_Found, ...]:
    """``obj``'s hook implementations, registered with pluggy alone to validate them
    (unknown hooks, arguments no spec has, unmarked methods named after hooks)."""
    _check_unmarked(name, obj)
    proxy = _Registered(name, obj)
    with _CHECKING:
        pm = _checker()
        try:
            try:
                pm.register(proxy, name=name)
            except pluggy.PluginValidationError as exc:
                raise ConfigError(f"middleware {name!r}: {exc}") from None
            try:
                pm.check_pending()
            except pluggy.PluginValidationError as exc:
                raise ConfigError(str(exc)) from None
            attr_of = {id(value): attr for attr, value in vars(proxy).items()}
            found = []
            for hook in hookspecs.ALL_HOOKS:
                for hookimpl in getattr(pm.hook, hook).get_hookimpls():
                    attr = attr_of[id(hookimpl.function)]
                    opts = dict(hookimpl.opts)
                    found.append(_Found(attr, hook, opts, tuple(hookimpl.argnames)))
        finally:
            # a refused registration may be half done: unregister takes back what was
            if pm.is_registered(proxy):
                pm.unregister(proxy)
    return tuple(found)


def _hooks_of(name: str, obj: object) -> tuple[_Found, ...]:
    cls = type(obj)
    if _own_hooks(obj):
        return _validated(name, obj)
    found = _BY_CLASS.get(cls)
    if found is None:
        plain = _plain_hooks(obj)
        if plain is None:
            found = _validated(name, obj)
        else:
            _check_unmarked(name, obj)
            found = plain
        _BY_CLASS[cls] = found
    return found


class Registry:
    """An agent's middleware, registered and validated; ``impls(hook)`` in list order."""

    def __init__(self, middleware: Sequence[tuple[str, object]]) -> None:
        self.names = [name for name, _ in middleware]
        trace = bool(os.environ.get("PLAIT_TRACE"))
        spec_args = _spec_args()
        by_hook: dict[str, list[Impl]] = {hook: [] for hook in hookspecs.ALL_HOOKS}
        for name, obj in middleware:
            for found in _hooks_of(name, obj):
                func = getattr(obj, found.attr)
                impl = self._impl(name, obj, found, func, spec_args[found.hook], trace)
                by_hook[found.hook].append(impl)
        for hook, found_impls in by_hook.items():
            if hookspecs.HOOKS[hook].unwinds:
                found_impls.reverse()
        self._impls = by_hook

    def _impl(
        self,
        name: str,
        owner: object,
        found: _Found,
        func: Callable[..., Any],
        spec_args: tuple[str, ...],
        trace: bool,
    ) -> Impl:
        hook, opts = found.hook, found.opts
        for flag in ("tryfirst", "trylast", "wrapper", "hookwrapper"):
            if opts.get(flag):
                raise ConfigError(
                    f"middleware {name!r}: {hook} is marked {flag}=True; plait orders hooks by "
                    "the agent's middleware list, so tryfirst, trylast and wrapper are not allowed"
                )
        is_async = _is_async(func)
        facts = hookspecs.HOOKS[hook]
        if facts.is_async and not is_async:
            raise ConfigError(f"middleware {name!r}: {hook} must be an async def")
        if facts.twin and not facts.is_async and is_async:
            raise ConfigError(
                f"middleware {name!r}: {hook} is an async def; name it {facts.twin} instead"
            )
        call = _caller(func, found.argnames, spec_args)
        if trace:
            call = _traced(call, name, hook)
        jumps: frozenset[str] = getattr(func, JUMPS_ATTR, frozenset())
        return Impl(name, hook, call, is_async, jumps, owner)

    def impls(self, hook: str) -> list[Impl]:
        return self._impls[hook]

    def pairs(self, sync_hook: str, async_hook: str) -> list[tuple[str, Impl | None, Impl | None]]:
        """Per middleware (list order) its sync and async implementation of a wrap hook."""
        sync = {i.middleware: i for i in self._impls[sync_hook]}
        asyn = {i.middleware: i for i in self._impls[async_hook]}
        return [
            (name, sync.get(name), asyn.get(name))
            for name in self.names
            if name in sync or name in asyn
        ]


def _check_unmarked(name: str, obj: object) -> None:
    """A method named after a hook but not marked would be silently ignored: refuse it."""
    for hook in hookspecs.ALL_HOOKS:
        method = getattr(obj, hook, None)
        if method is None or not callable(method):
            continue
        if getattr(method, "plait_impl", None) is None:
            raise ConfigError(
                f"middleware {name!r} has a method {hook}() that is not marked "
                "@plait.hookimpl; mark it, or subclass plait.Middleware (which marks "
                "methods named after hooks)"
            )
