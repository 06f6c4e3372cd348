"""What matching glob patterns component by component (``plait.backends._glob``) costs
beside one regular expression for the whole path (``fnmatch.translate``, the shape the
backends used before, which backtracks without end on some patterns), over the same
paths in the same run.

    python benchmarks/glob_match.py [PATHS]
"""

from __future__ import annotations

import fnmatch
import re
import sys
import timeit
from collections.abc import Callable
from typing import Any

from plait.backends._glob import glob_matcher

PATTERNS = ["*.py", "**/*.py", "src/**/test_*.py", "**/pkg3/**/*.md", "**"]


def best(action: Callable[[], Any], rounds: int = 5) -> float:
    """The fastest of ``rounds`` runs of ``action``, in seconds."""
    return min(timeit.repeat(action, number=1, repeat=rounds))


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    paths = [
        f"src/pkg{n % 7}/sub{n % 5}/{'test_' if n % 3 else ''}mod{n}.{'py' if n % 4 else 'md'}"
        for n in range(count)
    ]
    print(f"{count} paths; per pattern: one regex, components, ratio, matches")
    for pattern in PATTERNS:
        whole = re.compile(fnmatch.translate(pattern)).match
        parts = glob_matcher(pattern)
        hits = sum(1 for p in paths if parts(p))
        one = best(lambda w=whole: [p for p in paths if w(p)])
        split = best(lambda m=parts: [p for p in paths if m(p)])
        print(f"{pattern!r:<22} {one * 1e3:7.1f}ms {split * 1e3:7.1f}ms {split / one:5.2f}x {hits}")


if __name__ == "__main__":
    main()
