"""Precision and recall of the pii plugin's built-in detectors on the labelled corpus.

Run: ``python benchmarks/pii_quality.py``. Two corpora:

- the labelled corpus ``tests/data/pii_corpus.jsonl`` (written by
  ``tests/data/make_pii_corpus.py``): precision and recall over exact spans;
- the script corpus built here (``script_corpus``): every type written with no space
  against Chinese, Japanese, Thai, Arabic and Russian text and full-width punctuation,
  scheme-less URLs, and hard negatives (file names, dotted identifiers, versions,
  abbreviations, ``icon@2x.png``, values inside longer tokens of their own kind): recall
  and the false-alarm rate (negative snippets where the type was reported) per type.

A predicted span counts as a true positive only when it equals a labelled span of that
type exactly; every detector runs on every snippet, so an email found inside another
type's snippet counts against it too.
"""

from __future__ import annotations

import json
import random
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


# Text of five languages (and full-width punctuation) that values are glued to, no spaces.
SCRIPTS = {
    "zh": ("请联系", "获取详情", "服务器地址是", "已经更新"),
    "ja": ("詳細は", "までご連絡ください", "サーバーの", "を確認しました"),
    "th": ("กรุณาติดต่อ", "เพื่อรับข้อมูล", "ที่อยู่เครื่องคือ", "ครับ"),
    "ar": ("يرجى التواصل مع", "للمزيد", "عنوان الجهاز", "متصل الآن"),
    "ru": ("пишите на", "сегодня", "адрес сервера", "работает"),
    "fullwidth": ("（", "）", "：", "。"),
}
VALUES = {
    "email": (
        "jane.doe@example.com",
        "li.wei@mail.example.cn",
        "sato@example.co.jp",
        "ivan@example.ru",
    ),
    "credit_card": ("4111 1111 1111 1111", "5555-5555-5555-4444", "378282246310005"),
    "ip": ("10.0.0.254", "192.168.1.20", "2001:db8::8a2e:370:7334", "fe80::1ff:fe23:4567:890a"),
    "mac_address": ("00:1A:2B:3C:4D:5E", "a4-5e-60-c2-11-0f", "0011.22aa.bbcc"),
    "url": (
        "https://example.com/a/b?c=d",
        "www.example.org/path",
        "docs.example.org/guide/install",
        "example.com/pricing",
        "shop.example.co.uk/cart/42",
        "api.example.io:8443/v1/users",
    ),
}
NEGATIVES = {
    "email": (
        "icon@2x.png",
        "avatar@3x.webp",
        "logo@1.5x.jpg",
        "hero@2x.jpeg",
        "npm i react@18.2.0",
        "user@localhost",
        "name@host.invalidtld",
        "a.b@c.d",
        "x@y.sum()",
        "@channel",
    ),
    "credit_card": (
        "4111 1111 1111 1112",
        "41111111111111111",
        "order 1234 5678 9012 3456",
        "ISBN 978-3-16-148410-0",
        "tel 555-123-4567",
    ),
    "ip": (
        "version 1.2.3.4",
        "v2.0.0.1",
        "1.2.3.4.5",
        "256.1.1.1",
        "section 4.2.1.3",
        "OID 1.3.6.1.4.1",
        "std::vector",
        "10.0.0.1.2",
    ),
    "mac_address": (
        "00:1A:2B:3C:4D:5E:6F",
        "001A2B3C4D5E",
        "12:30:45",
        "aa:bb:cc:dd:ee",
        "0011.22aa.bbcc.ddee",
    ),
    "url": (
        "setup.py/build",
        "README.md",
        "config.json",
        "os.path.join",
        "foo.bar.baz",
        "main.rs",
        "archive.zip/inner",
        "python3.11/site-packages",
        "v1.2/changes",
        "e.g./i.e.",
        "U.S./Canada",
        "approx.km/h",
        "node_modules/react.dom/index",
        "lib/app.name/x",
        "index.html",
        "1.5/2",
        "build.gradle/deps",
        "a.b/c",
    ),
}


def _pieces(rng: random.Random, lang: str) -> tuple[str, str]:
    words = SCRIPTS[lang]
    if lang == "fullwidth":
        return rng.choice(words[0::2]), rng.choice(words[1::2])
    return rng.choice(words[0::2]), rng.choice(words[1::2])


def script_corpus(per_value: int = 8, seed: int = 23) -> list[dict[str, Any]]:
    """Snippets with a value glued, no spaces, between text of one language; the labels
    say where every value is (one per snippet), negatives carry none."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    for pii_type, values in VALUES.items():
        for value in values:
            for lang in SCRIPTS:
                for _ in range(per_value):
                    left, right = _pieces(rng, lang)
                    text = left + value + right
                    span = [len(left), len(left) + len(value)]
                    records.append(
                        {
                            "text": text,
                            "type": pii_type,
                            "kind": "positive",
                            "labels": {pii_type: [span]},
                            "lang": lang,
                        }
                    )
    for pii_type, negatives in NEGATIVES.items():
        for value in negatives:
            for lang in SCRIPTS:
                for _ in range(per_value // 2):
                    left, right = _pieces(rng, lang)
                    gap = rng.choice(("", " "))
                    records.append(
                        {
                            "text": left + gap + value + gap + right,
                            "type": pii_type,
                            "kind": "negative",
                            "labels": {},
                            "lang": lang,
                        }
                    )
    return records


def false_alarms(records: list[dict[str, Any]]) -> dict[str, float]:
    """Per type: the share of its negative snippets where any type reported something."""
    rates: dict[str, float] = {}
    detectors = [PIIMiddleware(t) for t in TYPES]
    for pii_type in TYPES:
        negatives = [r for r in records if r["kind"] == "negative" and r["type"] == pii_type]
        alarms = sum(any(d.matches(r["text"]) for d in detectors) for r in negatives)
        rates[pii_type] = alarms / len(negatives) if negatives else 0.0
    return rates


def main() -> None:
    scripts = script_corpus()
    figures = evaluate(scripts)
    rates = false_alarms(scripts)
    print(
        f"script corpus: {len(scripts)} snippets, values glued to text of "
        f"{', '.join(SCRIPTS)} (full-width punctuation)"
    )
    print(f"{'type':<12} {'spans':>6} {'recall':>8} {'negatives':>10} {'false alarms':>13}")
    for pii_type, f in figures.items():
        spans = f["tp"] + f["fn"]
        negatives = sum(r["kind"] == "negative" and r["type"] == pii_type for r in scripts)
        print(
            f"{pii_type:<12} {spans:>6} {f['recall']:>8.4f} {negatives:>10} "
            f"{rates[pii_type]:>12.2%}"
        )
        for mistake in f["mistakes"][:5]:
            print("    " + mistake)
    print()
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
