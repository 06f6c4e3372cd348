"""``plait.schema``: JSON schemas of Python types and strict validation back into them."""

from __future__ import annotations

import enum
import typing
from typing import Any, Literal, Optional, TypedDict

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait import schema
from plait.schema import json_schema, structure


class Color(enum.Enum):
    """A paint color."""

    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    """A point on the plane.

    Attributes:
        x: Horizontal position.
    """

    x: int
    y: int = 0
    """Vertical position."""
    label: str | None = attrs.field(default=None, metadata={"description": "A caption."})


@attrs.frozen
class Shape:
    points: list[Point]
    color: Color = Color.RED
    tags: tuple[str, ...] = ()
    weights: dict[str, float] = attrs.field(factory=dict)


class _MovieBase(TypedDict):
    title: str


class Movie(_MovieBase, total=False):
    # (NotRequired[...] would be lost here: this module's annotations are strings, and
    # Python 3.11 computes a TypedDict's required keys before resolving them.)
    year: int


# --------------------------------------------------------------------------- json_schema


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (Optional[int], {"type": ["integer", "null"]}),  # noqa: UP045
        (str | None, {"type": ["string", "null"]}),
        (int | str, {"type": ["integer", "string"]}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list[Any], {"type": "array"}),
        (set[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict[str, Any], {"type": "object"}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, "a"], {"enum": [1, "a"]}),
        (Color, {"type": "string", "enum": ["red", "green"], "description": "A paint color."}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (typing.Annotated[int, "A count."], {"type": "integer", "description": "A count."}),
    ],
)
def test_schema_of_simple_types(tp: Any, expected: dict[str, Any]) -> None:
    assert json_schema(tp) == expected


def test_schema_of_an_attrs_class() -> None:
    assert json_schema(Point) == {
        "type": "object",
        "description": "A point on the plane.",
        "properties": {
            "x": {"type": "integer", "description": "Horizontal position."},
            "y": {"type": "integer", "description": "Vertical position.", "default": 0},
            "label": {"type": ["string", "null"], "description": "A caption.", "default": None},
        },
        "required": ["x"],
        "additionalProperties": False,
    }


def test_nested_attrs_classes_are_inlined() -> None:
    shape = json_schema(Shape)
    assert shape["required"] == ["points"]
    assert shape["properties"]["points"]["items"] == json_schema(Point)
    assert shape["properties"]["color"] == {
        "type": "string",
        "enum": ["red", "green"],
        "description": "A paint color.",
        "default": "red",
    }
    assert shape["properties"]["weights"] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
        "default": {},
    }


def test_schema_of_a_typeddict() -> None:
    assert json_schema(Movie) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title"],
        "additionalProperties": False,
    }


def test_a_raw_schema_passes_through() -> None:
    raw = {"type": "object", "properties": {"a": {"type": "string"}}, "title": "Answer"}
    assert json_schema(raw) == raw
    assert json_schema(raw) is not raw


@attrs.frozen
class Node:
    children: list[Node] = attrs.field(factory=list)


