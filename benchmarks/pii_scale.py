"""Scan time of the pii plugin's built-in detectors at 100 KB, 800 KB and 8 MB, each as a
ratio to a baseline measured in the same run on the same text: one regex pass finding its
words (``re.finditer(r"\\w+", text)``, linear). A linear detector keeps about the same
ratio at every size; a quadratic one's ratio grows with the size. The garbage collector
is off while timing, so its pauses are not counted against either.

    python benchmarks/pii_scale.py [SIZES_KB ...]      # default: 100 800 8000

Texts (each cut to the size):

- ``contact list``: addresses separated by commas on one line, with no space, quote or
  bracket (the shape that made the old e-mail detector quadratic);
- ``prose``: sentences with an address, an IP, a card number and a URL in each;
- ``json dump``: a tool result, ``json.dumps`` of records (``\\u`` escapes for non-ASCII);
- ``base64 blob``: one 'word' of base64 text with one address after it.
"""

from __future__ import annotations

import base64
import gc
import json
import re
import sys
import time
from collections.abc import Callable

from plait_pii import PIIMiddleware

TYPES = ("email", "credit_card", "ip", "mac_address", "url")
BASELINE = re.compile(r"\w+")


def contact_list(size: int) -> str:
    parts: list[str] = []
    total, i = 0, 0
    while total < size:
        part = f"person{i}@example.com"
        parts.append(part)
        total += len(part) + 1
        i += 1
    return ",".join(parts)[:size]


def prose(size: int) -> str:
    line = (
        "Customer {i} (jane.doe{i}@corp.example.com) paid with 4111 1111 1111 1111 from "
        "10.0.{a}.{b}; details at https://shop.example.com/orders/{i}?tab=items, device "
        "00:1A:2B:3C:4D:5E.\n"
    )
    out: list[str] = []
    total, i = 0, 0
    while total < size:
        text = line.format(i=i, a=i % 250, b=(i // 250) % 250)
        out.append(text)
        total += len(text)
        i += 1
    return "".join(out)[:size]


def json_dump(size: int) -> str:
    records = []
    total, i = 0, 0
    while total < size:
        record = {"id": i, "name": f"Иван {i}", "email": f"ivan{i}@почта.рф", "ip": "10.0.0.7"}
        records.append(record)
        total += 90
        i += 1
    return json.dumps(records)[:size]


def base64_blob(size: int) -> str:
    raw = bytes(range(256)) * (size // 256 + 1)
    return base64.b64encode(raw).decode()[: size - 20] + " ok@example.com"


TEXTS: dict[str, Callable[[int], str]] = {
    "contact list": contact_list,
    "prose": prose,
    "json dump": json_dump,
    "base64 blob": base64_blob,
}


def words(text: str) -> int:
    return sum(1 for _ in BASELINE.finditer(text))


def seconds(scan: Callable[[str], object], text: str, repeat: int) -> float:
    """The best of ``repeat`` runs (the least disturbed by other work on the machine)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            scan(text)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best


def main() -> None:
    sizes = [int(arg) * 1000 for arg in sys.argv[1:]] or [100_000, 800_000, 8_000_000]
    detectors = {name: PIIMiddleware(name) for name in TYPES}
    print("scan time of each detector as a ratio to finding the words of the same text")
    print("(linear: about the same ratio at every size; quadratic: it grows with the size)\n")
    print(f"{'text':<14}{'size':>9}{'baseline':>11}" + "".join(f"{t:>13}" for t in TYPES))
    for name, make in TEXTS.items():
        for size in sizes:
            text = make(size)
            repeat = 5 if size <= 1_000_000 else 2
            base = seconds(words, text, repeat)
            took = [seconds(detector.matches, text, repeat) for detector in detectors.values()]
            kb = f"{len(text) // 1000} KB"
            cells = "".join(f"{t / base:>12.1f}x" for t in took)
            print(f"{name:<14}{kb:>9}{base * 1000:>9.1f}ms{cells}")
        print()


if __name__ == "__main__":
    main()
