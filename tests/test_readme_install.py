"""The README's first two commands, and the plugin READMEs' install lines, run literally in
fresh virtual environments (slow: each builds plait with PyPI's setuptools and its plugins
with flit_core).

Marked ``slow``: tox's ``tests`` env runs it once; ``pytest -m 'not slow'`` leaves it out.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").exists())

pytestmark = pytest.mark.slow


def _bash_blocks(text: str) -> list[list[str]]:
    """The command lines of each ```bash block (comments cut off)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    return [
        [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
        for block in blocks
    ]


def _checkout(tmp_path: Path) -> Path:
    """A copy of the repository without build leftovers (pip builds in the source tree)."""
    junk = shutil.ignore_patterns(
        ".git", ".tox", "build", "site", "*.egg-info", "__pycache__", ".mypy_cache", "*.db"
    )
    root = tmp_path / "plait"
    shutil.copytree(REPO, root, ignore=junk)
    return root


def _venv(path: Path) -> dict[str, str]:
    """A fresh virtual environment (nothing installed) and the environment to run in it."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLAIT_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(path)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # No bytecode compiled at install (pip's --no-compile): an optimisation of later imports,
    # not part of what gets installed; it was 4 s of the README install's 55 s of CPU.
    env["PIP_COMPILE"] = "0"
    return env


def _sh(line: str, cwd: Path, env: dict[str, str], stdin: str = "") -> str:
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_readme_first_commands_in_a_fresh_venv(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    install, run = _bash_blocks((REPO / "README.md").read_text(encoding="utf-8"))[0]
    assert install == "pip install . ./plugins/*"
    env = _venv(tmp_path / "venv")
    _sh(install, root, env)
    listed = _sh("plait plugins", root, env)
    for name in ("pii", "human_in_the_loop", "tool_call_limit", "model_retry"):
        assert re.search(rf"^  {name} ", listed, flags=re.MULTILINE), listed
    out = _sh(run, root, env, stdin="a\n")
    assert "Approval needed: issue_refund(" in out
    assert '-> issue_refund(order_id="1042", amount=25.0)' in out
    last = out.splitlines()[-1]
    assert "I have not refunded order 2077. Error: tool call limit exceeded" in last
    assert last.endswith("I will send the confirmation to [REDACTED_EMAIL].")


def _needs(name: str) -> list[str]:
    """The folders of the built-in plugins ``name`` depends on (they are not on PyPI, so its
    install lines name them too)."""
    project = tomllib.loads((REPO / "plugins" / name / "pyproject.toml").read_text())["project"]
    needs = (re.split(r"[<>=!~ \[;]", dep, maxsplit=1)[0] for dep in project["dependencies"])
    return [d.removeprefix("plait-").replace("-", "_") for d in needs if d.startswith("plait-")]


def test_every_plugin_readme_gives_the_two_install_lines() -> None:
    for name in PLUGINS:
        text = (REPO / "plugins" / name / "README.md").read_text(encoding="utf-8")
        folders = " ".join(f"./plugins/{folder}" for folder in [*_needs(name), name])
        assert [f"pip install . {folders}", f"pip install {folders}"] in _bash_blocks(text), (
            f"plugins/{name}/README.md"
        )


def test_plugin_readme_install_lines_in_a_fresh_venv(tmp_path: Path) -> None:
    """With plait and the plugin together, then a plugin alone once plait is installed."""
    root = _checkout(tmp_path)
    env = _venv(tmp_path / "venv")
    first, second = "model_retry", "pii"
    with_plait = _bash_blocks((root / "plugins" / first / "README.md").read_text())
    alone = _bash_blocks((root / "plugins" / second / "README.md").read_text())
    _sh(next(b for b in with_plait if len(b) == 2)[0], root, env)
    _sh(next(b for b in alone if len(b) == 2)[1], root, env)
    listed = _sh("plait plugins", root, env)
    middleware = re.findall(r"^  (\w+) +plait-", listed, flags=re.MULTILINE)
    assert middleware == ["model_retry", "pii"], listed


def test_new_plugin_next_steps_pass_as_printed_in_a_fresh_venv(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    env = _venv(tmp_path / "venv")
    _sh("pip install .", root, env)
    work = tmp_path / "work"
    work.mkdir()
    printed = _sh("plait new-plugin shout", work, env)
    steps = printed.split("\nNext:\n", 1)[1].splitlines()
    commands = [s.strip() for s in steps if s.strip().startswith(("pip ", "pytest "))]
    assert [c.split()[0] for c in commands] == ["pip", "pytest"], printed
    for command in commands:
        _sh(command, work, env)
