"""What a report comes to per case — runs, passes, pass@1 and pass@k — as the JSON and
Markdown files ``plait eval --report`` writes, and what changed against a baseline.

A run passes when its task finished and every assertion held. pass@k is the chance that
at least one of k runs passes, estimated from n runs with c passes as
``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021); pass@1 is c / n.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import cattrs
from pydantic_evals.reporting import EvaluationReport, EvaluationReportAdapter

from plait.lazy import frozen

__all__ = ["CaseSummary", "Changes", "Summary", "compare", "pass_at_k", "read_summary", "summarize"]

FORMAT = 1


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` runs passes, estimated from ``n`` runs of
    which ``c`` passed: ``1 - C(n-c, k) / C(n, k)`` (``1.0`` when fewer than ``k`` failed)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@frozen
class CaseSummary:
    """One case of a ``Summary``: its runs, how many passed, pass@1 and pass@k, and the
    first failing run's reasons."""

    name: str
    runs: int
    passed: int
    pass_at_1: float
    pass_at_k: float
    failed: tuple[str, ...] = ()  # the assertions that failed, and why (first run)
    error: str | None = None  # the task's error, when a run raised


@frozen
class Summary:
    """What a report comes to (``summarize``): each case's figures and the dataset's, the
    means over its cases; what ``plait eval --report out.json`` writes and
    ``--baseline`` reads back (``read_summary``)."""

    dataset: str
    agent: str
    k: int
    cases: tuple[CaseSummary, ...]
    pass_at_1: float
    pass_at_k: float
    duration_s: float
    plait_eval: int = FORMAT


_converter = cattrs.Converter()


def summarize(
    report: EvaluationReport[Any, Any, Any], *, agent: str, k: int, duration_s: float
) -> Summary:
    """The ``Summary`` of a pydantic-evals ``report``, its runs grouped by case: each
    case's pass@1 and pass@``k`` (``k`` at most its number of runs), the dataset's the
    means over its cases; ``agent`` and ``duration_s`` are recorded as given."""
    runs: dict[str, list[tuple[bool, tuple[str, ...], str | None]]] = {}
    for case in report.cases:
        failed = tuple(
            f"{name}: {result.reason}" if result.reason else name
            for name, result in case.assertions.items()
            if result.value is not True
        ) + tuple(f"{f.name}: {f.error_message}" for f in case.evaluator_failures)
        runs.setdefault(case.source_case_name or case.name, []).append((not failed, failed, None))
    for failure in report.failures:
        error = " ".join(failure.error_message.split())
        name = failure.source_case_name or failure.name
        runs.setdefault(name, []).append((False, (), error))
    cases = []
    for name, outcomes in runs.items():
        n, c = len(outcomes), sum(ok for ok, _, _ in outcomes)
        first_bad = next(((f, e) for ok, f, e in outcomes if not ok), ((), None))
        cases.append(
            CaseSummary(name, n, c, c / n, pass_at_k(n, c, min(k, n)), first_bad[0], first_bad[1])
        )
    count = len(cases) or 1
    return Summary(
        dataset=report.name,
        agent=agent,
        k=k,
        cases=tuple(cases),
        pass_at_1=sum(c.pass_at_1 for c in cases) / count,
        pass_at_k=sum(c.pass_at_k for c in cases) / count,
        duration_s=duration_s,
    )


def to_json(summary: Summary, report: EvaluationReport[Any, Any, Any]) -> str:
    data = _converter.unstructure(summary)
    data["report"] = EvaluationReportAdapter.dump_python(report, mode="json")
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def read_summary(path: Path) -> Summary:
    """A ``--report out.json`` file, as ``--baseline`` reads it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping) or data.get("plait_eval") != FORMAT:
        raise ValueError(
            f"{str(path)!r} is not a plait eval report (make one with --report FILE.json)"
        )
    fields = {f.name for f in attrs.fields(Summary)}
    return _converter.structure({k: v for k, v in data.items() if k in fields}, Summary)


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def to_markdown(summary: Summary) -> str:
    k = summary.k
    lines = [
        f"# plait eval: {summary.dataset} on {summary.agent}",
        "",
        f"pass@1 **{_percent(summary.pass_at_1)}**"
        + (f", pass@{k} **{_percent(summary.pass_at_k)}**" if k > 1 else "")
        + f" over {len(summary.cases)} cases in {summary.duration_s:.2f} s",
        "",
        "| case | passed | pass@1 |" + (f" pass@{k} |" if k > 1 else "") + " why it failed |",
        "| --- | --- | --- |" + (" --- |" if k > 1 else "") + " --- |",
    ]
    for case in summary.cases:
        why = case.error or "; ".join(case.failed)
        cells = [case.name, f"{case.passed}/{case.runs}", _percent(case.pass_at_1)]
        if k > 1:
            cells.append(_percent(case.pass_at_k))
        cells.append(why.replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


@frozen
class Changes:
    """What ``compare`` found: the cases whose pass@1 went up (``better``) or down
    (``worse``), each as ``name: before -> now``, and the cases ``added`` or ``removed``."""

    better: tuple[str, ...]
    worse: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]


def compare(baseline: Summary, current: Summary) -> Changes:
    """Cases whose pass@1 went up or down since ``baseline``, and cases new or gone."""
    before = {c.name: c for c in baseline.cases}
    now = {c.name: c for c in current.cases}
    better: list[str] = []
    worse: list[str] = []
    for name, case in now.items():
        old = before.get(name)
        if old is None or old.pass_at_1 == case.pass_at_1:
            continue
        line = f"{name}: {_percent(old.pass_at_1)} -> {_percent(case.pass_at_1)}"
        (better if case.pass_at_1 > old.pass_at_1 else worse).append(line)
    return Changes(
        tuple(better),
        tuple(worse),
        tuple(n for n in now if n not in before),
        tuple(n for n in before if n not in now),
    )
