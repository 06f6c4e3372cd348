"""Tools: what the model may call. ``@tool`` turns a typed, documented function into a ``Tool``.

A ``Tool`` is handed a ``ToolRuntime`` holding the run's ``Runtime``, which lists the
tools: the three name each other, so they are declared here together (``plait.types``
exports the two runtimes beside the other objects hooks receive).

The function's type hints become the JSON schema the model sees, its docstring the
description (and, from a Google-style ``Args:`` section, each parameter's description).
Before a call, ``Tool.prepare`` validates the model's arguments with the same strict
converter as middleware options, so a bad argument becomes a precise, model-readable
``ToolArgumentError`` instead of a crash inside the tool.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, overload

import attrs
import cattrs
from typing_extensions import TypeVar

from plait import _convert, schema
from plait.errors import ConfigError, PlaitError
from plait.lazy import frozen
from plait.messages import ToolCall, ToolMessage

if TYPE_CHECKING:
    from plait.models.base import ChatModel
    from plait.store import Store

__all__ = [
    "Runtime",
    "Tool",
    "ToolArgumentError",
    "ToolRuntime",
    "error_text",
    "error_update",
    "raised_by_tool",
    "set_error_text",
    "set_error_update",
    "tool",
    "tool_error_message",
]

_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}

ContextT = TypeVar("ContextT", default=Any)
"""The type of a run's ``context`` (``create_agent(context_schema=...)``): ``Runtime[C]``
and ``ToolRuntime[C]`` type ``runtime.context`` as ``C``; unparameterized it is ``Any``."""


class _Omitted:
    """The default of an argument the model left out: the function's own default applies."""

    def __repr__(self) -> str:
        return "<omitted>"


_OMITTED = _Omitted()


class ToolArgumentError(PlaitError):
    """The model called a tool with arguments that do not fit its parameters.

    The text is written for the model to read and correct its call: each bad argument with
    what was expected and what it sent, the missing and the unknown ones, joined by "; "
    (the kernel adds the tool's name around it).
    """

    def __init__(self, tool_name: str, problems: Sequence[_convert.Problem]) -> None:
        self.tool_name = tool_name
        self.problems = tuple(problems)
        super().__init__("; ".join(_describe_problem(p) for p in self.problems))


def _describe_problem(problem: _convert.Problem) -> str:
    if problem.kind == "missing":
        return f"missing required argument {problem.path!r}"
    if problem.kind == "unknown" and not problem.path:
        names = ", ".join(repr(k) for k in problem.keys)
        plural = "s" if len(problem.keys) > 1 else ""
        valid = ", ".join(problem.valid) if problem.valid else "none"
        return f"unknown argument{plural} {names} (this tool takes: {valid})"
    if not problem.path:
        return f"arguments: {problem.message}"
    return f"argument {problem.path!r}: {problem.message}"


def _parameters_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)


@frozen(eq=False)
class Tool:
    """A tool the model may call.

    ``parameters`` is the JSON schema of the arguments (an object schema). A tool whose
    ``func`` is ``None`` is executed by the provider (a server tool described by
    ``provider_options``); the kernel never runs it. Tools compare by identity, so they can
    be kept in sets and dict keys.
    """

    name: str = attrs.field(
        validator=attrs.validators.and_(
            attrs.validators.instance_of(str), attrs.validators.min_len(1)
        )
    )
    description: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: dict(_EMPTY_PARAMETERS),
        converter=_parameters_dict,
        validator=attrs.validators.instance_of(dict),
    )
    func: Callable[..., Any] | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.is_callable())
    )
    provider_options: dict[str, Any] = attrs.field(factory=dict, converter=_parameters_dict)
    timeout: float | None = attrs.field(default=None, kw_only=True)
    """Seconds a call may take; past it the call is abandoned and answered with an error
    (``None``: the agent's ``tool_timeout``, if any)."""
    run_in_thread: bool = attrs.field(default=True, kw_only=True)
    """For a sync ``func``: whether the kernel may move a call to a worker thread (the
    default), so that a function that blocks never blocks the event loop of ``ainvoke`` and
    ``astream``, and a ``timeout`` can abandon it. ``False`` calls it directly in the thread
    running the agent loop — the event loop's thread under ``ainvoke``/``astream``, the
    caller's under ``invoke`` — which saves a thread hop per call: for cheap functions that
    never block, and for objects tied to the thread that made them (a ``sqlite3``
    connection, tkinter, COM). Such a call cannot be abandoned, so it takes no ``timeout``
    (nor the agent's ``tool_timeout``). No effect on an async ``func``, which always runs
    on the event loop."""
    _arguments: _Arguments | None = attrs.field(default=None, alias="_arguments", repr=False)
    """The attrs class of the function's parameters (``None``: schema checks only)."""
    _runtime_parameter: str | None = attrs.field(
        default=None, alias="runtime_parameter", repr=False, kw_only=True
    )
    """The keyword argument that receives the ``ToolRuntime`` (hidden from the model): how a
    tool built from a JSON schema, not a function (an MCP server's), gets its call's id,
    state and stream writer."""

    @timeout.validator
    def _check_timeout(self, _: Any, value: float | None) -> None:
        problem = _convert.number(above=0, optional=True).problem(value)
        if problem is not None:
            raise ValueError(f"tool {self.name!r}: timeout: {problem}")

    @run_in_thread.validator
    def _check_run_in_thread(self, _: Any, value: bool) -> None:
        if not isinstance(value, bool):
            raise ValueError(
                f"tool {self.name!r}: run_in_thread: {_convert.expected('a bool', value)}"
            )
        if not value and self.timeout is not None and self.func is not None and not self.is_async:
            wanted = _convert.expected(
                "None with run_in_thread=False",
                self.timeout,
                "a sync function called in the agent loop's thread cannot be abandoned",
            )
            raise ConfigError(f"tool {self.name!r}: timeout: {wanted}")

    @functools.cached_property
    def is_async(self) -> bool:
        """Whether calling ``func`` returns an awaitable the kernel must await."""
        func = self.func
        return func is not None and (
            inspect.iscoroutinefunction(func)
            or inspect.iscoroutinefunction(getattr(func, "__call__", None))  # noqa: B004
        )

    @property
    def runtime_parameter(self) -> str | None:
        """The name of the parameter that receives the ``ToolRuntime``, if any."""
        return self._runtime_parameter

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        provider_options: Mapping[str, Any] | None = None,
        parse_docstring: bool = True,
        timeout: float | None = None,
        run_in_thread: bool = True,
    ) -> Tool:
        """Build a tool from a typed function (sync or async).

        :param name: defaults to the function's name.
        :param description: defaults to the docstring without its ``Args:`` section (the
            whole docstring when ``parse_docstring`` is false).
        :param parse_docstring: read per-parameter descriptions from a Google-style
            ``Args:`` section.
        :param timeout: seconds a call may take (see ``Tool.timeout``).
        :param run_in_thread: ``False`` calls a sync function in the agent loop's own
            thread (see ``Tool.run_in_thread``).
        :raises TypeError: a parameter the model cannot be asked for (``*args``,
            positional-only, or a type hint with no JSON schema), naming it.
        """
        if not callable(func):
            raise TypeError(f"@tool needs a function, got {func!r}")
        tool_name = name or getattr(func, "__name__", None)
        if not tool_name:
            raise TypeError(f"cannot name a tool for {func!r}: pass name=...")
        try:
            hash(func)
        except TypeError:  # an unhashable callable object: read it each time
            read = _read_function.__wrapped__(func, tool_name, parse_docstring)
        else:
            read = _read_function(func, tool_name, parse_docstring)
        summary, properties, required, arguments, runtime_parameter = read
        properties = copy.deepcopy(properties)  # the cached schema stays as it was read
        required = list(required)
        return cls(
            name=tool_name,
            description=description if description is not None else summary,
            parameters={
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
            func=func,
            provider_options=dict(provider_options or {}),
            timeout=timeout,
            run_in_thread=run_in_thread,
            _arguments=arguments,
            runtime_parameter=runtime_parameter,
        )

    def prepare(self, args: Mapping[str, Any], runtime: ToolRuntime | None) -> dict[str, Any]:
        """The keyword arguments for ``func``: the model's ``args`` validated (and structured:
        attrs classes from objects, lists from arrays...) plus the injected runtime.

        :raises ToolArgumentError: listing every bad, missing or unknown argument.
        """
        if not isinstance(args, Mapping):
            problem = _convert.Problem("", _convert.expected("an object of named arguments", args))
            raise ToolArgumentError(self.name, [problem])
        if self._arguments is not None:
            arguments = self._arguments.made()
            try:
                values: Any = _convert.structure(dict(args), arguments)
            except _convert.ConversionError as exc:
                raise ToolArgumentError(self.name, exc.problems) from None
            kwargs = {
                field.name: getattr(values, field.name)
                for field in attrs.fields(arguments)
                if getattr(values, field.name) is not _OMITTED
            }
        else:
            problems = schema.validate_json(args, self.parameters)
            if problems:
                raise ToolArgumentError(self.name, problems)
            kwargs = dict(args)
        if self._runtime_parameter is not None:
            kwargs[self._runtime_parameter] = runtime
        return kwargs


class _Arguments:
    """The attrs class a tool's arguments are structured into, made on the tool's first
    call: a tool the model never calls never compiles one (a class costs ~0.3 ms to make,
    paid at import for a tool defined at module level). Two threads making it at once make
    two equal classes, and either serves."""

    def __init__(self, name: str, fields: dict[str, Any]) -> None:
        self._name = name
        self._fields = fields
        self._made: type | None = None

    def made(self) -> type:
        if self._made is None:
            # read field by field, never shown or compared: only its __init__ is compiled
            self._made = attrs.make_class(
                self._name, self._fields, frozen=True, repr=False, eq=False
            )
        return self._made


@functools.lru_cache(maxsize=512)
def _read_function(
    func: Callable[..., Any], tool_name: str, parse_docstring: bool
) -> tuple[str, dict[str, Any], list[str], _Arguments, str | None]:
    """What a tool function says of itself — summary, argument schemas, the attrs class its
    arguments are structured into (made on first call), the runtime parameter — read once
    per function, so an agent built per request does not parse docstrings every time."""
    label = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    doc = inspect.getdoc(func)
    if parse_docstring:
        summary, arg_docs, _ = schema.parse_docstring(doc)
    else:
        summary, arg_docs = (inspect.cleandoc(doc) if doc else ""), {}
    try:
        signature = inspect.signature(func)
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise TypeError(f"tool function {label}: cannot read its type hints: {exc}") from exc

    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}
    runtime_parameter: str | None = None
    for param in signature.parameters.values():
        where = f"tool function {label}, parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{where}: *args/**kwargs cannot be described to the model")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{where}: positional-only parameters are not supported")
        hint = hints.get(param.name, inspect.Parameter.empty)
        if _is_runtime_hint(hint):
            runtime_parameter = param.name
            continue
        if hint is inspect.Parameter.empty:
            hint = Any
        try:
            prop = schema.json_schema(hint)
            _convert.CONVERTER.get_structure_hook(hint)
        except (TypeError, cattrs.errors.StructureHandlerNotFoundError) as exc:
            raise TypeError(f"{where}: unsupported type hint {hint!r}: {exc}") from exc
        if arg_docs.get(param.name) and "description" not in prop:
            prop["description"] = arg_docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
            fields[param.name] = attrs.field(type=hint, kw_only=True)
        else:
            if schema.is_json_value(param.default):
                prop["default"] = _convert.plain(param.default)
            fields[param.name] = attrs.field(type=hint, default=_OMITTED, kw_only=True)
        properties[param.name] = prop

    arguments = _Arguments(f"{tool_name}_arguments", fields)
    return summary, properties, required, arguments, runtime_parameter


