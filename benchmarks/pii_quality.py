"""Precision and recall of the pii plugin's built-in detectors on the labelled corpus.

Run: ``python benchmarks/pii_quality.py`` (the corpus is ``tests/data/pii_corpus.jsonl``,
written by ``tests/data/make_pii_corpus.py``). A predicted span counts as a true positive
only when it equals a labelled span of that type exactly; every detector runs on every
snippet, so an email found inside another type's snippet counts against it too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plait_pii import PIIMiddleware

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "pii_corpus.jsonl"
TYPES = ("email", "credit_card", "ip", "mac_address", "url")


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def evaluate(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per type: tp, fp, fn, precision, recall, and the first few mistakes."""
    figures: dict[str, dict[str, Any]] = {}
    for pii_type in TYPES:
        detector = PIIMiddleware(pii_type)
        tp = fp = fn = 0
        mistakes: list[str] = []
        for record in records:
            text = record["text"]
            gold = {tuple(span) for span in record["labels"].get(pii_type, [])}
            found = {(m.start, m.end) for m in detector.matches(text)}
            tp += len(gold & found)
            for start, end in sorted(found - gold):
                fp += 1
                mistakes.append(f"FP {text[start:end]!r} in {text!r}")
            for start, end in sorted(gold - found):
                fn += 1
                mistakes.append(f"FN {text[start:end]!r} in {text!r}")
        figures[pii_type] = {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0,
            "mistakes": mistakes,
        }
    return figures


def main() -> None:
    records = load()
    kinds = {k: sum(r["kind"] == k for r in records) for k in ("positive", "negative")}
    print(
        f"corpus: {len(records)} snippets ({kinds['positive']} positive, "
        f"{kinds['negative']} hard negative)"
    )
    print(
        f"{'type':<12} {'spans':>6} {'tp':>5} {'fp':>4} {'fn':>4} {'precision':>10} {'recall':>8}"
    )
    for pii_type, f in evaluate(records).items():
        spans = f["tp"] + f["fn"]
        print(
            f"{pii_type:<12} {spans:>6} {f['tp']:>5} {f['fp']:>4} {f['fn']:>4} "
            f"{f['precision']:>10.4f} {f['recall']:>8.4f}"
        )
        for mistake in f["mistakes"][:5]:
            print("    " + mistake)


if __name__ == "__main__":
    main()
