"""What the time limit on ``grep_search``'s pattern costs: ``SearchPattern`` matching each
line (with ``re`` in batches between looks at the clock when the pattern's backtracking is
bounded, else with the ``regex`` package and a ``timeout``), beside Python's ``re`` matching
the same lines with no limit, measured in the same run; and a whole ``grep_search`` call on
a project on disk beside reading its files and matching them with ``re``. The last pattern
nests quantifiers, so it is always matched by ``regex`` with its timeout.

    python benchmarks/grep_search.py [FILES]
"""

from __future__ import annotations

import re
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plait
from plait.backends import DiskBackend, text_lines
from plait.testing import ai, call, scripted, tool_answers
from plait_anthropic._pattern import SearchPattern
from plait_anthropic.file_search import AnthropicFileSearchMiddleware

PATTERNS = [r"def \w+\(", "TODO", r"error|warning", r"^\s*return\b", r"(\w+ )+\d"]


def row(pattern: str, first: float, second: float) -> str:
    return f"{pattern!r:<16} {first * 1e3:7.1f}ms {second * 1e3:12.1f}ms {second / first:5.2f}x"


def best(action: Callable[[], Any], rounds: int = 5) -> float:
    """The fastest of ``rounds`` runs of ``action``, in seconds."""
    return min(timeit.repeat(action, number=1, repeat=rounds))


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    body = "".join(
        f"def function_{n}(value):\n    # TODO check the value {n}\n    return value + {n}\n\n"
        for n in range(40)
    )
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for n in range(count):
            (root / f"pkg{n % 20}").mkdir(exist_ok=True)
            (root / f"pkg{n % 20}" / f"module{n}.py").write_text(body)
        fs = DiskBackend(root).bind()
        paths = [info.path for info in fs.glob("**/*")]
        texts = [fs.read_text(p) for p in paths]
        lines = [line for text in texts for line in text_lines(text)]
        print(f"{len(paths)} files, {len(lines)} lines, {sum(map(len, texts)) / 1e6:.1f} MB")
        print(f"{'pattern':<16} {'re':>9} {'SearchPattern':>14} {'ratio':>6}  engine")
        for pattern in PATTERNS:
            compiled = re.compile(pattern)
            bounded = SearchPattern(pattern, 60.0)
            plain = best(lambda c=compiled: [line for line in lines if c.search(line)])
            limited = best(lambda b=bounded: b.matching_lines(lines))
            print(row(pattern, plain, limited), " regex" if bounded.work is None else " re")

        print(f"\nwhole grep_search call (agent run) beside read + re, {len(paths)} files")
        middleware = AnthropicFileSearchMiddleware(backend=DiskBackend(root), max_files=None)
        for pattern in [*PATTERNS[:2], PATTERNS[-1]]:
            compiled = re.compile(pattern)

            def baseline(c: re.Pattern[str] = compiled) -> None:
                for p in paths:
                    [line for line in text_lines(fs.read_text(p)) if c.search(line)]

            def tool(p: str = pattern) -> None:
                agent = plait.create_agent(
                    scripted(ai("", call("grep_search", "g", pattern=p)), "done"),
                    middleware=[middleware],
                )
                assert "/pkg" in tool_answers(agent.invoke("go").messages)["g"].content, p

            plain, whole = best(baseline, 3), best(tool, 3)
            print(row(pattern, plain, whole))


if __name__ == "__main__":
    main()
