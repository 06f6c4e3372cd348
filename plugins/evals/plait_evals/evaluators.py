"""The evaluators plait-evals adds to pydantic-evals' own, named in a dataset file the
same way: ``- ToolTrajectory: {tools: [lookup_order], mode: ordered}``.

pydantic-evals' span evaluators (``MaxToolCalls``, ``MaxModelRequests``,
``TrajectoryMatch``, ``ToolCorrectness``, ``ArgumentCorrectness``, ``HasMatchingSpan``)
read the GenAI spans plait-otel emits as they are; these add what they lack: a pass/fail
trajectory with ``subset``, token and cost budgets, a JSON-schema check of the output and
a judge on a plait model.

They are pydantic-evals ``Evaluator`` dataclasses (that is how its datasets build and
serialize them). Each returns an ``EvaluationReason``: a pass/fail with the reason it
failed, which the report shows.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jsonschema  # type: ignore[import-untyped]
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from plait.lazy import frozen
from plait_evals._facts import facts

__all__ = [
    "EVALUATORS",
    "MaxCost",
    "MaxTokens",
    "OutputMatchesSchema",
    "PlaitJudge",
    "ToolTrajectory",
]

MODES = ("ordered", "unordered", "subset")


def _output_json(output: Any) -> Any:
    """The output as JSON data: a structured response as it is, text parsed as JSON."""
    if isinstance(output, str):
        return json.loads(output)
    return output


@dataclass(repr=False)
class OutputMatchesSchema(Evaluator[object, object, object]):
    """The output (a structured response, or text holding JSON) fits a JSON schema."""

    json_schema: dict[str, Any]

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> EvaluationReason:
        try:
            data = _output_json(ctx.output)
        except ValueError as exc:
            return EvaluationReason(False, f"the output is not JSON: {exc}")
        try:
            jsonschema.validate(data, self.json_schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "the output"
            return EvaluationReason(False, f"{where}: {exc.message}")
        return EvaluationReason(True)


@dataclass(repr=False)
class ToolTrajectory(Evaluator[object, object, object]):
    """The tools the run called, by name, read from its ``execute_tool`` spans.

    ``ordered``: exactly these calls in this order; ``unordered``: exactly these calls in
    any order; ``subset``: at least these calls (others may come too), in any order.
    """

    tools: list[str]
    mode: str = "ordered"

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> EvaluationReason:
        called = list(facts(ctx).tools)
        want = list(self.tools)
        if self.mode == "ordered":
            ok = called == want
        elif self.mode == "unordered":
            ok = sorted(called) == sorted(want)
        else:
            rest = list(called)
            ok = True
            for name in want:
                if name not in rest:
                    ok = False
                    break
                rest.remove(name)
        if ok:
            return EvaluationReason(True)
        return EvaluationReason(False, f"expected {want} ({self.mode}), called {called}")


@dataclass(repr=False)
class _Limit(Evaluator[object, object, object]):
    """At most ``limit`` of something the run did."""

    limit: float
    what: ClassVar[str]

    @abc.abstractmethod
    def measure(self, ctx: EvaluatorContext[object, object, object]) -> float | None:
        """The amount the run used, or ``None`` when the run reported none."""

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> EvaluationReason:
        value = self.measure(ctx)
        if value is None:
            return EvaluationReason(False, f"the run reported no {self.what}")
        if value <= self.limit:
            return EvaluationReason(True)
        return EvaluationReason(False, f"{value:g} {self.what}, more than {self.limit:g}")


@dataclass(repr=False)
class MaxTokens(_Limit):
    """At most ``limit`` tokens, input and output together, over the case's runs: the
    runs' ``Usage``, which counts sub-agents and estimates what a model did not report
    (the spans carry only what models reported)."""

    what: ClassVar[str] = "tokens"

    def measure(self, ctx: EvaluatorContext[object, object, object]) -> float:
        return ctx.metrics.get("input_tokens", 0) + ctx.metrics.get("output_tokens", 0)


@dataclass(repr=False)
class MaxCost(_Limit):
    """At most ``limit`` dollars, as plait priced the run's calls (``Usage.cost``); a run
    whose model has no price fails, so a cost gate never passes by not knowing."""

    what: ClassVar[str] = "dollars"

    def measure(self, ctx: EvaluatorContext[object, object, object]) -> float | None:
        return ctx.metrics.get("cost")


@frozen
class Grade:
    """The judge's answer."""

    reason: str
    passed: bool


JUDGE_PROMPT = """You grade the output of an AI agent against a rubric.
Answer with JSON only: {"reason": "<one or two sentences>", "passed": true or false}."""


@dataclass(repr=False)
class PlaitJudge(Evaluator[object, object, object]):
    """An LLM judge on any plait model id (``openai:gpt-4.1-mini``, ``anthropic:…``, a
    local server): passes when the model says the output meets ``rubric``. ``model``
    defaults to ``plait eval --judge-model`` (or the dataset's ``plait.judge_model``)."""

    rubric: str
    model: str | None = None
    include_input: bool = False
    include_expected_output: bool = False
    model_settings: dict[str, Any] = field(default_factory=dict)
    _agent: Any = field(default=None, init=False, compare=False)

    def build_serialization_arguments(self) -> dict[str, Any]:
        arguments = super().build_serialization_arguments()
        arguments.pop("_agent", None)
        return arguments

    def judge(self) -> Any:
        """The judge agent, built once."""
        if self._agent is None:
            from plait.agent import create_agent
            from plait.models import init_chat_model

            if self.model is None:
                raise ValueError("PlaitJudge: expected a model id, got none")
            model = init_chat_model(self.model, **self.model_settings)
            self._agent = create_agent(
                model, system_prompt=JUDGE_PROMPT, response_format=Grade, name="judge"
            )
        return self._agent

    async def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> EvaluationReason:
        parts = []
        if self.include_input:
            given = ctx.inputs
            if isinstance(given, dict) and "prompt" in given:  # not the resumes and replay
                given = given["prompt"]
            parts.append(f"<input>\n{_text(given)}\n</input>")
        parts.append(f"<output>\n{_text(ctx.output)}\n</output>")
        if self.include_expected_output and ctx.expected_output is not None:
            parts.append(f"<expected_output>\n{_text(ctx.expected_output)}\n</expected_output>")
        parts.append(f"<rubric>\n{self.rubric}\n</rubric>")
        result = await self.judge().ainvoke("\n".join(parts))
        grade: Grade = result.structured_response
        return EvaluationReason(grade.passed, grade.reason)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


EVALUATORS: tuple[type[Evaluator[Any, Any, Any]], ...] = (
    OutputMatchesSchema,
    ToolTrajectory,
    MaxTokens,
    MaxCost,
    PlaitJudge,
)
"""Given to pydantic-evals' ``Dataset.from_file`` so a dataset file can name them."""
