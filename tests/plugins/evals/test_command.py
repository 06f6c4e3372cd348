"""``plait eval`` as a user runs it: a real subprocess on the example support agent and
its 10-case dataset, offline; exit codes, the printed table, the report files, baselines,
pass@k, recordings replayed with no model, and bad input refused in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def plait_eval(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "plait", "eval", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=240,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The example agent, its tools and its dataset, copied where a test may change them."""
    for name in ("support.toml", "support_tools.py", "support_eval.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path


def test_the_example_dataset_passes_offline_with_reports(work: Path) -> None:
    done = plait_eval(
        "support_eval.yaml",
        "support.toml",
        "--fail-under",
        "100%",
        "--report",
        "out.json",
        "--report",
        "out.md",
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    assert "Evaluation Summary: support" in done.stdout
    assert "pass@1 100% over 10 cases" in done.stdout
    report = json.loads((work / "out.json").read_text())
    assert [c["name"] for c in report["cases"]] == [
        "refund_approved",
        "refund_rejected",
        "refund_edited",
        "second_order",
        "unknown_order",
        "no_order_number",
        "email_redacted",
        "refund_limit",
        "paused_for_approval",
        "two_lookups",
    ]
    assert all(c["passed"] == c["runs"] == 1 for c in report["cases"])
    # pydantic-evals' own report rides along: the agent's answer of each case
    outputs = {c["name"]: c["output"] for c in report["report"]["cases"]}
    assert outputs["refund_approved"] == "Refunded 25.00 EUR for order 1042."
    assert "I have not refunded order 2077." in outputs["refund_limit"]
    markdown = (work / "out.md").read_text()
    assert "| refund_limit | 1/1 | 100% |  |" in markdown
    assert "pass@1 **100%**" in markdown


def test_a_regression_fails_the_gate_and_the_baseline_names_it(work: Path) -> None:
    assert (
        plait_eval(
            "support_eval.yaml", "support.toml", "--report", "before.json", cwd=work
        ).returncode
        == 0
    )
    # the refund limit raised to 2 per run: the second refund now goes through
    agent = work / "support.toml"
    agent.write_text(agent.read_text().replace("run_limit = 1", "run_limit = 2"))
    done = plait_eval(
        "support_eval.yaml",
        "support.toml",
        "--baseline",
        "before.json",
        "--fail-under",
        "0.95",
        cwd=work,
    )
    assert done.returncode == 1
    assert "FAIL refund_limit (0/1):" in done.stdout
    # both cases asking two refunds now pause for two decisions and get one
    assert "worse: refund_limit: 100% -> 0%\nworse: two_lookups: 100% -> 0%\n" in done.stdout
    assert "pass@1 80% over 10 cases" in done.stdout
    assert done.stderr == "plait eval: pass@1 80% is under --fail-under 95%\n"


def test_repeat_reports_pass_at_k(work: Path) -> None:
    done = plait_eval(
        "support_eval.yaml", "support.toml", "--repeat", "2", "--report", "r.json", cwd=work
    )
    assert done.returncode == 0, done.stderr
    assert "pass@1 100%, pass@2 100% over 10 cases" in done.stdout
    report = json.loads((work / "r.json").read_text())
    assert report["k"] == 2
    assert all(c["runs"] == 2 and c["pass_at_k"] == 1.0 for c in report["cases"])


def test_recorded_cases_replay_with_no_model(work: Path) -> None:
    recordings = work / "recordings"
    recordings.mkdir()
    done = plait_eval("support_eval.yaml", "support.toml", "--record", recordings, cwd=work)
    assert done.returncode == 0, done.stderr
    assert len(list(recordings.glob("*.jsonl"))) == 10
    # the same agent (name, model id, tools, prompt) whose model fails if it is called:
    # only the recordings can answer
    with (work / "support_tools.py").open("a") as tools:
        tools.write(
            "\n\ndef no_model(messages, tools):\n    raise RuntimeError('the model was called')\n"
        )
    offline = work / "offline.toml"
    text = (work / "support.toml").read_text()
    offline.write_text(text.replace("support_tools:support_brain", "support_tools:no_model"))
    dataset = work / "replayed.yaml"
    dataset.write_text("plait:\n  replay: recordings\n" + (work / "support_eval.yaml").read_text())
    done = plait_eval(dataset, offline, "--fail-under", "1", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pass@1 100% over 10 cases" in done.stdout
    # without the recordings that agent cannot answer
    done = plait_eval("support_eval.yaml", offline, cwd=work)
    assert "pass@1 0% over 10 cases" in done.stdout
    assert "FAIL refund_approved (0/1): RuntimeError: the model was called" in done.stdout


def test_bad_input_is_one_line_and_runs_nothing(work: Path) -> None:
    (work / "broken.yaml").write_text("cases:\n  - name: a\n    inputs: [unclosed\n")
    done = plait_eval("broken.yaml", "support.toml", "--report", "r.json", cwd=work)
    assert done.returncode == 2
    assert done.stderr.startswith("plait eval: broken.yaml: not valid YAML at line ")
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    assert not (work / "r.json").exists()

    dataset = (work / "support_eval.yaml").read_text()
    (work / "tool.yaml").write_text(
        dataset.replace("[lookup_order, issue_refund]", "[lookup_order, cancel_order]")
    )
    done = plait_eval("tool.yaml", "support.toml", cwd=work)
    assert done.returncode == 2
    assert done.stderr == (
        "plait eval: tool.yaml: case 'refund_approved': ToolTrajectory names tool 'cancel_order', "
        "which the agent does not have (it has issue_refund, lookup_order)\n"
    )

    (work / "evaluator.yaml").write_text(
        dataset.replace("- EqualsExpected\n", "- EqualsExpectd\n", 1)
    )
    done = plait_eval("evaluator.yaml", "support.toml", cwd=work)
    assert done.returncode == 2
    assert done.stderr.startswith("plait eval: evaluator.yaml: ") and "EqualsExpectd" in done.stderr
    assert done.stderr.count("\n") == 1

    # a recording another agent made (another system prompt)
    recordings = work / "recordings"
    recordings.mkdir()
    assert (
        plait_eval("support_eval.yaml", "support.toml", "--record", recordings, cwd=work).returncode
        == 0
    )
    other = work / "other.toml"
    other.write_text(
        (work / "support.toml").read_text().replace("You are Acme's", "You are Globex's")
    )
    (work / "replayed.yaml").write_text("plait:\n  replay: recordings\n" + dataset)
    done = plait_eval("replayed.yaml", other, "--report", "r.json", cwd=work)
    assert done.returncode == 2
    assert done.stderr.startswith("plait eval: case 'refund_approved': ")
    assert "was recorded by another agent" in done.stderr and done.stderr.count("\n") == 1
    assert not (work / "r.json").exists()


def test_a_case_replays_its_own_recording(work: Path) -> None:
    recorded = work / "refund.jsonl"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "plait", "run", "support.toml"),
            *("Please refund order 1042.", "--record", str(recorded), "--json"),
        ],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=120,
    )
    assert done.returncode in (0, 3), done.stderr  # paused at the approval
    (work / "one.yaml").write_text(
        "cases:\n"
        "  - name: paused\n"
        "    inputs: {prompt: Please refund order 1042., replay: refund.jsonl}\n"
        "    evaluators:\n"
        "      - ToolTrajectory: {tools: [lookup_order]}\n"
        "  - name: missing\n"
        "    inputs: {prompt: Hi, replay: nowhere.jsonl}\n"
    )
    done = plait_eval("one.yaml", "support.toml", cwd=work)
    assert done.returncode == 2
    assert done.stderr.startswith("plait eval: case 'missing': ")
    assert "nowhere.jsonl" in done.stderr and done.stderr.count("\n") == 1
    text = (work / "one.yaml").read_text()
    (work / "one.yaml").write_text(text[: text.index("  - name: missing")])
    done = plait_eval("one.yaml", "support.toml", "--fail-under", "1", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr


def test_record_with_repeat_is_refused(work: Path) -> None:
    (work / "rec").mkdir()
    done = plait_eval(
        "support_eval.yaml", "support.toml", "--record", "rec", "--repeat", "2", cwd=work
    )
    assert done.returncode == 2
    assert done.stderr == "plait eval: --record: expected one run per case, got --repeat 2\n"
    assert list((work / "rec").iterdir()) == []
