"""Writing middleware: the ``Middleware`` and ``RequestMiddleware`` base classes,
one-function middleware decorators, and ``can_jump_to``."""

from __future__ import annotations

import functools
import inspect
import typing
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, get_args, overload

import attrs

from plait._convert import (
    describe_type,
    expected,
    field_type,
    is_optional,
    same_literal,
    with_suggestion,
)
from plait.errors import ConfigError, FieldError
from plait.hookspecs import ALL_HOOKS, HOOKS, hookimpl
from plait.types import JumpTarget

if TYPE_CHECKING:
    from plait.types import ModelRequest, ModelResponse

__all__ = [
    "FunctionMiddleware",
    "Middleware",
    "RequestMiddleware",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
    "can_jump_to",
    "dynamic_prompt",
    "transform_model_stream",
    "wrap_model_call",
    "wrap_run",
    "wrap_tool_call",
]

F = TypeVar("F", bound=Callable[..., Any])
JUMPS_ATTR = "__plait_jumps__"
_TARGETS: tuple[str, ...] = get_args(JumpTarget)


class Middleware:
    """Base class for middleware: methods named after hooks are hooks, unmarked.

    Subclasses are usually ``@attrs.frozen`` (or ``plait.lazy.frozen``, the same with its
    ``__repr__``, ``__eq__`` and ``__hash__`` made on first use) so their fields are their
    options.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ALL_HOOKS:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method) and not hasattr(method, "plait_impl"):
                hookimpl(method)

    @classmethod
    def __attrs_init_subclass__(cls) -> None:
        """attrs calls this once it has made a subclass, its ``__init__`` in place (made
        in place, without slots, the class is not made again, so ``__init_subclass__``
        ran before attrs added it)."""
        init = cls.__dict__.get("__init__")
        if inspect.isfunction(init):
            cls.__init__ = _checked_init(cls, init)  # type: ignore[method-assign]


C = TypeVar("C", bound=type)


def check_arguments(cls: C) -> C:
    """Give a class's ``__init__`` the argument check every ``Middleware`` subclass made
    with attrs has (a class decorator, for option classes such as ``ClearToolUsesEdit``)."""
    setattr(cls, "__init__", _checked_init(cls, cls.__dict__["__init__"]))  # noqa: B010
    return cls


def _checked_init(cls: type, init: Callable[..., None]) -> Callable[..., None]:
    """An attrs ``__init__`` whose arguments are checked, so a wrong call reads like a
    wrong option in an agent file (``ConfigError``: ``SummarizationMiddleware: unknown
    option 'trigerr' (did you mean 'trigger'?); valid options: ...``) rather than Python's
    bare ``TypeError`` about ``__init__``.

    Python refuses such a call before the ``__init__`` runs, with a ``TypeError``: the
    arguments are looked at then, against its signature (a ``TypeError`` from a call
    whose arguments are right, a validator's, passes unchanged), so a class pays nothing
    for the check when it is made or called rightly."""

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError as exc:
            reworded = _validator_problem(exc)
            if reworded is not None:
                raise reworded from None
            problems = _argument_problems(cls, init, args, kwargs)
            if not problems:
                raise
            raise ConfigError(f"{cls.__name__}: {'; '.join(problems)}") from None
        except ValueError as exc:
            reworded = _validator_problem(exc)
            if reworded is None:
                raise
            raise reworded from None
        if args or kwargs:
            _check_closed(self, args, kwargs)

    # the class's own name even when the checked __init__ is a base class's
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _validator_problem(exc: Exception) -> FieldError | None:
    """attrs' own ``in_`` and ``instance_of`` validators' errors (a message, the field,
    what was allowed, the value) in an option's words: ``strategy: expected one of
    'block', 'redact', got 'bogus'`` rather than a tuple holding the field's repr."""
    if len(exc.args) != 4 or not isinstance(exc.args[1], attrs.Attribute):
        return None
    _, field, allowed, value = exc.args
    if isinstance(exc, ValueError) and isinstance(allowed, tuple | list | set | frozenset):
        what = "one of " + ", ".join(repr(option) for option in allowed)
    elif isinstance(exc, TypeError) and isinstance(allowed, type | tuple):
        types = allowed if isinstance(allowed, tuple) else (allowed,)
        what = " or ".join(describe_type(tp) for tp in types)
    else:
        return None
    return FieldError(field.name, expected(what, value))


def _check_closed(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Check the options a direct ``Cls(option=...)`` call gave whose type is a closed set
    (``_closed_hint``) against it, as an agent file's value is: an attrs class checks only
    what its validators say. Only the options given are looked at (a default is the
    plugin's own), each field's annotation once per class."""
    cls = type(obj)
    fields = _init_fields(cls)
    given = [f.name for f in fields if not f.kw_only][: len(args)]
    given += [f.name for f in fields if f.alias in kwargs]
    for name in given:
        wanted = _closed_hint(cls, name)
        if wanted is not None:
            value = getattr(obj, name)
            if not _allowed(value, wanted):
                raise FieldError(name, expected(describe_type(wanted), value))


_FIELDS: weakref.WeakKeyDictionary[type, list[attrs.Attribute[Any]]] = weakref.WeakKeyDictionary()
_CLOSED: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()


def _init_fields(cls: type) -> list[attrs.Attribute[Any]]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = [f for f in attrs.fields(cls) if f.init]
    return found


def _closed_hint(cls: type, name: str) -> Any:
    """The type of ``cls``'s field ``name`` if it is a closed set — a ``Literal``
    (``"5m" | "1h"``), ``bool``, or either or ``None`` — else ``None``; an annotation
    only a type checker can resolve counts as open."""
    known = _CLOSED.get(cls)
    if known is None:
        known = _CLOSED[cls] = {}
    try:
        return known[name]
    except KeyError:
        pass
    try:
        hint = field_type(cls, getattr(attrs.fields(cls), name))
    except Exception:  # a name only a type checker sees: open
        hint = None
    known[name] = hint if hint is not None and _is_closed(hint) else None
    return known[name]


def _is_closed(hint: Any) -> bool:
    members = get_args(hint) if is_optional(hint) else (hint,)
    return bool(members) and all(
        tp is bool or tp is type(None) or typing.get_origin(tp) is typing.Literal for tp in members
    )


def _allowed(value: Any, hint: Any) -> bool:
    for tp in get_args(hint) if is_optional(hint) else (hint,):
        if tp is type(None) and value is None:
            return True
        if tp is bool and isinstance(value, bool):
            return True
        if typing.get_origin(tp) is typing.Literal and any(
            same_literal(value, option) for option in get_args(tp)
        ):
            return True
    return False


def _argument_problems(
    cls: type, init: Callable[..., None], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[str]:
    """What is wrong with calling ``init`` with these arguments, in an option's words."""
    params = list(inspect.signature(init).parameters.values())[1:]
    variadic = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    names = [p.name for p in params if p.kind not in variadic]
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    required = [p.name for p in params if p.default is p.empty and p.kind not in variadic]
    open_keywords = any(p.kind is p.VAR_KEYWORD for p in params)
    open_positional = any(p.kind is p.VAR_POSITIONAL for p in params)
    problems: list[str] = []
    if len(args) > len(positional) and not open_positional:
        wanted = (
            f"at most {len(positional)} positional argument(s), the rest by name"
            if positional
            else f"options by name ({cls.__name__}(option=value, ...))"
        )
        problems.append(f"arguments: {expected(wanted, args)}")
    given = set(positional[: len(args)]) | set(kwargs)
    unknown = [] if open_keywords else [k for k in kwargs if k not in names]
    problems += [f"unknown option {with_suggestion(key, names)}" for key in unknown]
    if unknown:
        problems[-1] += f"; valid options: {', '.join(names) or 'none'}"
    problems += [f"missing required option {n!r}" for n in required if n not in given]
    return problems


class RequestMiddleware(Middleware):
    """Base class for middleware that only rewrites each model call's request (a section
    of the system prompt, provider options, trimmed messages): implement
    ``rewrite_request``, and both ``wrap_model_call`` and ``awrap_model_call`` pass the
    rewritten request on."""

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        """The request to send instead of ``request`` (``request.override(...)``)."""
        raise NotImplementedError

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self.rewrite_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        return await handler(self.rewrite_request(request))


def can_jump_to(*targets: str) -> Callable[[F], F]:
    """Declare where a hook may send the loop with ``Command(jump_to=...)``.

    Sets an attribute on the function (never wraps it); a jump not declared is an error
    naming the middleware and the hook.
    """
    for target in targets:
        if target not in _TARGETS:
            choices = "one of " + ", ".join(map(repr, _TARGETS))
            raise ValueError(f"can_jump_to: {expected(choices, target)}")

    def mark(func: F) -> F:
        setattr(func, JUMPS_ATTR, frozenset(targets))
        return func

    return mark


_declare_jumps = can_jump_to


class FunctionMiddleware:
    """A middleware made of one function by a hook decorator such as ``@plait.before_model``.

    Calling it calls the function, so it stays usable (and testable) as a function.
    """

    def __init__(self, hook: str, func: Callable[..., Any], name: str) -> None:
        # The function is reachable only under the hook's name: pluggy treats every
        # attribute holding a marked function as a hook implementation.
        self.hook = hook
        self.name = name
        hookimpl(func)
        setattr(self, hook, func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, self.hook)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self.hook} middleware {self.name!r}>"


def _decorator(hook: str) -> Any:
    async_hook = HOOKS[hook].twin

    @overload
    def decorate(func: Callable[..., Any], /) -> FunctionMiddleware: ...
    @overload
    def decorate(
        *, name: str | None = None, can_jump_to: tuple[str, ...] | None = None
    ) -> Callable[[Callable[..., Any]], FunctionMiddleware]: ...

    def decorate(
        func: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        can_jump_to: tuple[str, ...] | None = None,
    ) -> Any:
        def make(fn: Callable[..., Any]) -> FunctionMiddleware:
            if can_jump_to:
                _declare_jumps(*can_jump_to)(fn)
            is_async = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
            target = async_hook if (async_hook and is_async) else hook
            return FunctionMiddleware(target, fn, name or fn.__name__)

        return make if func is None else make(func)

    decorate.__name__ = hook
    decorate.__doc__ = f"Turn one function into a middleware implementing ``{hook}``" + (
        f" (``{async_hook}`` for an ``async def``)." if async_hook else "."
    )
    return decorate


before_agent = _decorator("before_agent")
before_model = _decorator("before_model")
after_model = _decorator("after_model")
after_agent = _decorator("after_agent")
wrap_run = _decorator("wrap_run")
wrap_model_call = _decorator("wrap_model_call")
wrap_tool_call = _decorator("wrap_tool_call")
transform_model_stream = _decorator("transform_model_stream")


def dynamic_prompt(func: Callable[..., Any]) -> FunctionMiddleware:
    """Make a middleware of a function that writes each model call's system prompt, as
    LangChain's ``@dynamic_prompt``: ``def prompt(request) -> str`` (the
    ``plait.ModelRequest``, with ``request.state`` and ``request.runtime``) or
    ``def prompt(state, runtime) -> str``; ``async def`` too. Its text replaces the
    agent's ``system_prompt`` for that call (``None`` keeps it)."""
    if not callable(func):
        raise TypeError(f"@dynamic_prompt: {expected('a function', func)}")
    takes = len(inspect.signature(func).parameters)
    if takes not in (1, 2):
        raise TypeError(
            f"@dynamic_prompt: {expected('a function of (request) or (state, runtime)', func)}"
        )

    def call(request: ModelRequest) -> Any:
        return func(request) if takes == 1 else func(request.state, request.runtime)

    def with_prompt(request: ModelRequest, text: Any) -> ModelRequest:
        if text is None:
            return request
        if not isinstance(text, str):
            raise TypeError(
                f"@dynamic_prompt {getattr(func, '__name__', func)!r}: "
                f"{expected('a string or None', text)}"
            )
        return request.override(system_prompt=text)

    name = getattr(func, "__name__", "dynamic_prompt")
    if inspect.iscoroutinefunction(func):

        async def awrap_model_call(
            request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
        ) -> ModelResponse:
            return await handler(with_prompt(request, await call(request)))

        return FunctionMiddleware("awrap_model_call", awrap_model_call, name)

    def wrap_model_call(
        request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(with_prompt(request, call(request)))

    return FunctionMiddleware("wrap_model_call", wrap_model_call, name)
