"""The strict cattrs converter behind middleware options, agent files, tool arguments and
structured output, and the one vocabulary their errors share.

One factory (``make_converter``) so all of them obey the same rules: nothing is silently
coerced (``"two"``, ``1.7`` and ``True`` are not ints, a string is not a list), values that
already have the right type pass through (instances, callables, compiled patterns), and
``"module:attr"`` strings name callables and exception classes from TOML. Errors are collected
with ``detailed_validation`` and flattened by ``cattrs.transform_error`` into ``Problem``s: a
path and what was expected.

Every wrong value is worded by ``expected`` (``expected an int >= 1, got 0``); the number
checks (``Bounded``: ``integer``, ``number``) and ``FieldError`` use it too, and plugins get
them through ``plait.options``. ``schema`` uses only the names in ``__all__``.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import functools
import importlib
import operator
import re
import reprlib
import sys
import types
import typing
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs
import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.errors import (
    AttributeValidationNote,
    BaseValidationError,
    ClassValidationError,
    ForbiddenExtraKeysError,
)
from cattrs.gen import make_dict_structure_fn, make_hetero_tuple_structure_fn
from cattrs.gen.typeddicts import make_dict_structure_fn as make_typeddict_structure_fn

from plait.errors import ConfigError, FieldError
from plait.lazy import lazy_exports

if TYPE_CHECKING:
    from plait._problem import Problem as Problem

__all__ = [
    "MAPPING_ORIGINS",
    "Bounded",
    "ConversionError",
    "FieldError",
    "NonEmptyString",
    "Problem",
    "collection_origin",
    "describe_type",
    "expected",
    "field_type",
    "import_string",
    "integer",
    "is_dataclass_type",
    "is_optional",
    "is_pattern_type",
    "is_pydantic_model",
    "is_unique_collection",
    "make_converter",
    "non_empty_string",
    "number",
    "option_problems",
    "plain",
    "same_literal",
    "show",
    "structure",
    "type_repr",
    "with_suggestion",
]

T = TypeVar("T")

# Made only when a value is refused: imported on first use.
__getattr__ = lazy_exports(__name__, {"Problem": "plait._problem"})
Hook = Callable[[Any, Any], Any]


@functools.cache
def _credential_name() -> re.Pattern[str]:
    """Names whose value is a credential (``api_key``, ``Authorization``, ``GITHUB_TOKEN``,
    ``client_secret``), not ``max_tokens``. Compiled when an error first shows a value:
    a run that refuses nothing never pays for it."""
    return re.compile(
        r"(?:^|[_\-.])(?:api[_\-]?key|access[_\-]?key|private[_\-]?key|secret|secret[_\-]?key"
        r"|token|access[_\-]?token|refresh[_\-]?token|password|passwd|authorization"
        r"|credentials?)$",
        re.IGNORECASE,
    )


@functools.cache
def _auth_scheme() -> re.Pattern[str]:
    """An ``Authorization`` value's credential: ``Bearer <token>``, ``Basic <base64>``."""
    return re.compile(r"(?i)\b(bearer\s+)[^\s'\",;]{8,}|\b(basic\s+)[A-Za-z0-9+/]{8,}=*")


class _Hidden:
    def __repr__(self) -> str:
        return "'***'"


class _Shown(reprlib.Repr):
    """A refused value as errors show it: shortened, and with the credentials it holds
    (a table's ``api_key`` or ``Authorization``, a ``Bearer`` token, a string shaped like
    a provider's key) hidden: an error is printed, logged and pasted into issues."""

    def repr_dict(self, x: Any, level: int) -> str:
        hidden = {
            k: _Hidden() if isinstance(k, str) and v and _credential_name().search(k) else v
            for k, v in x.items()
        }
        return super().repr_dict(hidden, level)

    def repr_str(self, x: str, level: int) -> str:
        x = _auth_scheme().sub(lambda m: (m.group(1) or m.group(2)) + "***", x)
        http = sys.modules.get("plait.models._http")  # loaded with any provider
        if http is not None:  # a provider's key shapes (sk-..., AIza...), as its errors
            x = http.redact(x)
        return super().repr_str(x, level)


_repr = _Shown()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6

_SEQUENCE_INPUTS = (list, tuple, set, frozenset, cabc.Sequence, cabc.Set)
_TEXT = (str, bytes, bytearray)
_LIST_ORIGINS = (list, cabc.MutableSequence)
_TUPLE_ORIGINS = (tuple, cabc.Sequence, cabc.Collection, cabc.Iterable)
_SET_ORIGINS = (set, cabc.MutableSet)
_FROZENSET_ORIGINS = (frozenset, cabc.Set)
_MAPPING_ORIGINS = (dict, cabc.Mapping, cabc.MutableMapping)
MAPPING_ORIGINS = _MAPPING_ORIGINS
"""The generic origins a mapping type has (``dict``, ``Mapping``, ``MutableMapping``)."""


# --------------------------------------------------------------------------- errors