@frozen
class Runtime(Generic[ContextT]):
    """What a run knows about itself, passed to node hooks and inside requests.
    ``Runtime[Context]`` types ``context`` (LangChain's ``Runtime[Context]``)."""

    thread_id: str | None
    run_id: str
    context: ContextT = None  # type: ignore[assignment]
    store: Store | None = None
    model: ChatModel | None = None
    tools: tuple[Tool, ...] = ()
    stream_writer: Callable[[Any], None] = attrs.field(default=lambda _data: None, eq=False)
    agent_name: str = "agent"


@frozen
class ToolRuntime(Generic[ContextT]):
    """Injected into a tool parameter annotated ``ToolRuntime`` (hidden from the model).
    ``ToolRuntime[Context]`` types ``context`` as the agent's ``context_schema``."""

    tool_call: ToolCall
    state: Mapping[str, Any]
    runtime: Runtime[ContextT]

    @property
    def tool_call_id(self) -> str:
        return self.tool_call.id

    @property
    def context(self) -> ContextT:
        return self.runtime.context

    @property
    def store(self) -> Store | None:
        return self.runtime.store

    @property
    def stream_writer(self) -> Callable[[Any], None]:
        return self.runtime.stream_writer

    @property
    def idempotency_key(self) -> str:
        """``"{run_id}:{tool_call_id}"``: the same each time this call is retried or
        replayed, so a tool can make its side effect once (send it as the
        ``Idempotency-Key`` of an HTTP request, or a unique key of a row)."""
        return f"{self.runtime.run_id}:{self.tool_call.id}"


