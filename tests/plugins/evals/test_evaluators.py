"""plait-evals' evaluators in process: the trajectory read from plait-otel's spans (not
the messages), the JSON-schema check, the token budget, the judge on a plait model over
real HTTP, and pass@k."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from plait.replay import ReplayServer
from plait_evals import (
    Evaluation,
    MaxCost,
    MaxTokens,
    OutputMatchesSchema,
    load_dataset,
    pass_at_k,
)
from plait_evals._facts import facts

ROOT = Path(__file__).resolve().parents[3]


@dataclass(repr=False)
class FactSource(Evaluator[object, object, object]):
    """Labels each case with where its facts were read and the tools they name."""

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> dict[str, str]:
        run = facts(ctx)
        return {"source": run.source, "tools": ",".join(run.tools)}


def _work(tmp_path: Path, dataset: str) -> tuple[Path, Path]:
    for name in ("support.toml", "support_tools.py"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    (tmp_path / "d.yaml").write_text(dataset)
    return tmp_path / "d.yaml", tmp_path / "support.toml"


def _run(dataset: Path, agent: Path, **kw: Any) -> Any:
    data = load_dataset(dataset, **kw)
    for case in data.dataset.cases:
        case.evaluators.append(FactSource())
    evaluation = Evaluation(data, agent)
    return anyio.run(lambda: evaluation.run())


def test_the_trajectory_comes_from_the_spans(tmp_path: Path) -> None:
    dataset, agent = _work(
        tmp_path,
        """
cases:
  - name: refund
    inputs: {prompt: Refund orders 1042 and 2077., resume: [{decisions: [{type: approve}]}]}
    evaluators:
      - ToolTrajectory: {tools: [lookup_order, lookup_order, issue_refund]}
      - ToolTrajectory: {tools: [issue_refund, lookup_order], mode: unordered}
      - ToolTrajectory: {tools: [issue_refund, lookup_order], mode: subset}
      - MaxTokens: 10
""",
    )
    report = _run(dataset, agent)
    (case,) = report.cases
    assert case.labels["source"].value == "spans"
    assert case.labels["tools"].value == "lookup_order,lookup_order,issue_refund"
    results = [r.value for r in case.assertions.values()]
    assert [r.reason for r in case.assertions.values()][1] == (
        "expected ['issue_refund', 'lookup_order'] (unordered), called "
        "['lookup_order', 'lookup_order', 'issue_refund']"
    )
    assert results == [True, False, True, False]  # ordered, unordered, subset, tokens


def test_json_schema_of_the_output() -> None:
    schema = {
        "type": "object",
        "required": ["amount"],
        "properties": {"amount": {"type": "number"}},
    }
    check = OutputMatchesSchema(schema)

    def ctx(output: Any) -> Any:
        return EvaluatorContext(
            name="c", inputs="", metadata=None, expected_output=None, output=output,
            duration=0.0, _span_tree=None, attributes={}, metrics={},  # type: ignore[arg-type]
        )  # fmt: skip

    assert check.evaluate(ctx('{"amount": 25.0}')).value is True
    assert check.evaluate(ctx({"amount": "25"})) == EvaluationReason(
        False, "amount: '25' is not of type 'number'"
    )
    result = check.evaluate(ctx("Refunded."))
    assert result.value is False and str(result.reason).startswith("the output is not JSON")


def test_the_judge_runs_on_a_plait_model_over_http(
    tmp_path: Path, replay_server: ReplayServer
) -> None:
    answer = {"reason": "It names the amount and the order.", "passed": True}
    replay_server.json(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "gpt-4.1-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": json.dumps(answer)},
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
        }
    )
    dataset, agent = _work(
        tmp_path,
        f"""
plait:
  judge_model: openai:gpt-4.1-mini
cases:
  - name: refund
    inputs: {{prompt: Please refund order 1042., resume: [{{decisions: [{{type: approve}}]}}]}}
    evaluators:
      - PlaitJudge:
          rubric: The answer says how much was refunded for which order.
          include_input: true
          model_settings: {{base_url: "{replay_server.url}/v1", api_key: test}}
""",
    )
    report = _run(dataset, agent)
    (case,) = report.cases
    verdict = case.assertions["PlaitJudge"]
    assert verdict.value is True and verdict.reason == "It names the amount and the order."
    sent = replay_server.last.body
    assert sent["model"] == "gpt-4.1-mini"
    prompt = sent["messages"][-1]["content"]
    assert "<input>\nPlease refund order 1042.\n</input>" in prompt
    assert "<output>\nRefunded 25.00 EUR for order 1042.\n</output>" in prompt
    assert "The answer says how much was refunded" in prompt


def test_a_judge_without_a_model_is_refused(tmp_path: Path) -> None:
    dataset, _ = _work(
        tmp_path,
        "cases:\n  - name: a\n    inputs: hi\n    evaluators:\n      - PlaitJudge: Polite?\n",
    )
    with pytest.raises(Exception, match=r"case 'a': PlaitJudge: expected a model .*got none$"):
        load_dataset(dataset)


def test_pass_at_k() -> None:
    assert pass_at_k(4, 0, 2) == 0.0
    assert pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 1, 1) == 0.25
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(4, 3, 2) == 1.0


def test_cost_and_token_budgets_read_the_runs_usage() -> None:
    def ctx(metrics: dict[str, float]) -> Any:
        return EvaluatorContext(
            name="c", inputs="", metadata=None, expected_output=None, output="",
            duration=0.0, _span_tree=None, attributes={}, metrics=metrics,  # type: ignore[arg-type]
        )  # fmt: skip

    assert MaxCost(0.01).evaluate(ctx({"cost": 0.004})).value is True
    assert MaxCost(0.01).evaluate(ctx({"cost": 0.02})) == EvaluationReason(
        False, "0.02 dollars, more than 0.01"
    )
    # no price known: the gate does not pass by not knowing
    assert MaxCost(0.01).evaluate(ctx({})) == EvaluationReason(False, "the run reported no dollars")
    assert MaxTokens(100).evaluate(ctx({"input_tokens": 80, "output_tokens": 30})).value is False
