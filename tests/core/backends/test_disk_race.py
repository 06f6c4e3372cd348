"""DiskBackend under a real race: another process keeps swapping ``root/d`` for a symbolic
link to a directory outside the root while every operation runs; nothing outside is ever
read, listed, written or deleted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plait.backends import BackendError, DiskBackend, format_lines

SWAPPER = """
import os, shutil, sys
root, outside = sys.argv[1], sys.argv[2]
d, parked = os.path.join(root, "d"), os.path.join(root, "d.parked")
while True:
    os.rename(d, parked)
    try:
        os.symlink(outside, d)
        os.unlink(d)
    except FileExistsError:  # the backend made a new d meanwhile (a write creates parents)
        pass
    while True:
        try:
            os.rename(parked, d)
            break
        except OSError:  # a d made by the backend meanwhile: remove it, put the real one back
            shutil.rmtree(d, ignore_errors=True)
"""

SECONDS = 2.0


def test_swapping_a_directory_for_a_link_never_reaches_outside(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text("OUTSIDE\n")
    (outside / "only_outside.txt").write_text("OUTSIDE\n")
    victims = [f"victim{i}.txt" for i in range(5000)]
    for name in victims:
        (outside / name).write_text("OUTSIDE\n")
    before = set(os.listdir(outside))
    fs = DiskBackend(root).bind()
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside)])
    escapes, raw_errors, operations, index = 0, 0, 0, 0
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline:
            index += 1
            attempts = {
                "read": lambda: fs.read("/d/f.txt"),
                "read_text": lambda: fs.read_text("/d/f.txt"),
                "ls": lambda: [e.path for e in fs.ls("/d")],
                "glob": lambda: [e.path for e in fs.glob("**", "/d")],
                "grep": lambda: [m.path for m in fs.grep("OUTSIDE", "/d")],
                "write": lambda i=index: fs.write(f"/d/new{i}.txt", "x"),
                "delete": lambda i=index: fs.delete(f"/d/{victims[i % len(victims)]}"),
                "delete_dir": lambda: fs.delete("/d/sub"),
                "edit": lambda: fs.edit("/d/f.txt", "OUTSIDE", "pwned"),
            }
            for name, attempt in attempts.items():
                operations += 1
                try:
                    seen = attempt()
                except BackendError as error:
                    assert str(tmp_path) not in str(error), (name, str(error))
                    continue
                except Exception:
                    raw_errors += 1
                    continue
                if "OUTSIDE" in repr(seen) or "only_outside" in repr(seen):
                    escapes += 1
        assert swapper.poll() is None, "the swapping process stopped early"
    finally:
        swapper.kill()
        swapper.wait()
    after = set(os.listdir(outside))
    escapes += len(before ^ after)
    assert (outside / "f.txt").read_text() == "OUTSIDE\n"
    print(
        f"\n{operations} operations during {SECONDS}s of swaps: {escapes} escapes, "
        f"{raw_errors} errors other than BackendError"
    )
    assert escapes == 0
    assert raw_errors == 0


def test_os_errors_are_backend_errors_without_the_host_path(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "locked").mkdir(parents=True)
    (root / "f.txt").write_text("f\n")
    fs = DiskBackend(root).bind()
    attempts = [
        lambda: fs.write("/f.txt/x.txt", "x"),
        lambda: fs.read("/f.txt/x.txt"),
        lambda: fs.ls("/f.txt/sub"),
        lambda: fs.delete("/f.txt/x.txt"),
        lambda: fs.rename("/f.txt", "/f.txt/y.txt"),
        lambda: fs.rename("/locked", "/f.txt/z"),
        lambda: fs.edit("/f.txt/x.txt", "a", "b"),
    ]
    messages = []
    for attempt in attempts:
        with pytest.raises(BackendError) as info:
            attempt()
        messages.append(str(info.value))
    assert all(m.startswith("Error: ") and str(tmp_path) not in m for m in messages), messages
    assert "Error: cannot write /f.txt/x.txt: a part of it is a file" in messages


def test_reading_a_window_streams_the_file(tmp_path: Path) -> None:
    lines = [f"line {i}" for i in range(50_000)]
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\r\nlast\x0cpage\n")
    fs = DiskBackend(tmp_path).bind()
    text = (tmp_path / "big.txt").read_bytes().decode()
    assert fs.read("/big.txt", 49_998, 5) == format_lines(text, 49_998, 5, path="/big.txt")
    assert fs.read("/big.txt", 0, 2) == format_lines(text, 0, 2, path="/big.txt")
    with pytest.raises(BackendError, match="which has 50002 lines"):
        fs.read("/big.txt", 60_000)
