"""The built-in detectors' precision and recall on the labelled corpus in tests/data."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "pii_quality", ROOT / "benchmarks" / "pii_quality.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = load_benchmark()
RECORDS: list[dict[str, Any]] = BENCH.load()
FIGURES: dict[str, dict[str, Any]] = BENCH.evaluate(RECORDS)


def test_corpus_is_large_and_covers_every_type() -> None:
    positive = [r for r in RECORDS if r["kind"] == "positive"]
    negative = [r for r in RECORDS if r["kind"] == "negative"]
    assert len(positive) >= 500 and len(negative) >= 500
    for pii_type in BENCH.TYPES:
        assert sum(r["type"] == pii_type for r in positive) >= 100
        assert sum(r["type"] == pii_type for r in negative) >= 100
    for record in RECORDS:  # labels point at real text
        for spans in record["labels"].values():
            for start, end in spans:
                assert 0 <= start < end <= len(record["text"])


@pytest.mark.parametrize("pii_type", ["email", "credit_card", "ip", "mac_address", "url"])
def test_precision_and_recall(pii_type: str) -> None:
    figures = FIGURES[pii_type]
    mistakes = "\n".join(figures["mistakes"][:10])
    assert figures["recall"] >= 0.99, mistakes
    assert figures["precision"] >= 0.98, mistakes


SCRIPT_RECORDS: list[dict[str, Any]] = BENCH.script_corpus()
SCRIPT_FIGURES: dict[str, dict[str, Any]] = BENCH.evaluate(SCRIPT_RECORDS)
SCRIPT_ALARMS: dict[str, float] = BENCH.false_alarms(SCRIPT_RECORDS)


def test_script_corpus_covers_five_languages_and_every_type() -> None:
    assert {r["lang"] for r in SCRIPT_RECORDS} >= {"zh", "ja", "th", "ar", "ru", "fullwidth"}
    for pii_type in BENCH.TYPES:
        kinds = {r["kind"] for r in SCRIPT_RECORDS if r["type"] == pii_type}
        assert kinds == {"positive", "negative"}


@pytest.mark.parametrize("pii_type", ["email", "credit_card", "ip", "mac_address", "url"])
def test_script_corpus_recall_and_false_alarms(pii_type: str) -> None:
    figures = SCRIPT_FIGURES[pii_type]
    mistakes = "\n".join(figures["mistakes"][:10])
    assert figures["recall"] >= 0.99, mistakes
    assert SCRIPT_ALARMS[pii_type] <= 0.02, mistakes
