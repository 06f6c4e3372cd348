"""``@plait.tool`` / ``Tool``: the schema the model sees and the validation of its arguments."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import re
from typing import Any, Literal, Optional

import attrs
import pydantic
import pytest

import plait
from plait.errors import PlaitError
from plait.messages import ToolCall
from plait.tools import Tool, ToolArgumentError, tool
from plait.types import Runtime, ToolRuntime


@attrs.frozen
class Address:
    street: str
    zip_code: int | None = None


@tool
def book_trip(
    city: str,
    nights: int = 1,
    cabin: Literal["economy", "business"] = "economy",
    guests: list[str] | None = None,
    address: Address | None = None,
    note: Optional[str] = None,  # noqa: UP045 (the typing spelling must work too)
    budget: float = 100.0,
) -> str:
    """Book a trip to a city.

    Books flights and a hotel.

    Args:
        city: The destination city.
        nights: How many nights
            to stay.
        cabin: The flight cabin.
    """
    return f"{city}:{nights}"


def _runtime() -> ToolRuntime:
    return ToolRuntime(ToolCall("t", {}, id="call_1"), {"messages": []}, Runtime(None, "run_1"))


# --------------------------------------------------------------------------- schema


def test_schema_from_a_typed_documented_function() -> None:
    assert book_trip.name == "book_trip"
    assert book_trip.description == "Book a trip to a city.\n\nBooks flights and a hotel."
    assert book_trip.func is not None
    params = book_trip.parameters
    assert params["type"] == "object"
    assert params["required"] == ["city"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["city"] == {"type": "string", "description": "The destination city."}
    assert props["nights"] == {
        "type": "integer",
        "description": "How many nights to stay.",
        "default": 1,
    }
    assert props["cabin"] == {
        "type": "string",
        "enum": ["economy", "business"],
        "description": "The flight cabin.",
        "default": "economy",
    }
    assert props["guests"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "default": None,
    }
    assert props["note"] == {"type": ["string", "null"], "default": None}
    assert props["budget"] == {"type": "number", "default": 100.0}
    address = props["address"]["anyOf"][0]
    assert address == {
        "type": "object",
        "properties": {
            "street": {"type": "string"},
            "zip_code": {"type": ["integer", "null"], "default": None},
        },
        "required": ["street"],
        "additionalProperties": False,
    }


def test_plait_exports_the_same_decorator() -> None:
    assert plait.tool is tool
    assert plait.Tool is Tool


def test_decorator_arguments_override_name_and_description() -> None:
    @tool(name="lookup", description="Look a word up.", provider_options={"x": {"y": 1}})
    def find(word: str) -> str:
        """Ignored docstring."""
        return word

    assert (find.name, find.description) == ("lookup", "Look a word up.")
    assert find.provider_options == {"x": {"y": 1}}

    @tool("named")
    def other(word: str) -> str:
        """Doc."""
        return word

    assert other.name == "named"


def test_parse_docstring_false_keeps_the_whole_docstring() -> None:
    @tool(parse_docstring=False)
    def f(a: int) -> int:
        """Summary.

        Args:
            a: A number.
        """
        return a

    assert f.description == "Summary.\n\nArgs:\n    a: A number."
    assert "description" not in f.parameters["properties"]["a"]


def test_from_function_matches_the_decorator() -> None:
    def g(a: int, b: str = "x") -> str:
        """Join."""
        return b * a

    built = Tool.from_function(g, name="joiner")
    assert built.name == "joiner"
    assert built.parameters == tool(g).parameters
    assert built.func is g


def test_runtime_parameter_is_hidden_and_injected() -> None:
    @tool
    def where(city: str, runtime: ToolRuntime) -> str:
        """Say where."""
        return runtime.tool_call_id + city

    @tool
    def maybe(city: str, rt: ToolRuntime | None = None) -> str:
        """Say where."""
        return city

    assert list(where.parameters["properties"]) == ["city"]
    assert where.parameters["required"] == ["city"]
    assert list(maybe.parameters["properties"]) == ["city"]
    runtime = _runtime()
    kwargs = where.prepare({"city": "Rome"}, runtime)
    assert kwargs == {"city": "Rome", "runtime": runtime}
    assert where.func is not None and where.func(**kwargs) == "call_1Rome"
    assert maybe.prepare({"city": "Rome"}, runtime)["rt"] is runtime
    # the model cannot fill the runtime parameter itself
    with pytest.raises(ToolArgumentError, match="unknown argument 'runtime'"):
        where.prepare({"city": "Rome", "runtime": "fake"}, runtime)


def test_unannotated_parameter_accepts_anything() -> None:
    @tool
    def echo(value, times: int = 1):  # type: ignore[no-untyped-def]
        """Echo."""
        return value

    assert echo.parameters["properties"]["value"] == {}
    assert echo.prepare({"value": {"any": ["thing"]}}, None) == {"value": {"any": ["thing"]}}


def test_is_async_follows_the_function() -> None:
    @tool
    async def fetch(url: str) -> str:
        """Fetch."""
        await asyncio.sleep(0)
        return url

    assert fetch.is_async
    assert not book_trip.is_async
    assert fetch.func is not None
    assert asyncio.run(fetch.func(**fetch.prepare({"url": "u"}, None))) == "u"


class _Opaque:
    pass


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(*args: int) -> None: ...", r"tool function f, parameter 'args': \*args"),
        ("def f(**kw: int) -> None: ...", r"tool function f, parameter 'kw': \*args/\*\*kwargs"),
        ("def f(a: int, /) -> None: ...", r"parameter 'a': positional-only"),
        ("def f(x: _Opaque) -> None: ...", r"parameter 'x': unsupported type hint .*_Opaque"),
        ("def f(x: 'NoSuchName') -> None: ...", r"tool function f: cannot read its type hints"),
    ],
)
def test_unsupported_parameters_fail_at_decoration(source: str, message: str) -> None:
    namespace: dict[str, Any] = {"_Opaque": _Opaque}
    exec(source, namespace)
    with pytest.raises(TypeError, match=message):
        tool(namespace["f"])


# --------------------------------------------------------------------------- prepare


def test_prepare_structures_arguments_and_leaves_defaults_to_the_function() -> None:
    kwargs = book_trip.prepare(
        {"city": "Paris", "guests": ["ann", "bob"], "address": {"street": "Rue 1"}, "budget": 80},
        None,
    )
    assert kwargs == {
        "city": "Paris",
        "guests": ["ann", "bob"],
        "address": Address("Rue 1"),
        "budget": 80.0,
    }
    assert isinstance(kwargs["budget"], float)
    assert book_trip.func is not None and book_trip.func(**kwargs) == "Paris:1"


def test_bad_arguments_give_a_precise_model_readable_message() -> None:
    with pytest.raises(ToolArgumentError) as info:
        book_trip.prepare(
            {"nights": "two", "cabin": "first", "guests": "ann", "address": {"street": 5}}, None
        )
    text = str(info.value)
    assert "missing required argument 'city'" in text
    assert "argument 'nights': expected an int, got 'two'" in text
    assert "argument 'cabin': expected one of 'economy', 'business', got 'first'" in text
    assert "argument 'guests': expected a list or None, got 'ann'" in text
    assert "argument 'address.street': expected a string, got 5" in text
    assert info.value.tool_name == "book_trip"
    assert {p.path for p in info.value.problems} == {
        "city",
        "nights",
        "cabin",
        "guests",
        "address.street",
    }
    assert isinstance(info.value, PlaitError)


@pytest.mark.parametrize("value", [1.7, True, "3", None])
def test_ints_are_not_coerced(value: Any) -> None:
    with pytest.raises(ToolArgumentError, match=r"argument 'nights': expected an int, got"):
        book_trip.prepare({"city": "x", "nights": value}, None)


def test_unknown_arguments_are_named_with_the_valid_ones() -> None:
    with pytest.raises(ToolArgumentError) as info:
        book_trip.prepare({"city": "x", "country": "fr", "stars": 4}, None)
    assert str(info.value) == (
        "unknown arguments 'country', 'stars' (this tool takes: city, nights, cabin, guests, "
        "address, note, budget)"
    )


def test_unknown_key_in_a_nested_object_is_reported_at_its_path() -> None:
    with pytest.raises(ToolArgumentError, match=r"argument 'address': unknown key 'floor'"):
        book_trip.prepare({"city": "x", "address": {"street": "s", "floor": 2}}, None)


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(ToolArgumentError, match=r"expected an object of named arguments"):
        book_trip.prepare(["Paris"], None)  # type: ignore[arg-type]


def test_prepare_does_not_call_the_function() -> None:
    calls: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        calls.append(n)
        return n

    assert count.prepare({"n": 3}, None) == {"n": 3}
    assert calls == []


# --------------------------------------------------------------------------- raw schema tools


RAW = Tool(
    "search",
    "Search the web.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "deep"]},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    func=lambda query, limit=5, mode="fast": f"{query}/{limit}/{mode}",
)


def test_raw_schema_tool_checks_required_unknown_and_top_level_types() -> None:
    assert RAW.prepare({"query": "q", "limit": 2}, None) == {"query": "q", "limit": 2}
    with pytest.raises(ToolArgumentError) as info:
        RAW.prepare({"limit": True, "mode": "slow", "page": 2}, None)
    text = str(info.value)
    assert "missing required argument 'query'" in text
    assert "argument 'limit': expected an int, got True" in text
    assert "argument 'mode': expected one of 'fast', 'deep', got 'slow'" in text
    assert "unknown argument 'page' (this tool takes: query, limit, mode)" in text


def test_raw_schema_without_additional_properties_false_allows_extra_keys() -> None:
    open_tool = Tool("t", "T.", {"type": "object", "properties": {}}, func=lambda **kw: kw)
    assert open_tool.prepare({"anything": 1}, None) == {"anything": 1}


def test_provider_executed_tool_has_no_function() -> None:
    server = Tool("web_search", "", {}, None, {"anthropic": {"type": "web_search_20250305"}})
    assert server.func is None
    assert not server.is_async
    assert server.provider_options["anthropic"]["type"] == "web_search_20250305"


def test_tool_fields_are_validated() -> None:
    with pytest.raises(ValueError, match="name"):
        Tool("", "d", {})
    with pytest.raises(TypeError, match="func"):
        Tool("t", "d", {}, func="not callable")  # type: ignore[arg-type]


def test_tools_are_hashable_and_compare_by_identity() -> None:
    copy = Tool(RAW.name, RAW.description, RAW.parameters, RAW.func)
    assert copy != RAW
    assert {RAW, copy, RAW} == {RAW, copy}


def test_error_text_contains_no_python_repr_noise() -> None:
    with pytest.raises(ToolArgumentError) as info:
        book_trip.prepare({"city": ["x"]}, None)
    assert not re.search(r"<class|Traceback|cattrs", str(info.value))


# --------------------------------------------------------------------------- through an agent


def test_agent_answers_bad_arguments_with_an_error_the_model_reads(make_agent: Any) -> None:
    from plait.testing import ai, call

    seen: list[dict[str, Any]] = []

    @tool
    def forecast(city: str, days: int = 1, runtime: ToolRuntime | None = None) -> str:
        """Forecast the weather."""
        assert runtime is not None
        seen.append({"city": city, "days": days, "call": runtime.tool_call_id})
        return f"sun in {city} for {days}"

    agent = make_agent(
        [
            ai("", call("forecast", id="c1", city="Oslo", days="two")),
            ai("", call("forecast", id="c2", city="Oslo", days=2)),
            ai("done"),
        ],
        tools=[forecast],
    )
    result = agent.invoke("weather?")
    tool_messages = [m for m in result.messages if m.type == "tool"]
    assert tool_messages[0].status == "error"
    assert "argument 'days': expected an int, got 'two'" in tool_messages[0].text
    assert tool_messages[1].text == "sun in Oslo for 2"
    assert seen == [{"city": "Oslo", "days": 2, "call": "c2"}]
    # the model was shown the schema without the injected parameter
    sent = agent.model.requests[0].tools[0]
    assert list(sent.parameters["properties"]) == ["city", "days"]


def test_schema_tool_gets_the_runtime_by_keyword() -> None:
    def call(runtime: ToolRuntime, **arguments: Any) -> str:
        return f"{runtime.tool_call_id}:{arguments}"

    schema_tool = Tool(
        name="lookup",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        func=call,
        runtime_parameter="runtime",
    )
    runtime = _runtime()
    kwargs = schema_tool.prepare({"q": "x"}, runtime)
    assert kwargs == {"q": "x", "runtime": runtime}
    assert schema_tool.runtime_parameter == "runtime"
    assert call(**kwargs) == "call_1:{'q': 'x'}"


class Order(pydantic.BaseModel):
    number: str
    placed: datetime.date


@dataclasses.dataclass
class Parcel:
    order: Order
    weight_kg: float


def test_a_tool_returning_a_model_dataclass_or_attrs_object_answers_with_its_json(
    make_agent: Any,
) -> None:
    """A tool declared ``-> Order`` (pydantic), a dataclass or an attrs class: the model reads
    the object's fields as JSON (dates as ISO text), not its Python ``repr``."""
    from plait.testing import ai, call, tool_answers

    @tool
    def order(number: str) -> Order:
        """Look an order up."""
        return Order(number=number, placed=datetime.date(2026, 12, 5))

    @tool
    def parcel(number: str) -> Parcel:
        """Look a parcel up."""
        return Parcel(Order(number=number, placed=datetime.date(2026, 12, 5)), 1.5)

    @tool
    def address() -> Address:
        """The shipping address."""
        return Address("Main St 1", 1042)

    agent = make_agent(
        [
            ai(
                "",
                call("order", id="c1", number="A7"),
                call("parcel", id="c2", number="A7"),
                call("address", id="c3"),
            ),
            "done",
        ],
        tools=[order, parcel, address],
    )
    answers = tool_answers(agent.invoke("where is A7?").messages)
    assert answers["c1"].text == '{"number": "A7", "placed": "2026-12-05"}'
    assert answers["c2"].text == (
        '{"order": {"number": "A7", "placed": "2026-12-05"}, "weight_kg": 1.5}'
    )
    assert answers["c3"].text == '{"street": "Main St 1", "zip_code": 1042}'
