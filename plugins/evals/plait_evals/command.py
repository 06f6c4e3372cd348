"""``plait eval DATASET.yaml AGENT.toml`` (entry point in ``plait.commands``); light on
purpose: ``plait`` loads this module on every invocation, pydantic-evals only when the
command runs.

Exit codes: 0 the eval ran (and met ``--fail-under``), 1 it fell under ``--fail-under``,
2 bad input (a dataset, agent file, recording or option that cannot be run; nothing ran).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO, Any

EXIT_OK, EXIT_UNDER, EXIT_BAD_INPUT = 0, 1, 2


def eval_command(sub: Any) -> None:
    parser = sub.add_parser(
        "eval",
        help="run a dataset of cases through an agent file and report what passed",
        description=(
            "Run each case of a pydantic-evals dataset (YAML or JSON) through the agent an "
            "agent file describes, score it with the dataset's evaluators and print a table."
        ),
    )
    parser.add_argument("dataset", metavar="DATASET.yaml", help="the cases and their evaluators")
    parser.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    parser.add_argument(
        "--repeat", type=_positive, default=1, metavar="N", help="run each case N times (pass@N)"
    )
    parser.add_argument(
        "--fail-under",
        type=_fraction,
        metavar="RATE",
        help="exit 1 when pass@1 over the cases is under RATE (0.9 or 90%%)",
    )
    parser.add_argument(
        "--baseline", metavar="FILE.json", help="a previous --report JSON: print what changed"
    )
    parser.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="FILE",
        help="write the report to FILE: .json (also a --baseline) or .md (repeatable)",
    )
    parser.add_argument("--model", metavar="ID", help="use this model id instead of the file's")
    parser.add_argument(
        "--judge-model", metavar="ID", help="PlaitJudge's model when a case names none"
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="record each case's calls to DIR/<case>.jsonl (replay them with plait: {replay: DIR})",
    )
    parser.add_argument(
        "--concurrency", type=_positive, metavar="N", help="at most N cases at once (default: all)"
    )
    parser.set_defaults(func=_run)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _fraction(text: str) -> float:
    try:
        value = float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(
            f"expected a rate from 0 to 1 (or 0%% to 100%%), got {text!r}"
        )
    return value


def _check_reports(paths: list[str]) -> list[Path]:
    from plait_evals.dataset import EvalError

    out = [Path(p) for p in paths]
    for path in out:
        if path.suffix not in (".json", ".md"):
            raise EvalError(
                f"plait eval: --report: expected a .json or .md file, got {str(path)!r}"
            )
        if not path.parent.is_dir():
            raise EvalError(
                f"plait eval: --report: expected a file in an existing folder, got {str(path)!r}"
            )
    return out


def _run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    import time

    import anyio

    from plait.errors import PlaitError
    from plait_evals import summary as summaries
    from plait_evals.dataset import EvalError, load_dataset
    from plait_evals.runner import Evaluation

    try:
        reports = _check_reports(args.report)
        baseline = None
        if args.baseline is not None:
            try:
                baseline = summaries.read_summary(Path(args.baseline))
            except (OSError, ValueError) as exc:
                text = exc.strerror if isinstance(exc, OSError) else str(exc)
                raise EvalError(f"plait eval: --baseline: {text}") from None
        if args.record is not None and args.repeat > 1:
            raise EvalError(
                f"plait eval: --record: expected one run per case, got --repeat {args.repeat}"
            )
        data = load_dataset(args.dataset, judge_model=args.judge_model)
        evaluation = Evaluation(data, args.agent, model=args.model, record=args.record)
    except PlaitError as exc:
        text = " ".join(str(exc).split())
        err.write(f"{text if text.startswith('plait eval:') else 'plait eval: ' + text}\n")
        return EXIT_BAD_INPUT

    started = time.perf_counter()
    report = anyio.run(lambda: evaluation.run(repeat=args.repeat, concurrency=args.concurrency))
    duration = time.perf_counter() - started
    summary = summaries.summarize(
        report, agent=Path(args.agent).name, k=args.repeat, duration_s=duration
    )
    out.write(report.render(width=120, include_reasons=True, include_error_stacktrace=False))
    out.write("\n")
    for case in summary.cases:
        if case.passed < case.runs:
            why = case.error or "; ".join(case.failed)
            out.write(f"FAIL {case.name} ({case.passed}/{case.runs}): {why}\n")
    line = f"pass@1 {summary.pass_at_1 * 100:.0f}%"
    if args.repeat > 1:
        line += f", pass@{args.repeat} {summary.pass_at_k * 100:.0f}%"
    out.write(f"{line} over {len(summary.cases)} cases in {duration:.2f} s\n")
    if baseline is not None:
        changes = summaries.compare(baseline, summary)
        for title, lines in (
            ("better", changes.better),
            ("worse", changes.worse),
            ("new", changes.added),
            ("gone", changes.removed),
        ):
            for text in lines:
                out.write(f"{title}: {text}\n")
        if not (changes.better or changes.worse or changes.added or changes.removed):
            out.write(f"no change since {args.baseline}\n")
    for path in reports:
        text = (
            summaries.to_json(summary, report)
            if path.suffix == ".json"
            else summaries.to_markdown(summary)
        )
        path.write_text(text, encoding="utf-8")
    if args.fail_under is not None and summary.pass_at_1 < args.fail_under:
        err.write(
            f"plait eval: pass@1 {summary.pass_at_1 * 100:.0f}% is under "
            f"--fail-under {args.fail_under * 100:.0f}%\n"
        )
        return EXIT_UNDER
    return EXIT_OK
