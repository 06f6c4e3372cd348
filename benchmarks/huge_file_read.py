"""Memory of reading a window of a huge file through DiskBackend, and of the text editor
refusing a file over its size limit (or showing a view_range of it) on the disk, state,
store and composite backends: peak Python allocations (tracemalloc) beside the file's
size, measured in the same run. For state and store the text is already in memory; the
peak is what the operation adds.

    python benchmarks/huge_file_read.py [MEGABYTES]
"""

from __future__ import annotations

import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from plait.backends import BackendError, CompositeBackend, DiskBackend, StateBackend, StoreBackend
from plait.store import MemoryStore
from plait_anthropic._editor import Editor

MB = 1024 * 1024


def peak(action: Callable[[], Any]) -> tuple[int, Any]:
    tracemalloc.start()
    try:
        result = action()
    except BackendError as error:
        result = str(error)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top, result


def main() -> None:
    size_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        line = b"x" * 99 + b"\n"
        with (root / "huge.log").open("wb") as handle:
            block = line * (MB // len(line))
            for _ in range(size_mb):
                handle.write(block)
        size = (root / "huge.log").stat().st_size
        fs = DiskBackend(root).bind()
        editor = Editor(fs=fs, max_file_size_mb=10)
        text = fs.read_text("/huge.log")
        store = MemoryStore()
        store.put(("filesystem",), "/huge.log", {"content": text})
        runtime = SimpleNamespace(state={"files": {"/huge.log": {"content": text}}}, store=store)
        routed = CompositeBackend(default=StateBackend(), routes={"/disk/": DiskBackend(root)})
        others = [
            ("state", StateBackend().bind(runtime), "/huge.log"),
            ("store", StoreBackend().bind(runtime), "/huge.log"),
            ("composite to disk", routed.bind(runtime), "/disk/huge.log"),
        ]
        rows = [
            ("baseline: the whole file as text", lambda: fs.read_text("/huge.log")),
            ("read_file offset=0 limit=10", lambda: fs.read("/huge.log", 0, 10)),
            ("read_file offset=1000000 limit=10", lambda: fs.read("/huge.log", 1_000_000, 10)),
            ("editor view over the 10 MB limit", lambda: editor.view("/huge.log")),
        ]
        for name, other, path in others:
            limited = Editor(fs=other, max_file_size_mb=10)
            rows += [
                (f"{name}: view", lambda e=limited, p=path: e.view(p)),
                (f"{name}: view_range [5, 14]", lambda e=limited, p=path: e.view(p, [5, 14])),
                (f"{name}: str_replace", lambda e=limited, p=path: e.str_replace(p, "x", "y")),
            ]
        print(f"file: {size / MB:.0f} MB")
        baseline = 0
        for name, action in rows:
            used, result = peak(action)
            baseline = baseline or used
            print(
                f"{name:38} peak {used / MB:8.2f} MB = {used / baseline:.5f}x the baseline  "
                f"({str(result)[:40]!r})"
            )


if __name__ == "__main__":
    main()
