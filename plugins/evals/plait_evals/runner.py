"""Run a dataset through an agent file with pydantic-evals: each case (each repeat) gets
a fresh agent built from the file, traced by plait-otel into the case's span tree, and
answered from its recording when it has one."""

from __future__ import annotations

import contextvars
import uuid
from pathlib import Path
from typing import Any

from opentelemetry import trace
from pydantic_evals.dataset import increment_eval_metric, set_eval_attribute
from pydantic_evals.lifecycle import CaseLifecycle
from pydantic_evals.reporting import EvaluationReport

from plait.agentfile import AgentSpec, read_agent_file
from plait.errors import ConfigError
from plait.messages import AIMessage, ToolMessage
from plait.recording import RecordReplay
from plait.types import AgentResult, Command
from plait_evals._facts import TOOLS_ATTRIBUTE
from plait_evals.dataset import EvalDataset, EvalError, check_tools
from plait_otel import OtelMiddleware

__all__ = ["Evaluation", "run_eval"]

_case: contextvars.ContextVar[str] = contextvars.ContextVar("plait_evals_case")


class _CaseName(CaseLifecycle[Any, Any, Any]):
    """Tells the task which case it runs (pydantic-evals hands it only the inputs)."""

    async def setup(self) -> None:
        _case.set(str(self.case.name))


def _tracing() -> None:
    """pydantic-evals reads each case's spans from the global tracer provider: install
    an SDK one if the application has none."""
    if not hasattr(trace.get_tracer_provider(), "add_span_processor"):
        from opentelemetry.sdk.trace import TracerProvider

        trace.set_tracer_provider(TracerProvider())


class Evaluation:
    """A dataset and the agent file it is run against, checked before anything runs."""

    def __init__(
        self,
        data: EvalDataset,
        agent_file: str | Path,
        *,
        model: str | None = None,
        record: str | Path | None = None,
    ) -> None:
        self.data = data
        self.agent_file = Path(agent_file)
        self.model = model
        self.record = None if record is None else Path(record)
        if self.record is not None and not self.record.is_dir():
            raise EvalError(
                f"plait eval: --record: expected an existing folder, got {str(record)!r}"
            )
        spec = self._spec()
        agent = spec.build()
        try:
            check_tools(data, agent.tools_by_name)
        finally:
            agent.close()
        for case in data.dataset.cases:
            name = str(case.name)
            if self.record is None and data.replay_for(name) is not None:
                # a recording that is missing or from another agent: refused now
                self._build(name).close()

    def _spec(self) -> AgentSpec:
        return read_agent_file(self.agent_file, model=self.model)

    def _build(self, case: str) -> Any:
        """A fresh agent for one run of ``case`` (a scripted model's answers, a
        recording's entries are used up by a run)."""
        try:
            return self._spec().build(**self._overrides(case))
        except ConfigError as exc:
            raise EvalError(f"plait eval: case {case!r}: {' '.join(str(exc).split())}") from None

    def _overrides(self, case: str) -> dict[str, Any]:
        first: list[Any] = [OtelMiddleware()]
        if self.record is not None:
            first.append(RecordReplay(record=self.record / f"{case}.jsonl"))
        else:
            replay = self.data.replay_for(case)
            if replay is not None:
                # after otel, so the replayed calls still have their spans
                first.append(RecordReplay(replay=replay, mode=self.data.settings.replay_mode))
        overrides: dict[str, Any] = {"first": first}
        if self.data.inputs[case].resume and self._spec().checkpointer is None:
            overrides["checkpointer"] = "memory"  # a paused run resumes from its thread
        return overrides

    async def task(self, inputs: Any) -> Any:
        """One run of the current case: the prompt, then each ``resume`` while it pauses."""
        case = _case.get()
        given = self.data.inputs[case]
        agent = self._build(case)
        thread = f"eval-{uuid.uuid4().hex[:12]}"
        try:
            runs = [await agent.ainvoke(given.prompt, thread_id=thread)]
            for number, value in enumerate(given.resume, start=1):
                if not runs[-1].interrupts:
                    raise RuntimeError(
                        f"resume {number} was given, but the run did not pause before it"
                    )
                runs.append(await agent.ainvoke(Command(resume=value), thread_id=thread))
        finally:
            agent.close()
        _measure(runs)
        last = runs[-1]
        if last.interrupts:
            set_eval_attribute("paused", [str(i.value) for i in last.interrupts])
        return last.structured_response if last.structured_response is not None else last.text

    async def run(
        self, *, repeat: int = 1, concurrency: int | None = None, progress: bool = False
    ) -> EvaluationReport[Any, Any, Any]:
        if self.record is not None and repeat > 1:
            # the runs of a case would write one file at once
            raise EvalError(
                f"plait eval: --record: expected one run per case, got --repeat {repeat}"
            )
        _tracing()
        return await self.data.dataset.evaluate(
            self.task,
            name=self.data.dataset.name,
            task_name=self.agent_file.stem,
            repeat=repeat,
            max_concurrency=concurrency,
            progress=progress,
            lifecycle=_CaseName,
        )


def _measure(runs: list[AgentResult]) -> None:
    """The metrics the report shows, and the trajectory evaluators fall back on when no
    span tree was recorded: from the runs' messages and usage."""
    final = runs[-1].messages
    calls = [m.name for m in final if isinstance(m, ToolMessage)]
    set_eval_attribute(TOOLS_ATTRIBUTE, calls)
    increment_eval_metric("model_calls", sum(1 for m in final if isinstance(m, AIMessage)))
    increment_eval_metric("tool_calls", len(calls))
    for run in runs:
        usage = run.usage
        increment_eval_metric("input_tokens", usage.input_tokens)
        increment_eval_metric("output_tokens", usage.output_tokens)
        if usage.cost is not None:
            increment_eval_metric("cost", usage.cost)


def run_eval(
    data: EvalDataset,
    agent_file: str | Path,
    *,
    repeat: int = 1,
    model: str | None = None,
    record: str | Path | None = None,
    concurrency: int | None = None,
) -> EvaluationReport[Any, Any, Any]:
    """Check, then run ``data`` through the agent ``agent_file`` describes."""
    import anyio

    evaluation = Evaluation(data, agent_file, model=model, record=record)
    return anyio.run(lambda: evaluation.run(repeat=repeat, concurrency=concurrency))
