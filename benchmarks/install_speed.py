"""The README's install, ``pip install . ./plugins/*``, against other ways to install the
same distributions: each in a fresh virtual environment, from a fresh copy of the checkout.

Rows, each printed as wall and CPU seconds (the CPU of every process the install started)
and as a ratio to the README's command measured in the same run:

- ``pip install . ./plugins/*``: the README's line, one pip invocation (pip builds each
  local folder in its own isolated build environment, installing its build backend into
  each: setuptools for plait, flit_core for a plugin);
- ``pip install .`` then ``pip install ./plugins/X`` for each plugin: one invocation each;
- ``pip install --no-build-isolation``: the build backends (setuptools>=69, flit_core)
  installed first, then every folder built with them (two commands, and the user must know
  the build requirements);
- ``uv pip install . ./plugins/*``: uv (PyPI's ``uv``) when it is on PATH or importable,
  with an empty cache (``cold``: dependencies downloaded) and again with that cache
  (``warm``). pip's own runs use the machine's pip cache as it is (dependencies are not
  downloaded again; local folders are never cached, so every plugin is built each time).

A shared machine's load weighs on wall time, so the load average is printed before and
after each row; CPU seconds vary less with load.

    python benchmarks/install_speed.py [--only README,uv-warm,...]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from graphlib import TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JUNK = shutil.ignore_patterns(
    ".git", ".tox", "build", "site", "*.egg-info", "__pycache__", ".mypy_cache", "*.db"
)


def _uv() -> list[str] | None:
    found = shutil.which("uv")
    if found:
        return [found]
    try:
        import uv  # type: ignore[import-not-found]
    except ImportError:
        return None
    return [uv.find_uv_bin()]


def _in_install_order() -> list[str]:
    """The plugin folders, each after the built-in plugins it depends on (they are not on
    PyPI, so a pip run per plugin must find them installed already)."""
    graph: dict[str, set[str]] = {}
    for folder in sorted((ROOT / "plugins").iterdir()):
        if not (folder / "pyproject.toml").is_file():
            continue
        project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
        names = (re.split(r"[<>=!~ \[;]", dep, maxsplit=1)[0] for dep in project["dependencies"])
        graph[folder.name] = {
            n.removeprefix("plait-").replace("-", "_") for n in names if n.startswith("plait-")
        }
    return list(TopologicalSorter(graph).static_order())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Bench:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.count = 0

    def fresh(self) -> tuple[Path, Path, dict[str, str]]:
        """A copy of the checkout, a new venv and the environment that runs in it."""
        self.count += 1
        place = self.work / str(self.count)
        tree = place / "plait"
        shutil.copytree(ROOT, tree, ignore=JUNK)
        venv = place / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PLAIT_", "PYTHON"))}
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        return tree, venv, env


def _sh(line: str, cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed: {line}\n{done.stdout}{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated row keys to run")
    args = parser.parse_args()
    plugins = " ".join(f"./plugins/{name}" for name in _in_install_order())
    uv = _uv()
    work = Path(tempfile.mkdtemp(prefix="plait-install-bench-"))
    bench = Bench(work)
    uv_cache = work / "uv-cache"

    def readme(tree: Path, venv: Path, env: dict[str, str]) -> None:
        _sh("pip install -q . ./plugins/*", tree, env)

    def one_each(tree: Path, venv: Path, env: dict[str, str]) -> None:
        _sh("pip install -q .", tree, env)
        for folder in plugins.split():
            _sh(f"pip install -q {folder}", tree, env)

    def no_isolation(tree: Path, venv: Path, env: dict[str, str]) -> None:
        _sh("pip install -q 'setuptools>=69' 'flit_core>=3.12,<5'", tree, env)
        _sh("pip install -q --no-build-isolation . ./plugins/*", tree, env)

    def uv_install(tree: Path, venv: Path, env: dict[str, str]) -> None:
        assert uv is not None
        env = {**env, "UV_CACHE_DIR": str(uv_cache)}
        _sh(f"{uv[0]} pip install -q . ./plugins/*", tree, env)  # into $VIRTUAL_ENV

    rows: dict[str, tuple[str, Callable[[Path, Path, dict[str, str]], None]]] = {
        "README": ("pip install . ./plugins/*", readme),
        "no-isolation": ("pip install --no-build-isolation (backends first)", no_isolation),
    }
    if uv is not None:
        rows["uv-cold"] = ("uv pip install . ./plugins/* (empty cache)", uv_install)
        rows["uv-warm"] = ("uv pip install . ./plugins/* (cache of the run above)", uv_install)
    rows["one-each"] = ("pip install ., then ./plugins/X one by one", one_each)
    wanted = [k for k in args.only.split(",") if k] or list(rows)
    if "README" not in wanted:
        wanted.insert(0, "README")
    print(f"{sys.executable}; uv: {uv[0] if uv else 'not found'}; {len(plugins.split())} plugins")
    results: dict[str, tuple[float, float]] = {}
    try:
        for key in wanted:
            label, run = rows[key]
            tree, venv, env = bench.fresh()
            before = _load()
            cpu, start = _children_cpu(), time.perf_counter()
            run(tree, venv, env)
            results[key] = (time.perf_counter() - start, _children_cpu() - cpu)
            wall, used = results[key]
            print(f"  {label}: {wall:.1f} s wall, {used:.1f} s CPU (load {before} -> {_load()})")
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base_wall, base_cpu = results["README"]
    print(f"{'install':<56}{'wall s':>8}{'x':>6}{'CPU s':>8}{'x':>6}")
    for key, (wall, used) in results.items():
        label = rows[key][0]
        print(f"{label:<56}{wall:>8.1f}{wall / base_wall:>6.2f}{used:>8.1f}{used / base_cpu:>6.2f}")


if __name__ == "__main__":
    main()
