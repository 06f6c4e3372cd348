"""plait-evals: ``plait eval DATASET.yaml AGENT.toml`` on pydantic-evals.

A dataset is pydantic-evals' own file format; the evaluators here read what a plait run
did from the OpenTelemetry spans plait-otel emits (tool trajectory, model calls, tokens)
or judge its output with any plait model.

Names load on first use: the ``plait`` CLI imports ``plait_evals.command`` (so this
package) on every invocation, ``plait --help`` included, and pydantic-evals only when
``plait eval`` runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.lazy import lazy_exports

_EXPORTS = {
    "CaseInput": "plait_evals.dataset",
    "EvalDataset": "plait_evals.dataset",
    "EvalError": "plait_evals.dataset",
    "Evaluation": "plait_evals.runner",
    "MaxCost": "plait_evals.evaluators",
    "MaxTokens": "plait_evals.evaluators",
    "OutputMatchesSchema": "plait_evals.evaluators",
    "PlaitJudge": "plait_evals.evaluators",
    "Summary": "plait_evals.summary",
    "ToolTrajectory": "plait_evals.evaluators",
    "compare": "plait_evals.summary",
    "load_dataset": "plait_evals.dataset",
    "pass_at_k": "plait_evals.summary",
    "run_eval": "plait_evals.runner",
    "summarize": "plait_evals.summary",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from plait_evals.dataset import CaseInput as CaseInput
    from plait_evals.dataset import EvalDataset as EvalDataset
    from plait_evals.dataset import EvalError as EvalError
    from plait_evals.dataset import load_dataset as load_dataset
    from plait_evals.evaluators import MaxCost as MaxCost
    from plait_evals.evaluators import MaxTokens as MaxTokens
    from plait_evals.evaluators import OutputMatchesSchema as OutputMatchesSchema
    from plait_evals.evaluators import PlaitJudge as PlaitJudge
    from plait_evals.evaluators import ToolTrajectory as ToolTrajectory
    from plait_evals.runner import Evaluation as Evaluation
    from plait_evals.runner import run_eval as run_eval
    from plait_evals.summary import Summary as Summary
    from plait_evals.summary import compare as compare
    from plait_evals.summary import pass_at_k as pass_at_k
    from plait_evals.summary import summarize as summarize
