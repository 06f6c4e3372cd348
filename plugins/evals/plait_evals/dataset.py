"""A dataset file: pydantic-evals' own YAML/JSON format (``cases`` with ``name``,
``inputs``, ``expected_output``, ``evaluators``; dataset-wide ``evaluators``), plus a
``plait`` table for what only a plait agent needs.

A case's ``inputs`` is the prompt, or a mapping ``{prompt, resume, replay}``: ``resume``
answers the run's pauses in order (each a ``Command(resume=...)`` value, e.g. the
decisions of human_in_the_loop), ``replay`` a recording (``plait run --record``, or
``plait eval --record DIR``) that answers the case's model calls and tool runs offline.

The dataset's ``plait`` table: ``replay`` (a recording for every case, or a folder of
``<case name>.jsonl``), ``replay_mode``, ``judge_model`` (PlaitJudge's default).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml  # type: ignore[import-untyped]
from pydantic import ValidationError
from pydantic_evals import Dataset

from plait.errors import ConfigError
from plait.lazy import frozen
from plait_evals.evaluators import EVALUATORS, MODES, PlaitJudge, ToolTrajectory

__all__ = ["CaseInput", "EvalDataset", "EvalError", "load_dataset"]


class EvalError(ConfigError):
    """A dataset, a case or a recording that cannot be evaluated: said in one line,
    before any case runs."""


@frozen
class CaseInput:
    """What a case asks the agent."""

    prompt: Any
    resume: tuple[Any, ...] = ()
    replay: Path | None = None


@frozen
class Settings:
    """The dataset's ``plait`` table."""

    replay: Path | None = None
    replay_mode: str = "strict"
    judge_model: str | None = None


@frozen
class EvalDataset:
    """A dataset file read and checked by ``load_dataset``: pydantic-evals' ``dataset``,
    each case's ``inputs`` by case name, and the file's ``plait`` table (``settings``)."""

    path: Path
    dataset: Dataset[Any, Any, Any]
    inputs: dict[str, CaseInput]  # by case name
    settings: Settings

    def replay_for(self, case: str) -> Path | None:
        """The recording that answers ``case``: its own, the dataset's file, or
        ``<case>.jsonl`` in the dataset's folder."""
        own = self.inputs[case].replay
        if own is not None:
            return own
        shared = self.settings.replay
        if shared is not None and shared.is_dir():
            return shared / f"{case}.jsonl"
        return shared


def _fail(path: Path, message: str) -> EvalError:
    return EvalError(f"plait eval: {path}: {message}")


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def _case_input(path: Path, name: str, raw: Any) -> CaseInput:
    base = path.parent
    if not isinstance(raw, Mapping):
        return CaseInput(raw)
    unknown = sorted(set(raw) - {"prompt", "resume", "replay"})
    if unknown or "prompt" not in raw:
        got = f"{unknown[0]!r}" if unknown else "no 'prompt'"
        raise _fail(
            path,
            f"case {name!r}: inputs: expected a prompt or {{prompt, resume, replay}}, got {got}",
        )
    resume = raw.get("resume", [])
    if not isinstance(resume, list):
        resume = [resume]  # one pause
    replay = raw.get("replay")
    if replay is not None and not isinstance(replay, str):
        raise _fail(path, f"case {name!r}: inputs.replay: expected a file path, got {replay!r}")
    return CaseInput(raw["prompt"], tuple(resume), None if replay is None else base / replay)


def _settings(path: Path, raw: Any) -> Settings:
    if raw is None:
        return Settings()
    known = {"replay", "replay_mode", "judge_model"}
    if not isinstance(raw, Mapping) or set(raw) - known:
        got = sorted(set(raw) - known) if isinstance(raw, Mapping) else raw
        raise _fail(path, f"plait: expected replay, replay_mode or judge_model, got {got!r}")
    replay = raw.get("replay")
    return Settings(
        None if replay is None else path.parent / str(replay),
        str(raw.get("replay_mode", "strict")),
        raw.get("judge_model"),
    )