def _is_runtime_hint(hint: Any) -> bool:
    """``ToolRuntime`` (or ``ToolRuntime[Context]``), ``ToolRuntime | None`` or
    ``Annotated[ToolRuntime, ...]``."""
    if hint is ToolRuntime or typing.get_origin(hint) is ToolRuntime:
        return True
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _is_runtime_hint(args[0])
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not types.NoneType]
        return len(rest) == 1 and _is_runtime_hint(rest[0])
    return False


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    name: str | None = None,
    /,
    *,
    description: str | None = None,
    provider_options: Mapping[str, Any] | None = None,
    parse_docstring: bool = True,
    timeout: float | None = None,
    run_in_thread: bool = True,
) -> Callable[[Callable[..., Any]], Tool]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    provider_options: Mapping[str, Any] | None = None,
    parse_docstring: bool = True,
    timeout: float | None = None,
    run_in_thread: bool = True,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | str | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    provider_options: Mapping[str, Any] | None = None,
    parse_docstring: bool = True,
    timeout: float | None = None,
    run_in_thread: bool = True,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` of a typed function: ``@tool``, ``@tool("name")`` or
    ``@tool(name=..., description=..., provider_options=..., parse_docstring=...,
    timeout=..., run_in_thread=...)``."""
    if isinstance(func, str):
        if name is not None:
            raise TypeError("give the tool's name once: @tool('name') or @tool(name='name')")
        name, func = func, None
    if func is not None:
        return Tool.from_function(
            func,
            name=name,
            description=description,
            provider_options=provider_options,
            parse_docstring=parse_docstring,
            timeout=timeout,
            run_in_thread=run_in_thread,
        )

    def decorate(function: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            function,
            name=name,
            description=description,
            provider_options=provider_options,
            parse_docstring=parse_docstring,
            timeout=timeout,
            run_in_thread=run_in_thread,
        )

    return decorate


def tool_error_message(call: ToolCall, error: Exception) -> ToolMessage:
    """The error tool message the model gets for an exception a tool call raised: what the
    kernel sends, and what a middleware standing in for the tool (an emulator) sends when
    it fails. Only an argument error asks the model to fix the arguments: most failures
    (a service down, a file missing, a timeout) are not caused by them."""
    advice = (
        "Fix the arguments and call it again."
        if isinstance(error, ToolArgumentError)
        else "Call it again only if something you can change caused it, or take another approach."
    )
    text = f"Error: tool {call.name!r} raised {type(error).__name__}: {_describe(error)}. "
    return ToolMessage.error(call, text + advice)


_BY_TOOL = "_plait_raised_by_tool"


def mark_raised_by_tool(error: Exception) -> None:
    """Mark ``error`` as raised by the tool call itself (the function, its timeout, its
    durable step): the kernel calls it where the call ends, inside every hook."""
    with contextlib.suppress(AttributeError, TypeError):
        setattr(error, _BY_TOOL, True)


def raised_by_tool(error: BaseException) -> bool:
    """Whether a ``wrap_tool_call`` hook's ``handler`` raised ``error`` from the tool call
    itself rather than from a middleware inside the hook: only a tool's own error is the
    model's to hear of, a middleware's is a bug the caller must see."""
    return getattr(error, _BY_TOOL, False) is True


_TEXT = "_plait_error_text"


def set_error_text(error: Exception, text: str) -> None:
    """Tell the model ``text`` instead of ``str(error)`` when ``error`` (a tool's own)
    becomes its error message: a ``wrap_tool_call`` middleware that rewrites what tools
    answer (``pii`` redacting an address) rewrites their errors too, while every hook
    still sees the exception itself."""
    with contextlib.suppress(AttributeError, TypeError):
        setattr(error, _TEXT, text)


def error_text(error: BaseException) -> str:
    """The text the model is told for a tool's ``error``: what ``set_error_text`` set, else
    ``str(error)`` (a tracer records this one, not the exception's own words)."""
    return _describe(error)


_UPDATE = "_plait_error_update"


def set_error_update(error: Exception, update: Mapping[str, Any]) -> None:
    """Write ``update`` (state keys other than ``messages``) in the tools step that holds
    the error message the kernel makes of ``error`` (a tool's own), with that message: a
    middleware whose ``set_error_text`` uses state of its own (``pii``'s new pseudonyms,
    numbered in the error's text) keeps it in the step that first shows it. It replaces
    what was set before; read that with ``error_update`` to add to it."""
    if "messages" in update:
        raise ValueError(
            "set_error_update: the error message is the kernel's; leave out 'messages'"
        )
    with contextlib.suppress(AttributeError, TypeError):
        setattr(error, _UPDATE, dict(update))


def error_update(error: BaseException) -> dict[str, Any]:
    """What ``set_error_update`` set for ``error`` (empty if nothing)."""
    update = getattr(error, _UPDATE, None)
    return dict(update) if isinstance(update, dict) else {}


def _describe(error: BaseException) -> str:
    text = getattr(error, _TEXT, None)
    if isinstance(text, str):
        return text
    try:
        return str(error)
    except Exception:  # an exception whose __str__ raises must not end the run
        return f"<{type(error).__name__} that cannot be shown>"