@pytest.mark.parametrize(
    ("tp", "message"),
    [
        (complex, "cannot describe complex"),
        (dict[int, str], "string keys"),
        (Node, "recursive type Node"),
    ],
)
def test_unsupported_types_raise_type_error(tp: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        json_schema(tp)


# --------------------------------------------------------------------------- structure


def test_structure_builds_nested_classes() -> None:
    data = {
        "points": [{"x": 1}, {"x": 2, "y": 3, "label": "b"}],
        "color": "green",
        "tags": ["a"],
        "weights": {"w": 1},
    }
    assert structure(data, Shape) == Shape(
        [Point(1), Point(2, 3, "b")], Color.GREEN, ("a",), {"w": 1.0}
    )


def test_structure_reports_every_problem_with_its_path() -> None:
    data = {"points": [{"x": "1"}, {"y": 2}, {"x": 1, "z": 0}], "color": "blue", "tags": "a"}
    with pytest.raises(ValueError) as info:
        structure(data, Shape)
    text = str(info.value)
    assert "$.points[0].x: expected an int, got '1'" in text
    assert "$.points[1].x: required, but missing" in text
    assert "$.points[2]: unknown key 'z' (valid: x, y, label)" in text
    assert "$.color: expected one of 'red', 'green', got 'blue'" in text
    assert "$.tags: expected a list, got 'a'" in text


def test_structure_typeddict_keeps_a_dict_and_checks_keys() -> None:
    assert structure({"title": "Up"}, Movie) == {"title": "Up"}
    with pytest.raises(ValueError, match=r"\$\.year: expected an int, got '2009'"):
        structure({"title": "Up", "year": "2009"}, Movie)
    with pytest.raises(ValueError, match=r"unknown key 'rating'"):
        structure({"title": "Up", "rating": 5}, Movie)


def test_structure_against_a_raw_schema_checks_the_top_level() -> None:
    raw = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    data = {"answer": "yes", "score": 1}
    assert structure(data, raw) is data
    with pytest.raises(ValueError) as info:
        structure({"score": "high", "extra": 1}, raw)
    text = str(info.value)
    assert "$.answer: required, but missing" in text
    assert "$.score: expected a number, got 'high'" in text
    assert "unknown key 'extra'" in text
    with pytest.raises(ValueError, match=r"\$: expected a mapping, got \[1\]"):
        structure([1], raw)


# --------------------------------------------------------------------------- properties
#
# A small grammar of types, each with a strategy for JSON values that fit it and the Python
# value structuring must produce. Two properties: the schema describes every such value, and
# structuring returns the expected Python value.

Case = tuple[Any, st.SearchStrategy[tuple[Any, Any]]]


def _same(value: Any) -> tuple[Any, Any]:
    return value, value


def _primitive_cases() -> st.SearchStrategy[Case]:
    return st.sampled_from(
        [
            (str, st.text(max_size=5).map(_same)),
            (int, st.integers(-1000, 1000).map(_same)),
            (bool, st.booleans().map(_same)),
            (
                float,
                st.one_of(
                    st.integers(-5, 5).map(lambda i: (i, float(i))),
                    st.floats(allow_nan=False, allow_infinity=False).map(_same),
                ),
            ),
            (Literal["a", "b"], st.sampled_from(["a", "b"]).map(_same)),
            (Color, st.sampled_from(list(Color)).map(lambda c: (c.value, c))),
        ]
    )


def _extend(children: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    def as_list(case: Case) -> Case:
        tp, values = case
        pairs = st.lists(values, max_size=3)
        return list[tp], pairs.map(lambda ps: ([j for j, _ in ps], [p for _, p in ps]))

    def as_tuple(case: Case) -> Case:
        tp, values = case
        pairs = st.lists(values, max_size=3)
        return tuple[tp, ...], pairs.map(lambda ps: ([j for j, _ in ps], tuple(p for _, p in ps)))

    def as_optional(case: Case) -> Case:
        tp, values = case
        return tp | None, st.one_of(st.just((None, None)), values)

    def as_dict(case: Case) -> Case:
        tp, values = case
        pairs = st.dictionaries(st.text(max_size=3), values, max_size=3)
        return dict[str, tp], pairs.map(
            lambda d: ({k: j for k, (j, _) in d.items()}, {k: p for k, (_, p) in d.items()})
        )

    def as_class(cases: list[Case]) -> Case:
        names = [f"f{i}" for i in range(len(cases))]
        cls = attrs.make_class(
            "Generated", {n: attrs.field(type=tp) for n, (tp, _) in zip(names, cases, strict=True)}
        )
        fields = st.tuples(*(values for _, values in cases))
        return cls, fields.map(
            lambda vs: (
                {n: j for n, (j, _) in zip(names, vs, strict=True)},
                cls(*(p for _, p in vs)),
            )
        )

    return st.one_of(
        children.map(as_list),
        children.map(as_tuple),
        children.map(as_optional),
        children.map(as_dict),
        st.lists(children, min_size=1, max_size=3).map(as_class),
    )


CASES = st.recursive(_primitive_cases(), _extend, max_leaves=6)


def _conforms(value: Any, sch: dict[str, Any]) -> bool:
    """A value satisfies the subset of JSON Schema ``json_schema`` produces."""
    if "anyOf" in sch:
        return any(_conforms(value, s) for s in sch["anyOf"])
    if "enum" in sch and not any(value == e and type(value) is type(e) for e in sch["enum"]):
        return False
    kinds = sch.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is_kind(value, k) for k in kinds):
            return False
    if isinstance(value, list):
        if "items" in sch and not all(_conforms(v, sch["items"]) for v in value):
            return False
        if "prefixItems" in sch and not all(
            _conforms(v, s) for v, s in zip(value, sch["prefixItems"], strict=False)
        ):
            return False
    if isinstance(value, dict) and sch.get("type") == "object":
        props = sch.get("properties", {})
        if any(k not in value for k in sch.get("required", ())):
            return False
        extra = sch.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                if not _conforms(item, props[key]):
                    return False
            elif extra is False or (isinstance(extra, dict) and not _conforms(item, extra)):
                return False
    return True


def _is_kind(value: Any, kind: str) -> bool:
    checks: dict[str, Any] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    return bool(checks[kind](value))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_schema_describes_every_value_of_the_type(data: st.DataObject) -> None:
    tp, values = data.draw(CASES)
    json_value, _ = data.draw(values)
    sch = json_schema(tp)
    assert _conforms(json_value, sch), (tp, json_value, sch)
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.Draft202012Validator(sch).validate(json_value)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_structure_round_trips_json_values(data: st.DataObject) -> None:
    tp, values = data.draw(CASES)
    json_value, expected = data.draw(values)
    result = structure(json_value, tp)
    assert result == expected
    assert type(result) is type(expected)


@given(
    st.one_of(
        st.text(),
        st.booleans(),
        st.floats(),
        st.lists(st.integers(), max_size=2),
        st.none(),
    )
)
def test_an_int_field_accepts_nothing_but_ints(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^\$\.x: expected an int, got "):
        structure({"x": value}, Point)


@given(st.text())
def test_a_string_is_never_a_list(value: str) -> None:
    with pytest.raises(ValueError, match=r"^\$\.points: expected a list, got "):
        structure({"points": value}, Shape)


def test_is_json_value() -> None:
    assert schema.is_json_value({"a": [1, "x", None]})
    assert schema.is_json_value(Color.RED)
    assert not schema.is_json_value(object())
    assert not schema.is_json_value(float("nan"))
