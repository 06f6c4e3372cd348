"""JSON schemas for Python types, and validation of JSON data back into those types.

The kernel uses these for tools (a function's parameters become a JSON schema; the model's
arguments are validated back) and for ``response_format`` (a class becomes the schema the
model must answer in; its answer is structured into the class). Classes are attrs classes,
dataclasses, TypedDicts and, when the user has pydantic, pydantic v2 models (which make and
check their own schema: plait never imports pydantic itself). A raw JSON schema given
as a mapping passes through ``json_schema`` unchanged, and ``structure`` then only checks the
top level of the data against it.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import itertools
import json
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

import attrs

from plait import _convert

__all__ = ["json_schema", "structure", "validate_json"]

T = TypeVar("T")

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (Mapping,),
    "null": (type(None),),
}


def json_schema(tp: Any) -> dict[str, Any]:
    """The JSON schema (draft 2020-12 subset every provider accepts) of values of ``tp``.

    A mapping is taken to be a JSON schema already and returned as a copy. Unsupported types
    (callables, arbitrary classes) raise ``TypeError`` naming the type.
    """
    if isinstance(tp, Mapping):
        return dict(tp)
    return _schema(tp, ())


def structure(data: Any, tp: type[T] | Any) -> T:
    """Validate JSON ``data`` into ``tp`` with the strict converter.

    Raises ``ValueError`` (a ``ConversionError``) whose text lists each problem with its path,
    e.g. ``$.city: expected a string, got 3``. For a raw JSON schema (a mapping) the data is
    checked with ``validate_json`` and returned as it is.
    """
    if isinstance(tp, Mapping):
        problems = validate_json(data, tp)
        if problems:
            raise _convert.ConversionError(problems)
        return typing.cast(T, data)
    result: T = _convert.structure(data, tp)
    return result


def validate_json(data: Any, schema: Mapping[str, Any]) -> list[_convert.Problem]:
    """Check ``data`` against the top level of a JSON schema: its type, and for objects the
    required keys, unknown keys (when ``additionalProperties`` is false) and the JSON type and
    ``enum`` of each property. Deeper levels are left to whoever consumes the data."""
    problems: list[_convert.Problem] = []
    type_problem = _check_type(data, schema, "")
    if type_problem is not None:
        return [type_problem]
    if not isinstance(data, Mapping):
        return problems
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if key not in data:
            problems.append(_convert.Problem(key, "required, but missing", "missing"))
    if schema.get("additionalProperties") is False:
        unknown = tuple(sorted(str(k) for k in data if k not in properties))
        if unknown:
            valid = tuple(properties)
            text = "unknown key" + ("s " if len(unknown) > 1 else " ")
            text += ", ".join(map(repr, unknown)) + f" (valid: {', '.join(valid)})"
            problems.append(_convert.Problem("", text, "unknown", unknown, valid))
    for key, value in data.items():
        sub = properties.get(key)
        if isinstance(sub, Mapping):
            problem = _check_type(value, sub, str(key))
            if problem is not None:
                problems.append(problem)
    return problems


def _check_type(value: Any, schema: Mapping[str, Any], path: str) -> _convert.Problem | None:
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else list(declared or ())
    if names and not any(_is_json_type(value, name) for name in names):
        expected = " or ".join(_JSON_WORDS.get(n, n) for n in names)
        return _convert.Problem(path, _convert.expected(expected, value))
    if "enum" in schema and not any(
        _convert.same_literal(value, option) for option in schema["enum"]
    ):
        options = ", ".join(repr(o) for o in schema["enum"])
        return _convert.Problem(path, _convert.expected(f"one of {options}", value))
    return None


# A JSON type in the converter's words, so a raw-schema tool and a typed one say the same.
_JSON_WORDS = {
    name: _convert.describe_type(tp)
    for name, tp in (
        ("string", str),
        ("integer", int),
        ("number", float),
        ("boolean", bool),
        ("array", list),
        ("object", dict),
        ("null", None),
    )
}


def _is_json_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(name, (object,)))


# --------------------------------------------------------------------------- type → schema


def _schema(tp: Any, seen: tuple[Any, ...]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is object:
        return {}
    if tp is None or tp is types.NoneType:
        return {"type": "null"}
    if origin is typing.Annotated:
        schema = _schema(args[0], seen)
        notes = [m for m in args[1:] if isinstance(m, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    supertype = getattr(tp, "__supertype__", None)  # typing.NewType
    if supertype is not None:
        return _schema(supertype, seen)
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if _convert.is_pattern_type(tp):
        return {"type": "string", "format": "regex"}
    if origin in (typing.Union, types.UnionType):
        return _union_schema(args, seen)
    if origin is Literal:
        return _enum_schema([_convert.plain(a) for a in args])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        schema = _enum_schema([m.value for m in tp])
        doc = _own_doc(tp)
        if doc:
            schema["description"] = doc
        return schema
    collection = _convert.collection_origin(tp)
    if collection is not None:
        return _array_schema(collection, args, seen)
    if (origin or tp) in _convert.MAPPING_ORIGINS:
        key, value = args if args else (str, Any)
        if key not in (str, Any) and typing.get_origin(key) is not Literal:
            raise TypeError(f"JSON objects have string keys; cannot describe {_name(tp)}")
        schema = {"type": "object"}
        if value is not Any:
            schema["additionalProperties"] = _schema(value, seen)
        return schema
    if _convert.is_pydantic_model(tp):
        return _pydantic_schema(tp)
    if isinstance(tp, type) and (
        attrs.has(tp) or typing.is_typeddict(tp) or _convert.is_dataclass_type(tp)
    ):
        if tp in seen:
            raise TypeError(f"cannot describe the recursive type {_name(tp)} as a JSON schema")
        return _object_schema(tp, (*seen, tp))
    raise TypeError(f"cannot describe {_name(tp)} as a JSON schema")


def _pydantic_schema(model: Any) -> dict[str, Any]:
    """A pydantic model's own JSON schema, its ``$ref``s to ``$defs`` inlined so it reads
    like the schema of an attrs class (providers differ in what they resolve); a model
    that refers to itself keeps its ``$defs``."""
    try:
        raw = model.model_json_schema()
    except Exception as exc:
        # pydantic's text ends with a paragraph pointing at its docs: keep the first.
        reason = " ".join(str(exc).split("\n\n")[0].split())
        raise TypeError(f"cannot describe {_name(model)} as a JSON schema: {reason}") from None
    defs: dict[str, Any] = raw.pop("$defs", {})

    def inline(node: Any, trail: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, trail) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in trail:
                raise RecursionError(name)
            target = dict(inline(defs[name], (*trail, name)))
            target.update({k: inline(v, trail) for k, v in node.items() if k != "$ref"})
            return target
        return {key: inline(value, trail) for key, value in node.items()}

    try:
        schema: dict[str, Any] = inline(raw, ())
    except RecursionError:
        return {**raw, "$defs": defs} if defs else raw
    return schema


def _name(tp: Any) -> str:
    return _convert.type_repr(tp)


def _union_schema(members: tuple[Any, ...], seen: tuple[Any, ...]) -> dict[str, Any]:
    schemas = [_schema(m, seen) for m in members]
    if all(set(s) == {"type"} and isinstance(s["type"], str) for s in schemas):
        names = list(dict.fromkeys(s["type"] for s in schemas))
        return {"type": names[0] if len(names) == 1 else names}
    return {"anyOf": schemas}


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {_json_type_of(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema = {"type": kinds.pop(), "enum": values}
    return schema


def _json_type_of(value: Any) -> str | None:
    for name, python in (("boolean", bool), ("integer", int), ("number", float), ("string", str)):
        if isinstance(value, python):
            return name
    return "null" if value is None else None


def _array_schema(collection: Any, args: tuple[Any, ...], seen: tuple[Any, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    if collection is tuple and args and args[-1] is not Ellipsis:
        items = [] if args == ((),) else list(args)
        schema["prefixItems"] = [_schema(a, seen) for a in items]
        schema["minItems"] = schema["maxItems"] = len(items)
        return schema
    item = args[0] if args else Any
    if item is not Any:
        schema["items"] = _schema(item, seen)
    if _convert.is_unique_collection(collection):
        schema["uniqueItems"] = True
    return schema


def _object_schema(cls: type, seen: tuple[Any, ...]) -> dict[str, Any]:
    docs = field_descriptions(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    if attrs.has(cls):
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:
            raise TypeError(f"cannot resolve the type hints of {_name(cls)}: {exc}") from exc
        for field in attrs.fields(cls):
            if not field.init:
                continue
            prop = _schema(hints.get(field.name, field.type or Any), seen)
            description = field.metadata.get("description") or docs.get(field.name)
            if description and "description" not in prop:
                prop["description"] = description
            if field.default is attrs.NOTHING:
                required.append(field.name)
            else:
                default = field.default
                if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                    default = attrs.NOTHING if default.takes_self else default.factory()
                if is_json_value(default):
                    prop["default"] = _convert.plain(default)
            properties[field.name] = prop
    elif _convert.is_dataclass_type(cls):
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:
            raise TypeError(f"cannot resolve the type hints of {_name(cls)}: {exc}") from exc
        for dc_field in dataclasses.fields(cls):
            if not dc_field.init:
                continue
            prop = _schema(hints.get(dc_field.name, Any), seen)
            description = dc_field.metadata.get("description") or docs.get(dc_field.name)
            if description and "description" not in prop:
                prop["description"] = description
            if dc_field.default is not dataclasses.MISSING:
                if is_json_value(dc_field.default):
                    prop["default"] = _convert.plain(dc_field.default)
            elif dc_field.default_factory is dataclasses.MISSING:
                required.append(dc_field.name)
            properties[dc_field.name] = prop
    else:
        hints = typing.get_type_hints(cls, include_extras=True)
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset(hints))
        for key, hint in hints.items():
            origin = typing.get_origin(hint)
            if origin in (typing.Required, typing.NotRequired):
                hint = typing.get_args(hint)[0]
            prop = _schema(hint, seen)
            if docs.get(key) and "description" not in prop:
                prop["description"] = docs[key]
            properties[key] = prop
            if key in required_keys:
                required.append(key)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    schema["required"] = required
    schema["additionalProperties"] = False
    doc = _own_doc(cls)
    if doc:
        schema["description"] = doc
    return schema


def is_json_value(value: Any) -> bool:
    """Whether ``value`` survives ``json.dumps`` (an enum member counts as its value)."""
    try:
        json.dumps(_convert.plain(value), allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------- docstrings

_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ARGS_SECTIONS = frozenset({"args", "arguments", "parameters", "params"})
_FIELDS_SECTIONS = frozenset({"attributes", "fields"})
_KNOWN_SECTIONS = (
    _ARGS_SECTIONS
    | _FIELDS_SECTIONS
    | {
        "returns",
        "return",
        "raises",
        "yields",
        "examples",
        "example",
        "note",
        "notes",
        "see also",
        "warning",
        "warnings",
        "todo",
    }
)
_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str], dict[str, str]]:
    """Split a Google-style docstring into (description without the ``Args:``/
    ``Attributes:`` sections, argument descriptions, attribute descriptions)."""
    if not doc:
        return "", {}, {}
    kept: list[str] = []
    args: dict[str, str] = {}
    attributes: dict[str, str] = {}
    target: dict[str, str] | None = None
    current: str | None = None
    entry_indent: int | None = None
    for line in inspect.cleandoc(doc).splitlines():
        header = _SECTION.match(line)
        if header and header.group(1).strip().lower() in _KNOWN_SECTIONS:
            section = header.group(1).strip().lower()
            target = args if section in _ARGS_SECTIONS else None
            target = attributes if section in _FIELDS_SECTIONS else target
            current, entry_indent = None, None
            if target is None:
                kept.append(line)
            continue
        if target is None or (line and not line[0].isspace()):
            target = None  # a line at the margin ends a section
            kept.append(line)
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        entry_indent = indent if entry_indent is None else entry_indent
        entry = _ENTRY.match(line.strip())
        if entry and indent <= entry_indent:
            current = entry.group(1)
            target[current] = entry.group(2).strip()
        elif current is not None:
            target[current] = (target[current] + " " + line.strip()).strip()
    description = re.sub(r"\n{3,}", "\n\n", "\n".join(kept).strip())
    return description, args, attributes


def _own_doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or _is_generated_doc(cls, doc):
        return ""
    return parse_docstring(doc)[0]


def _is_generated_doc(cls: type, doc: str) -> bool:
    # Enum, TypedDict and dataclass classes without a docstring get a generic one.
    return doc.startswith(cls.__name__ + "(") or doc in (
        "An enumeration.",
        getattr(dict, "__doc__", None),
    )


def field_descriptions(cls: type) -> dict[str, str]:
    """Descriptions of a class's fields: its docstring's ``Attributes:`` section, overridden
    by a string literal right below a field (an attribute docstring)."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        doc = klass.__dict__.get("__doc__")
        if isinstance(doc, str):
            found.update(parse_docstring(doc)[2])
        found.update(_attribute_docstrings(klass))
    return found


def _attribute_docstrings(cls: type) -> dict[str, str]:
    if cls.__module__ in ("builtins", "typing", "abc") or cls is object:
        return {}
    import textwrap  # here: only a class's field docstrings need it

    try:
        source = textwrap.dedent(inspect.getsource(cls))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return {}
    if not tree.body or not isinstance(tree.body[0], ast.ClassDef):
        return {}
    docs: dict[str, str] = {}
    body = tree.body[0].body
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs
