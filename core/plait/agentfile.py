"""Agent files: an agent described in TOML, turned into ``create_agent`` arguments.

```toml
[agent]
model = "scripted:demo"                      # any "provider:model" id
model_settings = { responses = ["Hello!"] }  # given to the provider's factory
system_prompt = "You are terse."
tools = ["my_tools:get_weather"]             # module:function, found beside this file
checkpointer = "sqlite:///agent.db"

[[middleware]]
use = "model_call_limit"                     # an entry-point name
run_limit = 5                                # the middleware's options
```

The file is structured into attrs classes with a strict cattrs converter, so every mistake
is reported with the file, the table and the key, and what was expected there.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import cattrs

from plait import _convert
from plait._convert import expected, integer, non_empty_string, number
from plait.errors import ConfigError, StoreError
from plait.lazy import frozen
from plait.tools import Tool

if TYPE_CHECKING:
    from plait.agent import Agent

__all__ = [
    "AgentFile",
    "AgentFileError",
    "AgentSection",
    "AgentSpec",
    "MiddlewareTable",
    "ScriptedResponse",
    "ScriptedToolCall",
    "load_agent",
    "read_agent_file",
]

T = TypeVar("T")


class AgentFileError(ConfigError):
    """A mistake in an agent file; the message names the file, the table and the key."""

    def __init__(self, file: Path | str, where: str, message: str) -> None:
        super().__init__(f"{file}: {where}: {message}" if where else f"{file}: {message}")
        self.file = str(file)
        self.where = where
        self.problem = message


class _AgentFileStoreError(AgentFileError, StoreError):
    """The file's checkpointer or store URL could not be opened: both errors at once, so
    code catching the documented ``StoreError`` still does."""


# --------------------------------------------------------------------------- the file's shape


@frozen
class AgentSection:
    """The ``[agent]`` table."""

    model: str
    name: str = attrs.field(default="agent", validator=non_empty_string())
    model_settings: dict[str, Any] = attrs.Factory(dict)
    system_prompt: str | None = None
    tools: list[str] = attrs.Factory(list)
    checkpointer: str | None = None
    store: str | None = None
    response_format: str | None = None
    recursion_limit: int = attrs.field(default=25, validator=integer(minimum=1))
    tool_timeout: float | None = attrs.field(default=None, validator=number(above=0, optional=True))
    output_retries: int = attrs.field(default=1, validator=integer(minimum=0))


@frozen
class MiddlewareTable:
    """One ``[[middleware]]`` table: ``use`` names the entry point, the rest are options."""

    use: str
    options: dict[str, Any] = attrs.Factory(dict)


@frozen
class AgentFile:
    """The whole file."""

    agent: AgentSection
    middleware: list[MiddlewareTable] = attrs.Factory(list)


@frozen
class ScriptedToolCall:
    """A tool call in a scripted response: ``{name = "...", args = {...}}``."""

    name: str
    args: dict[str, Any] = attrs.Factory(dict)
    id: str | None = None


@frozen
class ScriptedResponse:
    """A scripted model answer written as a table.

    ``text`` and ``tool_calls`` give a fixed answer; ``function = "module:callable"``
    names a function ``(messages, tools) -> AIMessage | str`` that computes it (a function
    that reads the conversation can answer every turn: ``repeat`` uses it that many times).
    """

    text: str = ""
    tool_calls: list[ScriptedToolCall] = attrs.Factory(list)
    function: str | None = None
    repeat: int = attrs.field(default=1, validator=integer(minimum=1))

    def __attrs_post_init__(self) -> None:
        if self.function is not None and (self.text or self.tool_calls):
            raise ValueError("give either function or text/tool_calls, not both")


# --------------------------------------------------------------------------- the converter


# The kernel's strict converter (the one options, tool arguments and structured output use),
# so a wrong value reads the same in a file as in Python; two shapes are the file's own.


def _middleware_table(value: Any, _: Any) -> MiddlewareTable:
    if not isinstance(value, Mapping):
        raise ValueError(expected("a mapping", value))
    options = dict(value)
    if "use" not in options:
        raise ValueError(expected("a 'use' key naming the middleware", value))
    use = options.pop("use")
    if not isinstance(use, str):
        raise ValueError(expected("a string in 'use'", use))
    return MiddlewareTable(use, options)


def _response(converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> str | ScriptedResponse:
        if isinstance(value, str):
            return value
        if isinstance(value, Mapping):
            return converter.structure(value, ScriptedResponse)
        raise ValueError(expected("a string or a mapping {text, tool_calls} or {function}", value))

    return structure


def _make_converter() -> cattrs.Converter:
    conv = _convert.make_converter()
    conv.register_structure_hook(MiddlewareTable, _middleware_table)
    conv.register_structure_hook_func(lambda tp: tp == str | ScriptedResponse, _response(conv))
    return conv


_converter = _make_converter()


def _problems(exc: BaseException, path: str) -> list[tuple[str, str]]:
    """The converter's problems as (path, message) pairs, paths like ``agent.tools[0]``."""
    found: list[tuple[str, str]] = []
    for problem in _convert.problems(exc):
        sub = problem.path
        where = path + sub if sub.startswith("[") or not path or not sub else f"{path}.{sub}"
        if problem.kind == "missing":
            found.append((where, "this key is required"))
        elif problem.kind == "unknown":
            found.append((where, _unknown(problem)))
        else:
            found.append((where, problem.message))
    return found


