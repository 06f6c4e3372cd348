"""The ``input``, ``output`` and ``tools`` options made into guardrails, with every bad
entry reported where it is (``option 'input[1].regex': expected ..., got ...``)."""

from __future__ import annotations

import pkgutil
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from cattrs.errors import AttributeValidationNote

from plait.lazy import frozen
from plait.models import ChatModel
from plait.options import FieldError, chat_model, expected
from plait_guardrails._guardrail import Guardrail, Kind
from plait_guardrails._rules import Judge, Match, keyword_pattern

__all__ = ["ToolGuards", "guardrails", "tool_guardrails"]


def _at(path: str, message: str) -> FieldError:
    """The error of the entry at ``path`` (``input[1].regex``): its ``str`` starts with
    the path, and the note tells ``create_agent``'s report where it is."""
    error = FieldError(path, message)
    error.add_note(AttributeValidationNote(f"Validating {path}", path, Any))
    return error


_SOURCES = ("function", "regex", "keywords", "judge")
_ENTRY = (
    "a guardrail (from input_guardrail, output_guardrail or tool_guardrail), a function, "
    "a 'module:function' string or a table with one of function, regex, keywords, judge"
)
_ACTIONS: Mapping[str, tuple[str, ...]] = {
    "input": ("trip",),
    "output": ("trip",),
    "tool_input": ("trip", "reject"),
    "tool_output": ("trip", "replace"),
}
_KEYS: Mapping[str, frozenset[str]] = {
    "input": frozenset({*_SOURCES, "name", "reason", "prompt", "parallel"}),
    "output": frozenset({*_SOURCES, "name", "reason", "prompt"}),
    "tool_input": frozenset({*_SOURCES, "name", "reason", "prompt", "action", "message"}),
    "tool_output": frozenset({*_SOURCES, "name", "reason", "prompt", "action", "message"}),
}
_LISTED = {"input": "input", "output": "output", "tool_input": "tools", "tool_output": "tools"}


@frozen
class ToolGuards:
    """The guardrails of one tool (or of every tool, under ``"*"``)."""

    before: tuple[Guardrail, ...] = ()
    after: tuple[Guardrail, ...] = ()


def guardrails(entries: Any, kind: Kind, path: str) -> tuple[Guardrail, ...]:
    """The ``input`` or ``output`` option (or a tool's ``before``/``after`` list)."""
    if isinstance(entries, (str, Mapping)) or not isinstance(entries, (list, tuple)):
        raise _at(path, expected("a list of guardrails", entries))
    built = tuple(_entry(entry, kind, f"{path}[{i}]") for i, entry in enumerate(entries))
    names = [guard.name for guard in built]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise _at(
                f"{path}[{index}]",
                expected("guardrails with distinct names", name, "give one of them name = '...'"),
            )
    return built


def tool_guardrails(entries: Any) -> dict[str, ToolGuards]:
    """The ``tools`` option: ``{tool name or "*": {before: [...], after: [...]}}``, or a
    list of guardrails made by ``tool_guardrail`` (which carry their tools and when)."""
    if isinstance(entries, (list, tuple)):
        return _from_decorated(entries)
    if not isinstance(entries, Mapping):
        raise _at(
            "tools",
            expected(
                "a table of tool name (or '*') to {before = [...], after = [...]}, or a list "
                "of tool guardrails",
                entries,
            ),
        )
    table: dict[str, ToolGuards] = {}
    for tool, spec in entries.items():
        where = f"tools[{tool!r}]"
        if not isinstance(spec, Mapping):
            raise _at(where, expected("a table with before and/or after", spec))
        unknown = sorted(set(spec) - {"before", "after"})
        if unknown or not spec:
            raise _at(
                where, expected("a table with before and/or after", dict(spec), "nothing else")
            )
        table[str(tool)] = ToolGuards(
            guardrails(spec.get("before", []), "tool_input", f"{where}.before"),
            guardrails(spec.get("after", []), "tool_output", f"{where}.after"),
        )
    return table


def _from_decorated(entries: Any) -> dict[str, ToolGuards]:
    table: dict[str, ToolGuards] = {}
    for index, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = _imported(entry, f"tools[{index}]")
        if not isinstance(entry, Guardrail) or not set(entry.kinds) & {
            "tool_input",
            "tool_output",
        }:
            raise _at(
                f"tools[{index}]",
                expected("a guardrail made by tool_guardrail (or a table of tools)", entry),
            )
        when = "before" if "tool_input" in entry.kinds else "after"
        for tool in entry.tools or ("*",):
            guards = table.get(tool, ToolGuards())
            table[tool] = attrs.evolve(guards, **{when: (*getattr(guards, when), entry)})
    return table