def load_dataset(path: str | Path, *, judge_model: str | None = None) -> EvalDataset:
    """Read and check a dataset file (``EvalError`` in one line if it is wrong)."""
    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _fail(file, f"cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise _fail(file, f"not valid YAML{where}: {problem}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
        raise _fail(file, f"expected a mapping with a list of cases, got {type(data).__name__}")
    data = dict(data)
    settings = _settings(file, data.pop("plait", None))
    if judge_model is not None:
        settings = attrs.evolve(settings, judge_model=judge_model)
    try:
        dataset: Dataset[Any, Any, Any] = Dataset[Any, Any, Any].from_dict(
            data, custom_evaluator_types=EVALUATORS, default_name=file.stem
        )
    except ValidationError as exc:
        raise _fail(file, _first_error(exc)) from None
    except ExceptionGroup as group:
        first = group.exceptions[0]
        raise _fail(file, " ".join(str(first).split())) from None
    except ValueError as exc:
        raise _fail(file, " ".join(str(exc).split())) from None
    names = [case.name for case in dataset.cases]
    if None in names or len(set(names)) != len(names):
        raise _fail(file, "expected every case to have a name of its own")
    inputs = {
        str(case.name): _case_input(file, str(case.name), case.inputs) for case in dataset.cases
    }
    _default_judges(file, dataset, settings.judge_model)
    return EvalDataset(file, dataset, inputs, settings)


def _default_judges(path: Path, dataset: Dataset[Any, Any, Any], model: str | None) -> None:
    """Give every ``PlaitJudge`` without a model the default one; refuse one with none."""
    owners = [("dataset", dataset.evaluators)] + [
        (f"case {case.name!r}", case.evaluators) for case in dataset.cases
    ]
    for where, evaluators in owners:
        for index, evaluator in enumerate(evaluators):
            if isinstance(evaluator, PlaitJudge) and evaluator.model is None:
                if model is None:
                    raise _fail(
                        path,
                        f"{where}: PlaitJudge: expected a model (model: ID, the dataset's "
                        "plait.judge_model or --judge-model), got none",
                    )
                evaluators[index] = dataclasses.replace(evaluator, model=model)


def _tools_named(evaluator: Any) -> list[str]:
    """The tool names an evaluator expects the agent to call."""
    from pydantic_evals.evaluators import ArgumentCorrectness, ToolCorrectness, TrajectoryMatch

    if isinstance(evaluator, ToolTrajectory):
        return list(evaluator.tools)
    if isinstance(evaluator, TrajectoryMatch):
        return list(evaluator.expected_trajectory)
    if isinstance(evaluator, ToolCorrectness):
        return list(evaluator.expected_tools)
    if isinstance(evaluator, ArgumentCorrectness):
        return [evaluator.tool_name]
    return []


def check_tools(data: EvalDataset, tools: Mapping[str, Any]) -> None:
    """Refuse an evaluator naming a tool the agent does not have, or a trajectory mode
    that does not exist."""
    owners = [("dataset", data.dataset.evaluators)] + [
        (f"case {case.name!r}", case.evaluators) for case in data.dataset.cases
    ]
    for where, evaluators in owners:
        for evaluator in evaluators:
            if isinstance(evaluator, ToolTrajectory) and evaluator.mode not in MODES:
                raise _fail(
                    data.path,
                    f"{where}: ToolTrajectory mode: expected one of {', '.join(MODES)}, "
                    f"got {evaluator.mode!r}",
                )
            for name in _tools_named(evaluator):
                if name not in tools:
                    kind = type(evaluator).__name__
                    raise _fail(
                        data.path,
                        f"{where}: {kind} names tool {name!r}, which the agent does not have "
                        f"(it has {', '.join(sorted(tools)) or 'none'})",
                    )