class ConversionError(ValueError):
    """A value does not fit its type; ``problems`` says where and why."""

    def __init__(self, problems: typing.Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


def show(value: Any) -> str:
    """``value`` as every "got ..." shows it: its repr, shortened."""
    return _repr.repr(value)


def expected(what: str, value: Any, detail: str | None = None) -> str:
    """The one sentence for a wrong value, wherever it was given (an option, an agent file,
    a tool argument, a structured answer): ``expected an int >= 1, got 0``."""
    text = f"expected {what}, got {show(value)}"
    return f"{text} ({detail})" if detail else text


def with_suggestion(name: str, valid: typing.Iterable[str]) -> str:
    """A wrong name as every refusal of one shows it, with the closest valid name if one
    is close: ``'modle' (did you mean 'model'?)``."""
    import difflib  # here: only a misspelt name needs it

    close = difflib.get_close_matches(name, list(valid), n=1)
    return f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name)


class _Mismatch(ValueError):
    """Raised by the strict hooks: the value is not what the type allows."""

    def __init__(self, expected: str, value: Any, detail: str | None = None) -> None:
        self.expected = expected
        self.value = value
        self.detail = detail
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return expected(self.expected, self.value, self.detail)


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


class Bounded:
    """A number option's check, usable as an attrs validator: an int (``integral``) or any
    number, within the bounds given (``minimum`` and ``maximum`` inclusive, ``above``
    exclusive), ``None`` allowed if ``optional``.

    A wrong kind gets the converter's sentence (``expected an int or None, got 'two'``), a
    value out of bounds names them (``expected an int >= 1 or None, got 0``), so a value
    checked here and one structured by the converter read the same.
    """

    # A plain class, not an attrs one (which compiles its methods when made, at import),
    # nor a named tuple (attrs reads a tuple given as a validator as a list of validators).
    __slots__ = ("above", "integral", "maximum", "minimum", "optional")

    def __init__(
        self,
        integral: bool,
        minimum: float | None = None,
        above: float | None = None,
        maximum: float | None = None,
        optional: bool = False,
    ) -> None:
        self.integral = integral
        self.minimum = minimum
        self.above = above
        self.maximum = maximum
        self.optional = optional

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.wanted}>"

    @property
    def kind(self) -> str:
        """``an int``, ``a number``, ``an int or None``..."""
        return ("an int" if self.integral else "a number") + (" or None" if self.optional else "")

    @property
    def wanted(self) -> str:
        """The kind with its bounds: ``an int >= 1 or None``, ``a number > 0 and <= 1``."""
        bounds = [
            f"{sign} {_number(bound)}"
            for sign, bound in ((">=", self.minimum), (">", self.above), ("<=", self.maximum))
            if bound is not None
        ]
        words = "an int" if self.integral else "a number"
        if bounds:
            words += " " + " and ".join(bounds)
        return words + (" or None" if self.optional else "")

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (an "expected ..., got ..." sentence), or ``None``."""
        if value is None and self.optional:
            return None
        kinds: tuple[type, ...] = (int,) if self.integral else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return expected(self.kind, value)
        number = typing.cast(float, value)
        if (
            (self.minimum is not None and not number >= self.minimum)
            or (self.above is not None and not number > self.above)
            or (self.maximum is not None and not number <= self.maximum)
            or number != number  # NaN fits no bound
        ):
            return expected(self.wanted, value)
        return None

    def check(self, name: str, value: Any) -> None:
        """Raise ``FieldError(name, ...)`` if ``value`` does not fit."""
        problem = self.problem(value)
        if problem is not None:
            raise FieldError(name, problem)

    def require(self, name: str, value: Any) -> None:
        """For a plain keyword argument (``create_agent(tool_timeout=...)``): raise
        ``ConfigError("<name>: expected ..., got ...")`` if ``value`` does not fit."""
        problem = self.problem(value)
        if problem is not None:
            raise ConfigError(f"{name}: {problem}")

    def __call__(self, _: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        self.check(attribute.name, value)


def integer(
    *, minimum: int | None = None, maximum: int | None = None, optional: bool = False
) -> Bounded:
    """An int option's check: ``integer(minimum=1)``, ``integer(minimum=0, optional=True)``."""
    return Bounded(True, minimum=minimum, maximum=maximum, optional=optional)


def number(
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    optional: bool = False,
) -> Bounded:
    """A number option's check (ints and floats): ``number(above=0)`` for seconds,
    ``number(above=0, maximum=1)`` for a fraction, ``number(minimum=0, optional=True)``."""
    return Bounded(False, minimum=minimum, above=above, maximum=maximum, optional=optional)


class NonEmptyString:
    """A text option's check, usable as an attrs validator: a string with more than
    whitespace in it, ``None`` allowed if ``optional`` (``expected a non-empty string,
    got '  '``)."""

    __slots__ = ("optional",)  # a plain class, as ``Bounded`` is

    def __init__(self, optional: bool = False) -> None:
        self.optional = optional

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {'optional' if self.optional else 'required'}>"

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (an "expected ..., got ..." sentence), or ``None``."""
        if (value is None and self.optional) or (isinstance(value, str) and value.strip()):
            return None
        return expected("a non-empty string" + (" or None" if self.optional else ""), value)

    def check(self, name: str, value: Any) -> None:
        """Raise ``FieldError(name, ...)`` if ``value`` does not fit."""
        problem = self.problem(value)
        if problem is not None:
            raise FieldError(name, problem)

    def require(self, name: str, value: Any) -> None:
        """For a plain keyword argument (``create_agent(name=...)``): raise
        ``ConfigError("<name>: expected ..., got ...")`` if ``value`` does not fit."""
        problem = self.problem(value)
        if problem is not None:
            raise ConfigError(f"{name}: {problem}")

    def __call__(self, _: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        self.check(attribute.name, value)


def non_empty_string(*, optional: bool = False) -> NonEmptyString:
    """A text option's check: ``non_empty_string()``, ``non_empty_string(optional=True)``."""
    return NonEmptyString(optional)


