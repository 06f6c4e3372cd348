"""Registering an agent's middleware with pluggy, and collecting its hook implementations
in middleware order (pluggy validates; the kernel orders and calls)."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pluggy

from plait import hookspecs
from plait.errors import ConfigError
from plait.middleware import JUMPS_ATTR

_trace = logging.getLogger("plait.trace")


class _Registered:
    """What pluggy registers for a middleware: it compares by identity, so attrs value
    equality never makes two equal instances collide, and it holds the middleware's
    marked methods, bound, in its own ``__dict__`` — where every pluggy version looks
    (1.7 discovers hooks with ``inspect.getattr_static``, which sees no ``__getattr__``).
    """

    def __init__(self, name: str, target: object) -> None:
        self.__name = name
        for attr in dir(target):
            static = inspect.getattr_static(target, attr, None)
            func = getattr(static, "__func__", static)
            if callable(func) and getattr(func, "plait_impl", None) is not None:
                self.__dict__[attr] = getattr(target, attr)

    def __repr__(self) -> str:
        return f"<middleware {self.__name!r}>"


@attrs.frozen
class Impl:
    """One middleware's implementation of one hook, callable with the spec's arguments in
    order (``call``), whatever subset of them the implementation accepts."""

    middleware: str
    hook: str
    call: Callable[..., Any]
    is_async: bool
    jumps: frozenset[str]


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
    def call(*args: Any) -> Any:
        _trace.info("%s.%s(%s)", middleware, hook, ", ".join(map(_short, args)))
        result = impl_call(*args)
        _trace.info("%s.%s -> %s", middleware, hook, _short(result))
        return result

    return call


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


class Registry:
    """An agent's middleware, registered and validated; ``impls(hook)`` in list order."""

    def __init__(self, middleware: Sequence[tuple[str, object]]) -> None:
        self.names = [name for name, _ in middleware]
        pm = pluggy.PluginManager("plait")
        pm.add_hookspecs(hookspecs)
        registered: list[_Registered] = []
        for name, obj in middleware:
            _check_unmarked(name, obj)
            proxy = _Registered(name, obj)
            try:
                pm.register(proxy, name=name)
            except pluggy.PluginValidationError as exc:
                raise ConfigError(f"middleware {name!r}: {exc}") from None
            registered.append(proxy)
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise ConfigError(str(exc)) from None
        trace = bool(os.environ.get("PLAIT_TRACE"))
        self._impls: dict[str, list[Impl]] = {}
        for hook in hookspecs.ALL_HOOKS:
            by_plugin = {id(i.plugin): i for i in getattr(pm.hook, hook).get_hookimpls()}
            found = []
            spec_args = tuple(getattr(pm.hook, hook).spec.argnames)
            for name, proxy in zip(self.names, registered, strict=True):
                hookimpl = by_plugin.get(id(proxy))
                if hookimpl is None:
                    continue
                found.append(self._impl(name, hook, hookimpl, spec_args, trace))
            if hookspecs.HOOKS[hook].unwinds:
                found.reverse()
            self._impls[hook] = found

    def _impl(
        self,
        name: str,
        hook: str,
        hookimpl: pluggy.HookImpl,
        spec_args: tuple[str, ...],
        trace: bool,
    ) -> Impl:
        opts = hookimpl.opts
        for flag in ("tryfirst", "trylast", "wrapper", "hookwrapper"):
            if opts.get(flag):
                raise ConfigError(
                    f"middleware {name!r}: {hook} is marked {flag}=True; plait orders hooks by "
                    "the agent's middleware list, so tryfirst, trylast and wrapper are not allowed"
                )
        func = hookimpl.function
        is_async = inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)
        facts = hookspecs.HOOKS[hook]
        if facts.is_async and not is_async:
            raise ConfigError(f"middleware {name!r}: {hook} must be an async def")
        if facts.twin and not facts.is_async and is_async:
            raise ConfigError(
                f"middleware {name!r}: {hook} is an async def; name it {facts.twin} instead"
            )
        call = _caller(func, hookimpl.argnames, spec_args)
        if trace:
            call = _traced(call, name, hook)
        jumps: frozenset[str] = getattr(func, JUMPS_ATTR, frozenset())
        return Impl(name, hook, call, is_async, jumps)

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