def _imported(value: str, path: str) -> Any:
    try:
        return pkgutil.resolve_name(value)
    except (ImportError, AttributeError, ValueError) as exc:
        raise _at(
            path, expected("a 'module:function' string naming a function", value, str(exc))
        ) from None


def _entry(entry: Any, kind: Kind, path: str) -> Guardrail:
    if isinstance(entry, str):
        if ":" not in entry:
            raise _at(path, expected(_ENTRY, entry))
        entry = _imported(entry, path)
    if isinstance(entry, Guardrail):
        if entry.kinds and kind not in entry.kinds:
            made = {"input": "input", "output": "output"}.get(entry.kinds[0], "tool")
            raise _at(
                path,
                expected(
                    f"a guardrail for {_LISTED[kind]}",
                    entry.name,
                    f"it is made as a {made} guardrail",
                ),
            )
        return entry
    if isinstance(entry, Mapping):
        return _table(entry, kind, path)
    if callable(entry) and not isinstance(entry, type):
        return Guardrail(getattr(entry, "__name__", None) or repr(entry), entry)
    raise _at(path, expected(_ENTRY, entry))


def _text(table: Mapping[str, Any], key: str, path: str) -> str | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise _at(f"{path}.{key}", expected("a non-empty string", value))
    return value


def _table(table: Mapping[str, Any], kind: Kind, path: str) -> Guardrail:
    unknown = sorted(str(key) for key in set(table) - _KEYS[kind])
    if unknown:
        valid = ", ".join(sorted(_KEYS[kind]))
        raise _at(path, expected(f"a guardrail table with keys among {valid}", dict(table)))
    given = [key for key in _SOURCES if key in table]
    if len(given) != 1:
        raise _at(
            path,
            expected(
                "a table with exactly one of function, regex, keywords, judge",
                dict(table),
            ),
        )
    source = given[0]
    action = table.get("action", "trip")
    if action not in _ACTIONS[kind]:
        raise _at(f"{path}.action", expected(" or ".join(map(repr, _ACTIONS[kind])), action))
    reason = _text(table, "reason", path)
    message = _text(table, "message", path)
    name = _text(table, "name", path)
    parallel = table.get("parallel")
    if parallel is not None and not isinstance(parallel, bool):
        raise _at(f"{path}.parallel", expected("true or false", parallel))
    if "prompt" in table and source != "judge":
        raise _at(f"{path}.prompt", expected("no prompt (only a judge has one)", table))
    check: Callable[..., Any]
    acheck = None
    if source == "function":
        value = table["function"]
        made = _entry(value, kind, f"{path}.function") if isinstance(value, str) else None
        if made is None:
            if not callable(value) or isinstance(value, type):
                raise _at(f"{path}.function", expected("a function or a 'module:function'", value))
            made = Guardrail(getattr(value, "__name__", repr(value)), value)
        check, default_name = made.check, made.name
        acheck = made.acheck
    elif source == "regex":
        pattern = _pattern(table["regex"], f"{path}.regex")
        check, default_name = Match(pattern, action, message, reason), "regex"
    elif source == "keywords":
        words = table["keywords"]
        if (
            isinstance(words, str)
            or not isinstance(words, (list, tuple))
            or not words
            or not all(isinstance(w, str) and w.strip() for w in words)
        ):
            raise _at(f"{path}.keywords", expected("a non-empty list of non-empty strings", words))
        matcher = Match(keyword_pattern(words), action, message, reason, tuple(words))
        check, default_name = matcher, "keywords"
    else:
        model = table["judge"]
        problem = chat_model().problem(model)
        if problem is not None:
            raise _at(f"{path}.judge", problem)
        prompt = _text(table, "prompt", path)
        if prompt is None:
            raise _at(
                f"{path}.prompt",
                expected("the rule the judge checks (a non-empty string)", None),
            )
        judge = Judge(model, prompt, action, message)
        check, acheck, default_name = judge, judge.acall, "judge"
        if isinstance(model, ChatModel) or isinstance(model, str):
            default_name = f"judge:{model if isinstance(model, str) else model.model_name}"
    return Guardrail(name or default_name, check, parallel=parallel, acheck=acheck)


def _pattern(value: Any, path: str) -> re.Pattern[str]:
    if isinstance(value, re.Pattern):
        return value
    if not isinstance(value, str) or not value:
        raise _at(path, expected("a regular expression", value))
    try:
        return re.compile(value)
    except re.error as exc:
        raise _at(path, expected("a regular expression", value, f"invalid: {exc}")) from None
