"""plait-evals: ``plait eval DATASET.yaml AGENT.toml`` on pydantic-evals.

A dataset is pydantic-evals' own file format; the evaluators here read what a plait run
did from the OpenTelemetry spans plait-otel emits (tool trajectory, model calls, tokens)
or judge its output with any plait model.
"""

from plait_evals.dataset import CaseInput, EvalDataset, EvalError, load_dataset
from plait_evals.evaluators import (
    MaxCost,
    MaxTokens,
    OutputMatchesSchema,
    PlaitJudge,
    ToolTrajectory,
)
from plait_evals.runner import Evaluation, run_eval
from plait_evals.summary import Summary, compare, pass_at_k, summarize

__all__ = [
    "CaseInput",
    "EvalDataset",
    "EvalError",
    "Evaluation",
    "MaxCost",
    "MaxTokens",
    "OutputMatchesSchema",
    "PlaitJudge",
    "Summary",
    "ToolTrajectory",
    "compare",
    "load_dataset",
    "pass_at_k",
    "run_eval",
    "summarize",
]
