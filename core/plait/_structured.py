"""Structured output: the agent's ``response_format`` as a schema, a parser and, for
models without native structured output, a final-answer tool."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from plait._convert import expected
from plait.errors import ConfigError, StructuredOutputError

if TYPE_CHECKING:
    from plait.messages import AIMessage
    from plait.tools import Tool


class Structured:
    """How this agent gets and checks its final answer (``response_format=None``: it
    doesn't). ``format`` is an attrs class (answers become instances) or a JSON schema
    (answers stay dicts, checked at the top level)."""

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

        is_class = isinstance(response_format, type) and attrs.has(response_format)
        if not (is_class or isinstance(response_format, Mapping)):
            wanted = "an attrs class or a JSON schema dict"
            raise ConfigError(f"response_format: {expected(wanted, response_format)}")
        self.schema = schema.json_schema(response_format)
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
        if isinstance(self.format, type) and isinstance(value, self.format):
            from plait.messages import converter

            return converter.unstructure(value)
        return value

    def load(self, data: Any) -> Any:
        if data is None or not isinstance(self.format, type):
            return data
        return self.parse_args(data)
