"""The schemas people already have: ``response_format`` and tool parameters take pydantic v2
models, dataclasses and TypedDicts as they take attrs classes — the same strategies, retries
and error wording, and answers and arguments arrive as instances of the class given."""

from __future__ import annotations

import dataclasses
import typing

import attrs
import pydantic
import pytest

import plait
from plait import schema
from plait.errors import ConfigError, StructuredOutputError
from plait.messages import AIMessage, ToolCall
from plait.testing import ScriptedChatModel, ai, call, tool_answers


class WeatherModel(pydantic.BaseModel):
    """The weather in a city."""

    city: str
    celsius: int = pydantic.Field(description="Temperature in degrees Celsius.")


@dataclasses.dataclass
class WeatherData:
    """The weather in a city."""

    city: str
    celsius: int


class WeatherDict(typing.TypedDict):
    city: str
    celsius: int


@attrs.frozen
class WeatherAttrs:
    city: str
    celsius: int


FORMATS = [WeatherModel, WeatherData, WeatherDict, WeatherAttrs]


def _agent(fmt: object, *answers: object, native: bool = True, **options: object) -> plait.Agent:
    model = ScriptedChatModel(list(answers), native_structured_output=native)
    return plait.create_agent(model, response_format=fmt, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
def test_the_native_strategy_answers_with_an_instance_of_the_class(fmt: type) -> None:
    agent = _agent(fmt, '{"city": "Paris", "celsius": 21}')
    result = agent.invoke("weather?")
    answer = result.structured_response
    if typing.is_typeddict(fmt):
        assert answer == {"city": "Paris", "celsius": 21}
    else:
        assert isinstance(answer, fmt)
        assert (answer.city, answer.celsius) == ("Paris", 21)
    sent = agent.model.requests[0].response_format  # type: ignore[attr-defined]
    assert sent["type"] == "object"
    assert sent["required"] == ["city", "celsius"]
    assert sent["properties"]["celsius"]["type"] == "integer"


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
def test_the_tool_strategy_and_retries_word_a_bad_answer_alike(fmt: type) -> None:
    bad = AIMessage(
        "", tool_calls=[ToolCall(fmt.__name__, {"city": "Rome", "celsius": "hot"}, "a")]
    )
    good = AIMessage("", tool_calls=[ToolCall(fmt.__name__, {"city": "Rome", "celsius": 30}, "b")])
    result = _agent(fmt, bad, good, native=False).invoke("weather?")
    redo = result.messages[2].text
    assert redo.startswith("Error: the answer does not match the required format: $.celsius: ")
    assert redo.endswith(f"got 'hot'. Call {fmt.__name__!r} again with a corrected answer.")
    answer = result.structured_response
    assert (answer["celsius"] if isinstance(answer, dict) else answer.celsius) == 30

    spent = _agent(fmt, '{"city": "Oslo"}', '{"city": "Oslo"}', output_retries=1)
    with pytest.raises(StructuredOutputError, match=r"\$\.celsius: required, but missing"):
        spent.invoke("weather?")


def test_pydantic_errors_are_worded_like_the_converter() -> None:
    with pytest.raises(StructuredOutputError) as info:
        _agent(WeatherModel, '{"city": 3, "celsius": "x"}', output_retries=0).invoke("w")
    assert str(info.value) == (
        "$.city: expected a valid string, got 3; $.celsius: expected a valid integer, "
        "unable to parse string as an integer, got 'x'"
    )


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
def test_an_answer_survives_the_checkpoint(fmt: type) -> None:
    # The run's result is read back from the checkpointed (JSON) form of the answer.
    model = ScriptedChatModel(['{"city": "Lima", "celsius": 19}'])
    agent = plait.create_agent(model, response_format=fmt, checkpointer="sqlite:///:memory:")
    first = agent.invoke("weather?", thread_id="t")
    assert first.structured_response == fmt(city="Lima", celsius=19)


def test_pydantic_schema_refs_are_inlined_and_field_descriptions_kept() -> None:
    class Address(pydantic.BaseModel):
        city: str

    class Person(pydantic.BaseModel):
        name: str
        home: Address
        past: list[Address] = []

    described = schema.json_schema(Person)
    assert "$defs" not in described
    assert described["properties"]["home"]["properties"]["city"]["type"] == "string"
    assert described["properties"]["past"]["items"]["required"] == ["city"]
    assert schema.json_schema(WeatherModel)["properties"]["celsius"]["description"] == (
        "Temperature in degrees Celsius."
    )


def test_a_recursive_pydantic_model_keeps_its_defs() -> None:
    class Node(pydantic.BaseModel):
        value: int
        children: list[Node] = []

    described = schema.json_schema(Node)
    assert "$defs" in described or "$ref" not in str(described)


def test_a_dataclass_schema_reads_defaults_and_docstrings() -> None:
    @dataclasses.dataclass
    class Query:
        """A search."""

        text: str
        """What to look for."""
        limit: int = 5
        tags: list[str] = dataclasses.field(default_factory=list)

    assert schema.json_schema(Query) == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "default": 5},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["text"],
        "additionalProperties": False,
        "description": "A search.",
    }


class Filter(pydantic.BaseModel):
    field: str
    value: int


@dataclasses.dataclass
class Page:
    size: int = 10


def test_tool_parameters_of_these_classes_get_schemas_and_instances() -> None:
    seen: list[object] = []

    @plait.tool
    def search(flt: Filter, page: Page, opts: WeatherDict) -> str:
        """Search.

        Args:
            flt: what to keep.
        """
        seen.extend([flt, page, opts])
        return "ok"

    props = search.parameters["properties"]
    assert props["flt"]["required"] == ["field", "value"]
    assert props["flt"]["description"] == "what to keep."
    assert props["page"]["properties"]["size"]["default"] == 10
    model = ScriptedChatModel(
        [
            ai("", call("search", "a", flt={"field": "x", "value": "no"}, page={}, opts={})),
            ai(
                "",
                call(
                    "search",
                    "b",
                    flt={"field": "x", "value": 2},
                    page={"size": 3},
                    opts={"city": "P", "celsius": 1},
                ),
            ),
            "done",
        ]
    )
    result = plait.create_agent(model, [search]).invoke("go")
    error = tool_answers(result.messages)["a"].text
    assert "argument 'flt.value': expected a valid integer" in error
    assert "'opts.city'" in error
    assert seen == [Filter(field="x", value=2), Page(3), {"city": "P", "celsius": 1}]


def test_bad_formats_are_refused_in_one_line_naming_the_option() -> None:
    class Plain:
        pass

    with pytest.raises(ConfigError) as info:
        plait.create_agent(ScriptedChatModel([]), response_format=Plain)
    assert str(info.value).startswith(
        "response_format: expected an attrs class, a dataclass, a TypedDict, a pydantic model "
        "or a JSON schema dict, got <class "
    )

    class Unschemable(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
        thing: Plain

    with pytest.raises(ConfigError) as info:
        plait.create_agent(ScriptedChatModel([]), response_format=Unschemable)
    text = str(info.value)
    assert text.startswith("response_format: expected a class whose fields have JSON schemas, got")
    assert "Unschemable as a JSON schema: Cannot generate a JsonSchema" in text
    assert "\n" not in text
