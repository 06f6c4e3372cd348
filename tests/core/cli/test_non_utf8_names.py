"""Issue 24 item 11 re-check: an agent file whose name (or folder) is not UTF-8 runs with
``plait run``, keeps its SQLite thread, and a missing one is one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

# as in the other CLI tests: ``from conftest import`` found another folder's conftest when
# this folder ran in one pytest call with others
CLI = Callable[..., "subprocess.CompletedProcess[str]"]

LATIN1_DIR = os.fsdecode(b"d\xe9p\xf4t")
LATIN1_FILE = os.fsdecode(b"m\xe9t\xe9o.toml")


def test_an_agent_file_with_a_latin1_name_runs_and_keeps_its_thread(
    plait_cli: CLI, tmp_path: Path, examples: Path
) -> None:
    folder = tmp_path / LATIN1_DIR
    folder.mkdir()
    text = (examples / "hello.toml").read_text(encoding="utf-8")
    text = text.replace("[agent]\n", '[agent]\ncheckpointer = "sqlite:///threads.db"\n', 1)
    (folder / LATIN1_FILE).write_text(text, encoding="utf-8")
    shutil.copy(examples / "hello_tools.py", folder / "hello_tools.py")

    first = plait_cli("run", "--json", "--thread", "t1", LATIN1_FILE, "Paris?", cwd=folder)
    second = plait_cli("run", "--json", "--thread", "t1", LATIN1_FILE, "Rome?", cwd=folder)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    before, after = json.loads(first.stdout), json.loads(second.stdout)
    assert before["thread_id"] == after["thread_id"] == "t1"
    assert len(after["messages"]) > len(before["messages"])  # the thread was kept
    assert after["messages"][: len(before["messages"])] == before["messages"]
    assert (folder / "threads.db").is_file()


def test_a_missing_agent_file_with_a_latin1_name_is_one_clear_line(
    plait_cli: CLI, tmp_path: Path
) -> None:
    done = plait_cli("run", str(tmp_path / LATIN1_DIR / LATIN1_FILE), "hi")
    assert done.returncode != 0
    assert done.stderr.strip() == (
        f"plait: error: {tmp_path}/d\\udce9p\\udcf4t/m\\udce9t\\udce9o.toml: no such file"
    )
