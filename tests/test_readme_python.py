"""README.md's Python blocks, read top to bottom, run as written: offline, no API key."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from plait_env import outside_env

REPO = Path(__file__).resolve().parents[1]


def test_readme_python_blocks_run_as_written(tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 2
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    env = {
        k: v
        for k, v in outside_env().items()
        if not k.endswith("_API_KEY") and "PROXY" not in k.upper()
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "It is sunny in Paris.",
        "1 messages so far",
        "Hi!",
    ]
    assert (tmp_path / "agent.db").is_file()  # the thread was kept where the README says