def _article(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


def describe_type(tp: Any) -> str:
    """What a value of ``tp`` looks like, for "expected ..." messages."""
    if tp is Any or tp is object:
        return "any value"
    if tp is None or tp is types.NoneType:
        return "None"
    if typing.get_origin(tp) is typing.Annotated:
        return describe_type(typing.get_args(tp)[0])
    if tp is bool:
        return "a bool"
    if tp is int:
        return "an int"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is bytes:
        return "bytes"
    if _is_union(tp):
        return _either(_alternatives(tp))
    if typing.get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(_plain(a)) for a in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    if _is_callable_type(tp):
        return _either(_CALLABLE)
    if _is_type_type(tp):
        args = typing.get_args(tp)
        bound = type_repr(args[0]) if args else "object"
        return f"a subclass of {bound} or a 'module:attr' string naming one"
    if _is_pattern_type(tp):
        return "a regular expression"
    origin = typing.get_origin(tp) or tp
    if origin in _MAPPING_ORIGINS:
        return "a mapping"
    if origin in _LIST_ORIGINS + _TUPLE_ORIGINS + _SET_ORIGINS + _FROZENSET_ORIGINS:
        return "a list"
    if attrs.has(origin):
        return f"a mapping of {origin.__name__}'s fields"
    if typing.is_typeddict(origin):
        return f"a mapping of {origin.__name__}'s keys"
    if is_dataclass_type(origin) or is_pydantic_model(origin):
        return f"a mapping of {origin.__name__}'s fields"
    if isinstance(origin, type):
        return _article(origin.__name__)
    return type_repr(tp)


_CALLABLE = ("a callable", "a 'module:attr' string")
"""What a callable option takes, each said once in a union of callables."""


def _alternatives(tp: Any) -> list[str]:
    """What a union's members describe to, each said once, in order: ``Callable[[A], X]
    | Callable[[B], X] | None`` is a callable, a 'module:attr' string or None."""
    said: dict[str, None] = {}
    for member in typing.get_args(tp):
        if typing.get_origin(member) is typing.Annotated:
            member = typing.get_args(member)[0]
        if _is_union(member):
            said.update(dict.fromkeys(_alternatives(member)))
        elif _is_callable_type(member):
            said.update(dict.fromkeys(_CALLABLE))
        else:
            said[describe_type(member)] = None
    return list(said)


def _either(parts: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def type_repr(tp: Any) -> str:
    """A readable spelling of a type: ``int | None``, ``list[str]``, ``Literal['a', 'b']``."""
    if tp is None or tp is types.NoneType:
        return "None"
    if tp is Any:
        return "Any"
    if tp is Ellipsis:
        return "..."
    if isinstance(tp, str):
        return tp
    if isinstance(tp, list):  # Callable's argument list
        return "[" + ", ".join(type_repr(a) for a in tp) + "]"
    if _is_union(tp):
        return " | ".join(type_repr(m) for m in typing.get_args(tp))
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return type_repr(args[0])
    if origin is Literal:
        return "Literal[" + ", ".join(repr(_plain(a)) for a in args) + "]"
    if origin is not None:
        name = getattr(origin, "__qualname__", None) or repr(origin)
        if origin is cabc.Callable:
            name = "Callable"
        return f"{name}[{', '.join(type_repr(a) for a in args)}]" if args else name
    if isinstance(tp, type):
        return tp.__qualname__ if tp.__module__ != "builtins" else tp.__name__
    return repr(tp).replace("typing.", "")


def plain(value: Any) -> Any:
    """An enum member's value; anything else as it is."""
    return value.value if isinstance(value, enum.Enum) else value


_plain = plain


# --------------------------------------------------------------------------- predicates


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


_FIELD_TYPES: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()


def field_type(cls: type, field: attrs.Attribute[Any]) -> Any:
    """``field``'s type, a string annotation evaluated as ``typing.get_type_hints``
    evaluates a class's (names looked up in the module of the class that declares it,
    then in that class's namespace), for this field alone and once per class: what
    structuring an option and checking a closed set of values both read. Raises what the
    evaluation raises (a name only a type checker sees)."""
    known = _FIELD_TYPES.get(cls)
    if known is None:
        known = _FIELD_TYPES[cls] = {}
    try:
        return known[field.name]
    except KeyError:
        pass
    tp = field.type
    if isinstance(tp, str):
        import inspect

        owner = next(k for k in cls.__mro__ if field.name in inspect.get_annotations(k))
        module = sys.modules.get(owner.__module__)
        module_names = vars(module) if module is not None else {}
        simple = _named_types(tp, module_names, vars(owner))
        if simple is not None:
            tp = simple[0]
        else:
            hints = typing.get_type_hints(
                types.SimpleNamespace(__annotations__={field.name: tp}),
                globalns=dict(vars(owner)),
                localns=module_names,
                include_extras=True,
            )
            tp = hints[field.name]
    known[field.name] = tp
    return tp


def _named_types(
    text: str, module_names: Mapping[str, Any], class_names: Mapping[str, Any]
) -> tuple[Any] | None:
    """The type an annotation of names joined by ``|`` stands for (``int``, ``str | None``,
    ``Strategy``), each name looked up as ``eval`` would (the module, the class, builtins),
    when each is ``None``, a plain class or a ``Literal``: then ``get_type_hints`` would
    give the same, and compiling the text (most of its cost) is skipped. ``None`` for any
    other annotation, left to ``get_type_hints``."""
    import builtins

    parts: list[Any] = []
    for part in text.split("|"):
        name = part.strip()
        if name == "None":
            parts.append(None)
            continue
        if not name.isidentifier():
            return None
        for names in (module_names, class_names, vars(builtins)):
            if name in names:
                value = names[name]
                break
        else:
            return None  # get_type_hints words the NameError
        plain_class = isinstance(value, type) and not isinstance(value, types.GenericAlias)
        if not (plain_class or typing.get_origin(value) is Literal):
            return None
        parts.append(value)
    if len(parts) == 1 and parts[0] is None:
        return (types.NoneType,)
    return (functools.reduce(operator.or_, parts),)


def is_optional(tp: Any) -> bool:
    """Whether ``None`` is a valid value of ``tp`` (``X | None``, ``Optional[X]``, ``Any``)."""
    if tp is Any or tp is None or tp is types.NoneType:
        return True
    if typing.get_origin(tp) is typing.Annotated:
        return is_optional(typing.get_args(tp)[0])
    return _is_union(tp) and any(is_optional(m) for m in typing.get_args(tp))


def _is_callable_type(tp: Any) -> bool:
    return tp is cabc.Callable or typing.get_origin(tp) is cabc.Callable


def _is_type_type(tp: Any) -> bool:
    return tp is type or typing.get_origin(tp) is type


def is_pattern_type(tp: Any) -> bool:
    """Whether ``tp`` is ``re.Pattern`` (a string option compiled as a regular expression)."""
    return tp is re.Pattern or typing.get_origin(tp) is re.Pattern


_is_pattern_type = is_pattern_type


def collection_origin(tp: Any) -> Any:
    """The origin of a list-like type (``list``, ``tuple``, ``set``, ``Sequence``...), else
    ``None``; ``tuple`` for fixed-length tuples too."""
    origin = typing.get_origin(tp) or tp
    if origin in _LIST_ORIGINS + _TUPLE_ORIGINS + _SET_ORIGINS + _FROZENSET_ORIGINS:
        return origin
    return None


_collection_origin = collection_origin


def is_unique_collection(origin: Any) -> bool:
    """Whether a ``collection_origin`` holds each item once (a set or frozenset)."""
    return origin in _SET_ORIGINS + _FROZENSET_ORIGINS


def _is_mapping(tp: Any) -> bool:
    return (typing.get_origin(tp) or tp) in _MAPPING_ORIGINS


def _is_collection(tp: Any) -> bool:
    return _collection_origin(tp) is not None


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is Literal


def _is_attrs(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def _is_typeddict(tp: Any) -> bool:
    return typing.is_typeddict(typing.get_origin(tp) or tp)


def is_dataclass_type(tp: Any) -> bool:
    """Whether ``tp`` is a dataclass (the class, not an instance)."""
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def is_pydantic_model(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic v2 ``BaseModel`` subclass. Found through
    ``sys.modules``, never imported: a pydantic model's module imported pydantic already,
    and plait does not depend on it."""
    pydantic = sys.modules.get("pydantic")
    base = getattr(pydantic, "BaseModel", None)
    return isinstance(tp, type) and base is not None and issubclass(tp, base)


def _instance_of(value: Any, tp: Any) -> bool:
    """Whether ``value`` already fits ``tp`` as it is (the union pass-through test)."""
    if tp is Any or tp is object:
        return True
    if tp is None or tp is types.NoneType:
        return value is None
    if _is_callable_type(tp):
        return callable(value) and not isinstance(value, type | str)
    if _is_type_type(tp):
        args = typing.get_args(tp)
        bound = args[0] if args and isinstance(args[0], type) else object
        return isinstance(value, type) and issubclass(value, bound)
    if _is_pattern_type(tp):
        return isinstance(value, re.Pattern)
    if typing.get_origin(tp) is not None or not isinstance(tp, type):
        return False  # generics and literals are checked by structuring
    if typing.is_typeddict(tp):
        return False
    if isinstance(value, bool) and tp in (int, float):
        return False
    try:
        return isinstance(value, tp)
    except TypeError:  # a Protocol that is not runtime-checkable
        return False


# --------------------------------------------------------------------------- hooks


def import_string(value: str, *, searched: str | None = None) -> Any:
    """The object ``"package.module:attr.sub"`` names; ``ValueError`` saying why if it fails.

    :param searched: where modules are looked for, added to a "no module named" message
        (an agent file: "looked beside the agent file, in DIR, and on sys.path").
    """
    module_name, sep, attr_path = value.partition(":")
    if not sep or not module_name or not attr_path:
        raise _NotImportString(expected("a 'module:attr' string", value))
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            hint = f" ({searched})" if searched else ""
            raise ValueError(
                f"cannot import {value!r}: no module named {exc.name!r}{hint}"
            ) from exc
        raise ValueError(
            f"cannot import {value!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    except Exception as exc:
        raise ValueError(
            f"cannot import {value!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(
                f"cannot import {value!r}: module {module_name!r} has no attribute {attr_path!r}"
            ) from None
    return obj


def _import_detail(exc: ValueError) -> str | None:
    """Why a ``"module:attr"`` string named nothing, for the detail of the "expected ..."
    sentence; ``None`` for a string not of that form (the sentence already asks for one)."""
    return None if isinstance(exc, _NotImportString) else str(exc)


class _NotImportString(ValueError):
    """``import_string`` was given a string without the ``module:attr`` form."""


def _structure_scalar(value: Any, tp: Any) -> Any:
    """``bool``, ``int``, ``float``, ``str``, ``bytes``, their subclasses and enums."""
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if isinstance(value, tp):
            return value
        for member in tp:
            if _same_literal(value, member.value):
                return member
        raise _Mismatch(describe_type(tp), value)
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif issubclass(tp, int) and isinstance(value, bool) and not issubclass(tp, bool):
        pass
    elif isinstance(value, tp):
        return value
    else:
        base = next(b for b in (str, bytes, int, float) if issubclass(tp, b))
        if isinstance(value, base) and not isinstance(value, bool):
            return tp(value)
    raise _Mismatch(describe_type(tp), value)


def same_literal(value: Any, allowed: Any) -> bool:
    """Equality that keeps ``True`` apart from ``1`` (and ``1.0`` apart from ``True``)."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return isinstance(value, bool) and isinstance(allowed, bool) and value is allowed
    if isinstance(allowed, int | float) and isinstance(value, int | float):
        return bool(value == allowed)
    return type(value) is type(allowed) and bool(value == allowed)


_same_literal = same_literal


def _literal_hook(tp: Any) -> Hook:
    allowed = typing.get_args(tp)

    def structure_literal(value: Any, _: Any) -> Any:
        for option in allowed:
            if isinstance(option, enum.Enum):
                if value is option or _same_literal(value, option.value):
                    return option
            elif _same_literal(value, option):
                return option
        raise _Mismatch(describe_type(tp), value)

    return structure_literal


def _callable_hook(tp: Any) -> Hook:
    def structure_callable(value: Any, _: Any) -> Any:
        if isinstance(value, str):
            try:
                value = import_string(value)
            except ValueError as exc:
                raise _Mismatch(describe_type(tp), value, _import_detail(exc)) from None
            if not callable(value):
                raise _Mismatch(describe_type(tp), value, "it names something not callable")
            return value
        if callable(value):
            return value
        raise _Mismatch(describe_type(tp), value)

    return structure_callable


def _type_hook(tp: Any) -> Hook:
    args = typing.get_args(tp)
    bound: type = args[0] if args and isinstance(args[0], type) else object

    def structure_type(value: Any, _: Any) -> Any:
        original = value
        if isinstance(value, str):
            try:
                value = import_string(value)
            except ValueError as exc:
                raise _Mismatch(describe_type(tp), original, _import_detail(exc)) from None
        if isinstance(value, type) and issubclass(value, bound):
            return value
        detail = f"it names {_repr.repr(value)}" if isinstance(original, str) else None
        raise _Mismatch(describe_type(tp), original, detail)

    return structure_type


def _pattern_hook(tp: Any) -> Hook:
    def structure_pattern(value: Any, _: Any) -> Any:
        if isinstance(value, re.Pattern):
            return value
        if isinstance(value, str | bytes):
            try:
                return re.compile(value)
            except re.error as exc:
                raise _Mismatch(describe_type(tp), value, f"invalid regex: {exc}") from None
        raise _Mismatch(describe_type(tp), value)

    return structure_pattern


def _plain_class_hook(tp: Any) -> Hook:
    """The fallback for classes cattrs knows nothing about: instances only, never ``tp(v)``."""
    if not isinstance(tp, type):
        raise cattrs.errors.StructureHandlerNotFoundError(
            f"plait cannot validate values of type {type_repr(tp)}", type_=tp
        )

    def structure_instance(value: Any, _: Any) -> Any:
        try:
            ok = isinstance(value, tp)
        except TypeError:  # a Protocol that is not runtime-checkable: trust the caller
            ok = value is not None
        if ok:
            return value
        raise _Mismatch(describe_type(tp), value)

    return structure_instance


def _union_hook(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(tp: Any) -> Hook:
        members = typing.get_args(tp)
        non_none = [m for m in members if m is not types.NoneType]
        allows_none = len(non_none) < len(members)

        def structure_union(value: Any, _: Any) -> Any:
            if value is None and allows_none:
                return None
            for member in non_none:
                if _instance_of(value, member):
                    return value
            failures: list[Exception] = []
            for member in non_none:
                try:
                    return converter.structure(value, member)
                except Exception as exc:
                    failures.append(exc)
            # A failure past the shape check (a mapping for the one attrs member...) says
            # more than "expected A or B": report that member's errors with their paths.
            deep = [f for f in failures if isinstance(f, BaseValidationError)]
            if len(deep) == 1:
                raise deep[0]
            if len(failures) == 1:
                only = failures[0]
                if not allows_none:
                    raise only
                if isinstance(only, _Mismatch):
                    raise _Mismatch(f"{only.expected} or None", value, only.detail)
            details = list(
                dict.fromkeys(f.detail for f in failures if isinstance(f, _Mismatch) and f.detail)
            )
            raise _Mismatch(describe_type(tp), value, details[0] if len(details) == 1 else None)

        return structure_union

    return factory


def _collection_hook(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(tp: Any) -> Hook:
        origin = _collection_origin(tp)
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            base = make_hetero_tuple_structure_fn(tp, converter, detailed_validation=True)
            expected_len: int | None = 0 if args == ((),) else len(args)
        else:
            expected_len = None
            elem = args[0] if args else Any
            if origin in _LIST_ORIGINS or origin in _SET_ORIGINS + _FROZENSET_ORIGINS:
                base = list_structure_factory(list[elem], converter)  # type: ignore[valid-type]
            else:
                base = homogenous_tuple_structure_factory(
                    tuple[elem, ...],  # type: ignore[valid-type]
                    converter,
                )
        if origin in _SET_ORIGINS:
            finish: Callable[[Any], Any] = set
        elif origin in _FROZENSET_ORIGINS:
            finish = frozenset
        else:
            finish = _identity

        def structure_collection(value: Any, _: Any) -> Any:
            if not isinstance(value, _SEQUENCE_INPUTS) or isinstance(value, (*_TEXT, Mapping)):
                raise _Mismatch(describe_type(tp), value)
            if expected_len is not None and len(value) != expected_len:
                raise _Mismatch(
                    f"a list of {expected_len} items", value, f"it has {len(value)} items"
                )
            return finish(base(value, tp))

        return structure_collection

    return factory


def _identity(value: Any) -> Any:
    return value


def _mapping_hook(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(tp: Any) -> Hook:
        if typing.get_args(tp):
            base = mapping_structure_factory(tp, converter, dict, detailed_validation=True)
        else:
            base = mapping_structure_factory(dict[Any, Any], converter, dict)

        def structure_mapping(value: Any, _: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _Mismatch(describe_type(tp), value)
            return base(value, tp)

        return structure_mapping

    return factory


def _typeddict_hook(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(tp: Any) -> Hook:
        base = make_typeddict_structure_fn(
            tp, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
        )

        def structure_typeddict(value: Any, _: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _Mismatch(describe_type(tp), value)
            return base(dict(value), tp)

        return structure_typeddict

    return factory


def _attrs_hook(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(tp: Any) -> Hook:
        if any(isinstance(a.type, str) for a in attrs.fields(tp)):
            attrs.resolve_types(tp)
        base = make_dict_structure_fn(
            tp,
            converter,
            _cattrs_forbid_extra_keys=True,
            _cattrs_detailed_validation=True,
        )

        def structure_attrs(value: Any, _: Any) -> Any:
            if isinstance(value, tp):
                return value
            if not isinstance(value, Mapping):
                raise _Mismatch(describe_type(tp), value)
            try:
                return base(value, tp)
            except ClassValidationError as group:
                # cattrs wraps what the class itself raised (an attrs validator,
                # __attrs_post_init__) without a field note: find the field it is about.
                for exc in group.exceptions:
                    if not _has_field_note(exc):
                        _locate(exc, tp, value)
                raise

        return structure_attrs

    return factory


def _dataclass_hook(converter: cattrs.Converter) -> Callable[[Any], Hook]:
    def factory(tp: Any) -> Hook:
        base = make_dict_structure_fn(
            tp,
            converter,
            _cattrs_forbid_extra_keys=True,
            _cattrs_detailed_validation=True,
        )

        def structure_dataclass(value: Any, _: Any) -> Any:
            if isinstance(value, tp):
                return value
            if not isinstance(value, Mapping):
                raise _Mismatch(describe_type(tp), value)
            return base(value, tp)

        return structure_dataclass

    return factory


class PydanticInvalid(ValueError):
    """A pydantic model refused a value: its errors as ``Problem``s, paths relative to
    the model (the converter's ``problems`` puts the model's own path before them)."""

    def __init__(self, problems: typing.Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


def _pydantic_hook(tp: Any) -> Hook:
    """A pydantic model validates a value itself (its own validators and config apply);
    its errors are reworded as the converter words them."""

    def structure_pydantic(value: Any, _: Any) -> Any:
        if isinstance(value, tp):
            return value
        if not isinstance(value, Mapping):
            raise _Mismatch(describe_type(tp), value)
        pydantic = sys.modules["pydantic"]
        try:
            return tp.model_validate(dict(value))
        except pydantic.ValidationError as exc:
            raise PydanticInvalid(pydantic_problems(tp, exc.errors())) from None

    return structure_pydantic


def pydantic_problems(model: Any, errors: typing.Sequence[Mapping[str, Any]]) -> list[Problem]:
    """pydantic's error dicts in the converter's words: ``Input should be a valid integer``
    becomes ``expected a valid integer, got 'x'``; a missing field and extra keys become
    ``missing`` and ``unknown`` problems, as for attrs classes."""
    from plait._problem import Problem

    found: list[Problem] = []
    unknown: dict[str, list[str]] = {}
    for error in errors:
        loc = [part for part in error.get("loc", ()) if part != "__root__"]
        kind = error.get("type", "")
        message = str(error.get("msg", kind))
        if kind == "extra_forbidden" and loc:
            unknown.setdefault(_path(loc[:-1]), []).append(str(loc[-1]))
            continue
        path = _path(loc)
        if kind == "missing":
            found.append(Problem(path, "required, but missing", "missing"))
            continue
        if message.startswith("Input should be "):
            message = expected(message.removeprefix("Input should be "), error.get("input"))
        elif "input" in error and kind not in ("value_error", "assertion_error"):
            message = f"{message}, got {show(error['input'])}"
        elif kind == "value_error":
            message = message.removeprefix("Value error, ")
        found.append(Problem(path, message))
    for path, keys in unknown.items():
        valid: tuple[str, ...] = ()
        if not path:
            valid = tuple(getattr(model, "model_fields", {}))
        text = "unknown key" + ("s " if len(keys) > 1 else " ") + ", ".join(map(repr, keys))
        if valid:
            text += f" (valid: {', '.join(valid)})"
        found.append(Problem(path, text, "unknown", tuple(keys), valid))
    return found


def _path(loc: typing.Sequence[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def join_path(outer: str, inner: str) -> str:
    """``inner`` (a path relative to a value) below ``outer`` (that value's path)."""
    if not outer or not inner:
        return outer or inner
    return outer + (inner if inner.startswith("[") else "." + inner)


def _has_field_note(exc: BaseException) -> bool:
    return any(type(n) is AttributeValidationNote for n in getattr(exc, "__notes__", ()))


def _option(exc: BaseException) -> tuple[str, str] | None:
    """The option path and the problem of a ``FieldError`` or of a ``ConfigError`` raised
    about one option (``ConfigError(problem, option=...)``)."""
    if isinstance(exc, FieldError):
        return exc.field, exc.message
    if isinstance(exc, ConfigError) and exc.option is not None and exc.plugin is None:
        return exc.option, exc.problem
    return None


def _locate(exc: Exception, cls: type, data: Mapping[str, Any]) -> None:
    """Note the failing field on a validator error, so the report carries its path."""
    if not isinstance(exc, ValueError | TypeError | ConfigError) or isinstance(
        exc, _Mismatch | BaseValidationError
    ):
        return
    named = _option(exc)
    if named is not None and named[0] not in attrs.fields_dict(cls):
        return  # a path below a field (``models[1]``): the problem carries it
    name = _failing_field(exc, cls, data)
    if name is not None:
        field = attrs.fields_dict(cls)[name]
        exc.add_note(AttributeValidationNote(f"Validating {cls.__name__}.{name}", name, field.type))


def _failing_field(exc: Exception, cls: type, data: Mapping[str, Any]) -> str | None:
    fields = {f.name: f for f in attrs.fields(cls) if f.init}
    option = _option(exc)
    if option is not None:
        return option[0] if option[0] in fields else None
    # attrs' own validators put the Attribute in the exception's args.
    for arg in exc.args:
        if isinstance(arg, attrs.Attribute) and arg.name in fields:
            return str(arg.name)
    # Otherwise re-run each field's converter and validator alone on what was given.
    for name, field in fields.items():
        if name not in data:
            continue
        checks: list[Callable[[Any], Any]] = []
        if isinstance(field.converter, attrs.Converter):
            pass  # takes the instance or field: cannot be re-run alone
        elif field.converter is not None:
            checks.append(field.converter)
        if field.validator is not None:
            validator = field.validator
            checks.append(lambda value, v=validator, f=field: v(None, f, value))  # type: ignore[misc]
        for check in checks:
            try:
                check(data[name])
            except Exception as again:
                if type(again) is type(exc) and str(again) == str(exc):
                    return str(name)
    # __attrs_post_init__ and friends: a message naming exactly one field.
    text = str(exc)
    for pattern in (r"['\"`]{}['\"`]", r"(?<![\w.]){}(?![\w])"):
        named = [n for n in fields if re.search(pattern.format(re.escape(n)), text)]
        if len(named) == 1:
            return str(named[0])
    return None


# --------------------------------------------------------------------------- the factory


def make_converter() -> cattrs.Converter:
    """A new strict converter (hooks registered later take precedence over cattrs' own)."""
    converter = cattrs.Converter(
        detailed_validation=True,
        forbid_extra_keys=True,
        structure_fallback_factory=_plain_class_hook,
    )
    for scalar in (bool, int, float, str, bytes, enum.Enum):
        converter.register_structure_hook(scalar, _structure_scalar)
    converter.register_structure_hook_factory(_is_attrs, _attrs_hook(converter))
    converter.register_structure_hook_factory(_is_typeddict, _typeddict_hook(converter))
    converter.register_structure_hook_factory(is_dataclass_type, _dataclass_hook(converter))
    converter.register_structure_hook_factory(is_pydantic_model, _pydantic_hook)
    converter.register_structure_hook_factory(_is_mapping, _mapping_hook(converter))
    converter.register_structure_hook_factory(_is_collection, _collection_hook(converter))
    converter.register_structure_hook_factory(_is_pattern_type, _pattern_hook)
    converter.register_structure_hook_factory(_is_type_type, _type_hook)
    converter.register_structure_hook_factory(_is_callable_type, _callable_hook)
    converter.register_structure_hook_factory(_is_literal, _literal_hook)
    converter.register_structure_hook_factory(_is_union, _union_hook(converter))
    converter.register_structure_hook_func(lambda t: t is types.NoneType, _structure_none)
    return converter


def _structure_none(value: Any, _: Any) -> None:
    if value is not None:
        raise _Mismatch("None", value)


CONVERTER = make_converter()
"""The converter options, tool arguments and structured output share."""


def structure(value: Any, tp: type[T] | Any, converter: cattrs.Converter | None = None) -> T:
    """``value`` as a ``tp``, or ``ConversionError`` listing every problem with its path."""
    conv = converter or CONVERTER
    try:
        return conv.structure(value, tp)  # type: ignore[no-any-return]
    except cattrs.errors.StructureHandlerNotFoundError:
        raise
    except (BaseValidationError, _Mismatch, ValueError, TypeError, ConfigError) as exc:
        named = _named_error(exc)
        if named is not None:
            # a whole sentence already, with its plugin and option path (a nested table a
            # plugin structured itself): told as it is, not as a problem of the field
            raise named from None
        raise ConversionError(problems(exc)) from exc


def _named_error(exc: BaseException) -> ConfigError | None:
    """The first ``ConfigError`` in ``exc`` (or its groups) that names its plugin."""
    if isinstance(exc, ConfigError) and exc.plugin is not None:
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _named_error(inner)
        if found is not None:
            return found
    return None


def problems(exc: BaseException) -> list[Problem]:
    """Flatten a (detailed) structuring error into problems, via ``cattrs.transform_error``."""
    found: list[list[Problem]] = []

    def record(error: BaseException, tp: Any) -> str:
        # transform_error wants text "<message> @ <path>"; hand it an index into ``found``
        # so the path can be split off without guessing at the message's content.
        if isinstance(error, PydanticInvalid):
            found.append(list(error.problems))
        else:
            found.append([_problem_of(error, tp)])
        return str(len(found) - 1)

    result: list[Problem] = []
    for line in cattrs.transform_error(exc, path="$", format_exception=record):
        index, _, path = line.partition(" @ ")
        rel = path[1:].removeprefix(".")
        for problem in found[int(index)]:
            result.append(attrs.evolve(problem, path=join_path(rel, problem.path)))
    return result


def _problem_of(error: BaseException, tp: Any) -> Problem:
    from plait._problem import Problem

    if isinstance(error, _Mismatch):
        return Problem("", error.message)
    named = _option(error)
    if named is not None:
        # a field the report's path names already (noted), or a path below one
        return Problem("" if _has_field_note(error) else named[0], named[1])
    if isinstance(error, ForbiddenExtraKeysError):
        cls = error.cl
        valid: tuple[str, ...] = ()
        if _is_attrs(cls):
            valid = tuple(f.name for f in attrs.fields(cls) if f.init)
        elif is_dataclass_type(cls):
            valid = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        elif typing.is_typeddict(cls):
            valid = tuple(typing.get_type_hints(cls))
        keys = tuple(sorted(str(k) for k in error.extra_fields))
        text = "unknown key" + ("s " if len(keys) > 1 else " ") + ", ".join(map(repr, keys))
        if valid:
            text += f" (valid: {', '.join(valid)})"
        return Problem("", text, "unknown", keys, valid)
    if isinstance(error, KeyError):
        return Problem("", "required, but missing", "missing")
    message = str(error) or type(error).__name__
    if tp is not None and not isinstance(error, ValueError | TypeError | ConfigError):
        message = f"expected {describe_type(tp)} ({type(error).__name__}: {message})"
    return Problem("", message)


def option_problems(error: ConversionError, *, at: str = "") -> str:
    """The problems of options that did not structure, in the words of every option
    refusal (``unknown option 'trigerr' (did you mean 'trigger'?); valid options: ...``,
    ``option 'keep': expected an int, got 'two'``), separated by ``;``; ``at`` is where
    the options sit inside a larger table (``agents[0]``)."""
    return "; ".join(
        _option_problem(attrs.evolve(p, path=join_path(at, p.path))) for p in error.problems
    )


def _option_problem(problem: Problem) -> str:
    if problem.kind == "missing":
        return f"missing required option {problem.path!r}"
    if problem.kind == "unknown" and not problem.path:
        parts = [f"unknown option {with_suggestion(key, problem.valid)}" for key in problem.keys]
        valid = ", ".join(problem.valid) if problem.valid else "none"
        return "; ".join(parts) + f"; valid options: {valid}"
    if not problem.path:
        return problem.message
    return f"option {problem.path!r}: {problem.message}"