def _unknown(problem: _convert.Problem) -> str:
    keys = ", ".join(_convert.with_suggestion(k, problem.valid) for k in problem.keys)
    noun = "keys" if len(problem.keys) > 1 else "key"
    valid = ", ".join(problem.valid)
    text = f"unknown {noun} {keys}" + (f" (expected one of: {valid})" if valid else "")
    if "middleware" in problem.keys and "model" in problem.valid:  # the [agent] table
        text += (
            "; middleware is not an [agent] key: give each its own table after [agent], "
            '[[middleware]] with use = "NAME" and its options'
        )
    return text


def _where(path: str, data: Mapping[str, Any]) -> str:
    """``agent.tools[0]`` → ``[agent] tools[0]``; ``middleware[1].x`` → ``[[middleware]] #2``."""
    if not path:
        return "top level"
    match = re.match(r"middleware\[(\d+)\](?:\.(.*))?$", path)
    if match:
        index = int(match.group(1))
        table = _middleware_label(index, data)
        return f"{table} {match.group(2)}" if match.group(2) else table
    head, _, rest = path.partition(".")
    if head == "agent":
        return f"[agent] {rest}" if rest else "[agent]"
    return f"top level: {path}"


def _middleware_label(index: int, data: Mapping[str, Any]) -> str:
    use = None
    tables = data.get("middleware")
    if isinstance(tables, list) and index < len(tables) and isinstance(tables[index], dict):
        use = tables[index].get("use")
    label = f"[[middleware]] #{index + 1}"
    return f'{label} (use = "{use}")' if isinstance(use, str) else label


def _structure(file: Path, data: Mapping[str, Any], value: Any, tp: type[T], path: str) -> T:
    try:
        return _converter.structure(value, tp)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        problems = _problems(exc, path)
        where, message = problems[0]
        if len(problems) > 1:
            others = "; ".join(f"{_where(p, data)}: {m}" for p, m in problems[1:])
            message = f"{message} (also {others})"
        raise AgentFileError(file, _where(where, data), message) from None


# --------------------------------------------------------------------------- resolving names


def _import(spec: str, base: Path) -> Any:
    """The object ``"module:attr"`` names, importing modules beside the agent file first."""
    folder = str(base)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return _convert.import_string(
        spec, searched=f"looked beside the agent file, in {folder}, and on sys.path"
    )


def _scripted_responses(file: Path, data: Mapping[str, Any], raw: Any, base: Path) -> list[Any]:
    from plait.messages import AIMessage, ToolCall

    path = "agent.model_settings.responses"
    items = _structure(file, data, raw, list[str | ScriptedResponse], path)
    responses: list[Any] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            responses.append(item)
        elif item.function is not None:
            try:
                func = _import(item.function, base)
            except ValueError as exc:
                where = _where(f"{path}[{index}].function", data)
                raise AgentFileError(file, where, str(exc)) from None
            if not callable(func):
                where = _where(f"{path}[{index}].function", data)
                raise AgentFileError(file, where, f"{item.function!r} is not callable")
            responses.extend([func] * item.repeat)
        else:
            for _ in range(item.repeat):
                calls = [
                    ToolCall(c.name, dict(c.args))
                    if c.id is None
                    else ToolCall(c.name, dict(c.args), c.id)
                    for c in item.tool_calls
                ]
                responses.append(AIMessage(item.text, tool_calls=calls))
    return responses


# --------------------------------------------------------------------------- the spec


