"""Structured output: the agent's ``response_format`` as a schema, a parser and, for
models without native structured output, a final-answer tool."""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from plait._convert import expected, is_dataclass_type, is_pydantic_model
from plait.errors import ConfigError, StructuredOutputError

if TYPE_CHECKING:
    from plait.messages import AIMessage
    from plait.tools import Tool


_FORMS = "an attrs class, a dataclass, a TypedDict, a pydantic model or a JSON schema dict"


def is_schema_class(tp: Any) -> bool:
    """Whether ``tp`` is a class a structured answer can be made into."""
    return isinstance(tp, type) and (
        attrs.has(tp) or is_dataclass_type(tp) or typing.is_typeddict(tp) or is_pydantic_model(tp)
    )


class Structured:
    """How this agent gets and checks its final answer (``response_format=None``: it
    doesn't). ``format`` is a class (attrs, dataclass, TypedDict or pydantic model: answers
    become its instances, a TypedDict's are dicts) or a JSON schema (answers stay dicts,
    checked at the top level)."""

    def __init__(self, response_format: Any, native: bool, retries: int = 1) -> None:
        self.format = response_format
        self.retries = retries
        """Answers not in the format a run asks the model to redo before it fails."""
        self.schema: dict[str, Any] | None = None
        self.native = False
        self.tool: Tool | None = None
        if response_format is None:
            return
        from plait import schema

        is_class = is_schema_class(response_format)
        if not (is_class or isinstance(response_format, Mapping)):
            raise ConfigError(f"response_format: {expected(_FORMS, response_format)}")
        try:
            self.schema = schema.json_schema(response_format)
        except TypeError as exc:
            wanted = "a class whose fields have JSON schemas"
            problem = expected(wanted, response_format, str(exc))
            raise ConfigError(f"response_format: {problem}") from None
        self.native = native
        if not native:
            from plait.tools import Tool

            name = response_format.__name__ if is_class else self.schema.get("title")
            self.tool = Tool(
                name=str(name or "final_answer"),
                description=(
                    "Give the final answer in the required format. Call this once, when you "
                    "have everything the answer needs; the run ends with it."
                ),
                parameters=self.schema,
                func=None,
            )

    @property
    def request_format(self) -> dict[str, Any] | None:
        return self.schema if self.native else None

    def tool_choice(self, tools: Sequence[Tool]) -> str | None:
        """The answer tool forced (or, beside the agent's own tools, some tool forced), so
        a model that can be made to call tools gives its answer through the tool."""
        if self.tool is None:
            return None
        return "required" if tools else self.tool.name

    def check_answered(self, message: AIMessage) -> None:
        """A final answer in text where the answer tool was expected: the tool strategy's
        failure, raised as the native strategy raises an answer that does not parse."""
        if self.tool is None or message.tool_calls:
            return
        raise StructuredOutputError(
            f"the model answered in text instead of calling the answer tool "
            f"{self.tool.name!r}, so there is no structured answer: {message.text[:200]!r}"
        )

    def parse_args(self, data: Any) -> Any:
        from plait import schema

        try:
            return schema.structure(data, self.format)
        except ValueError as exc:
            raise StructuredOutputError(str(exc)) from exc

    def parse_text(self, text: str) -> Any:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StructuredOutputError(
                f"the model's final answer is not JSON ({exc.msg}): {text[:200]!r}"
            ) from None
        return self.parse_args(data)

    def dump(self, value: Any) -> Any:
        """A JSON-able form of the answer, for the checkpoint."""
        fmt = self.format
        if is_pydantic_model(fmt) and isinstance(value, fmt):
            return value.model_dump(mode="json")
        if (attrs.has(fmt) or is_dataclass_type(fmt)) and isinstance(value, fmt):
            from plait.messages import converter

            return converter.unstructure(value)
        return value

    def load(self, data: Any) -> Any:
        if data is None or not isinstance(self.format, type):
            return data
        return self.parse_args(data)