@frozen
class AgentSpec:
    """An agent file, read and checked: ``kwargs`` are ``create_agent``'s arguments,
    ``recursion_limit`` goes to ``invoke``. Names are resolved, the agent not yet built."""

    path: Path
    file: AgentFile
    kwargs: dict[str, Any]
    recursion_limit: int
    # The middleware read_agent_file built while checking the file: the first build()
    # takes them (each is built once), later builds make their own from kwargs.
    _built: list[Any] = attrs.field(factory=list, eq=False, repr=False)

    @property
    def checkpointer(self) -> str | None:
        return self.file.agent.checkpointer

    def build(
        self, *, first: Sequence[Any] = (), last: Sequence[Any] = (), **overrides: Any
    ) -> Agent:
        """``create_agent(**kwargs, **overrides)``; errors are prefixed with the file.

        ``middleware`` given as an override replaces the file's list; ``first`` and
        ``last`` are put before and after it (the CLI's live display uses them).
        """
        from plait._compiled import by_url
        from plait.agent import create_agent

        kwargs = {**self.kwargs, **overrides}
        if "middleware" not in overrides and self._built:
            kwargs["middleware"] = list(self._built)
            self._built.clear()
        kwargs["middleware"] = [*first, *kwargs.get("middleware", ()), *last]
        for key, group in (("checkpointer", "plait.checkpointers"), ("store", "plait.stores")):
            where = "" if key in overrides else f"[agent] {key}"
            try:
                kwargs[key] = by_url(kwargs[key], group, key)
            except (StoreError, ConfigError) as exc:
                # "checkpointer: expected ..." is said once, by where, when the file gave it
                problem = str(exc).removeprefix(f"{key}: ") if where else str(exc)
                kind = _AgentFileStoreError if isinstance(exc, StoreError) else AgentFileError
                raise kind(self.path, where, problem) from None
        try:
            return create_agent(**kwargs)
        except AgentFileError:
            raise
        except ConfigError as exc:
            raise AgentFileError(self.path, "", str(exc)) from None


def read_agent_file(path: str | Path, *, model: Any = None) -> AgentSpec:
    """Read, check and resolve the agent file at ``path`` (``AgentFileError`` if wrong).

    ``model`` (an id or a ``ChatModel``) replaces the file's, which is then not built: a
    file written for one provider runs on another without the first one's API key.
    """
    file = Path(path)
    try:
        return _read(file, model)
    except RecursionError:
        raise AgentFileError(
            file,
            "",
            "nested too deeply to read: expected tables and arrays nested at most a few "
            "hundred levels deep, got deeper (Python's recursion limit)",
        ) from None


def _read(file: Path, model: Any) -> AgentSpec:
    from plait import _resolve
    from plait.models import init_chat_model

    try:
        with file.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise AgentFileError(file, "", "no such file") from None
    except OSError as exc:
        raise AgentFileError(file, "", f"cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise AgentFileError(file, "", f"not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise AgentFileError(
            file, "", f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}"
        ) from None
    if "agent" not in data:
        raise AgentFileError(
            file, "top level", "an [agent] table with at least 'model' is required"
        )
    parsed = _structure(file, data, data, AgentFile, "")
    base = file.resolve().parent
    if str(base) not in sys.path:  # "module:attr" names (tools, options) resolve beside it
        sys.path.insert(0, str(base))
    agent = parsed.agent

    settings = dict(agent.model_settings)
    provider = agent.model.partition(":")[0]
    if provider == "scripted" and "responses" in settings:
        settings["responses"] = _scripted_responses(file, data, settings["responses"], base)
    try:
        model = init_chat_model(agent.model, **settings) if model is None else model
    except ConfigError as exc:
        raise AgentFileError(file, "[agent] model", str(exc).removeprefix("model: ")) from None
    except TypeError as exc:
        raise AgentFileError(
            file, "[agent] model_settings", f"not accepted by {provider!r}: {exc}"
        ) from None

    tools = []
    for index, spec in enumerate(agent.tools):
        try:
            obj = _import(spec, base)
        except ValueError as exc:
            raise AgentFileError(file, f"[agent] tools[{index}]", str(exc)) from None
        if not callable(obj) and not isinstance(obj, Tool):
            raise AgentFileError(
                file, f"[agent] tools[{index}]", f"{spec!r} is not a function or a plait.Tool"
            )
        tools.append(obj)

    response_format = None
    if agent.response_format is not None:
        try:
            response_format = _import(agent.response_format, base)
        except ValueError as exc:
            raise AgentFileError(file, "[agent] response_format", str(exc)) from None

    middleware: list[Any] = []
    built: list[Any] = []
    for index, table in enumerate(parsed.middleware):
        try:
            obj = _resolve.build(table.use, table.options)
        except ConfigError as exc:
            raise AgentFileError(file, _middleware_label(index, data), str(exc)) from None
        middleware.append((table.use, dict(table.options)))
        built.append(_resolve.Built(table.use, obj))

    kwargs: dict[str, Any] = {
        "model": model,
        "tools": tools,
        "system_prompt": agent.system_prompt,
        "middleware": middleware,
        "checkpointer": agent.checkpointer,
        "store": agent.store,
        "response_format": response_format,
        "name": agent.name,
        "tool_timeout": agent.tool_timeout,
        "output_retries": agent.output_retries,
    }
    return AgentSpec(file, parsed, kwargs, agent.recursion_limit, built)


def load_agent(path: str | Path, **overrides: Any) -> Agent:
    """Build the agent an agent file describes; ``overrides`` replace ``create_agent``
    arguments (``checkpointer="memory"``, ``model=...``)."""
    return read_agent_file(path, model=overrides.pop("model", None)).build(**overrides)
