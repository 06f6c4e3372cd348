"""Install every built-in plugin (plugins/*/) into the running Python from wheels built
once per tox run and shared by its environments.

    python .ci/plugin_wheels.py WHEEL_DIR [PROJECT_FOLDER ...]

tox calls this before each environment's commands. The first environment builds the
wheels into WHEEL_DIR; the others find them there and only install them. The build
requirements the plugins' pyproject.toml files name are installed once into the building
environment, and each plugin's build backend is called once, directly (PEP 517
``build_wheel``), one process a plugin, as many at a time as there are cores: ``pip wheel``
would make a fresh build environment for each of the thirty-odd plugins (or, without
isolation, still start three processes a plugin, one after the other): 18 s where this
takes 5 s on 2 cores. The wheels are rebuilt when a file under plugins/ changed
since they were built (a digest of every file is kept beside them), and an environment
that already holds wheels of that digest installs nothing. A lock file serializes
environments run in parallel (``tox p``). Each PROJECT_FOLDER (a local project such as
tests/integration/plait-hello) is then installed the same way, every time.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"__pycache__", "build", "dist"}


def plugin_folders() -> list[Path]:
    return sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())


def digest(folders: list[Path]) -> str:
    """A digest of every source file of the plugins (names and contents)."""
    sha = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            parts = path.relative_to(folder).parts
            if not path.is_file() or any(p in SKIP or p.endswith(".egg-info") for p in parts):
                continue
            sha.update(str(path.relative_to(ROOT)).encode() + b"\0")
            sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def install(*args: str, again: bool = False) -> None:
    """Install into the running Python: with uv when it is on PATH (tox-uv brings it; it
    installs the plugins and their hundred-odd dependencies in about half pip's time), else
    with pip. ``again``: the given wheels only, replacing what is there."""
    uv = shutil.which("uv")
    if uv:
        extra = ["--no-deps", "--reinstall"] if again else []
        command = [uv, "pip", "install", "-q", "--python", sys.executable, *extra, *args]
    else:
        extra = ["--no-deps", "--force-reinstall"] if again else []
        command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "install"]
        command += [*extra, *args]
    subprocess.check_call(command)


def build_system(folder: Path) -> dict[str, list[str] | str]:
    data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    table: dict[str, list[str] | str] = data["build-system"]
    return table


def build_requirements(folders: list[Path]) -> list[str]:
    """Every requirement of the plugins' ``[build-system]`` tables, each named once."""
    needs: set[str] = set()
    for folder in folders:
        needs.update(build_system(folder)["requires"])
    return sorted(needs)


# PEP 517: import the backend (``module`` or ``module:object``), build into the folder given.
BUILD_WHEEL = """import importlib, sys
module, _, name = sys.argv[1].partition(":")
backend = importlib.import_module(module)
for part in filter(None, name.split(".")):
    backend = getattr(backend, part)
backend.build_wheel(sys.argv[2])
"""


def build_wheel(folder: Path, out: Path) -> None:
    backend = str(build_system(folder)["build-backend"])
    done = subprocess.run(
        [sys.executable, "-c", BUILD_WHEEL, backend, str(out)],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"building {folder.name}'s wheel failed:\n{done.stdout}{done.stderr}")


def build(folders: list[Path], out: Path, stamp: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    install(*build_requirements(folders))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda folder: build_wheel(folder, out), folders))
    (out / "DIGEST").write_text(stamp, encoding="utf-8")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0]).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    folders = plugin_folders()
    with open(out.parent / (out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = digest(folders)
        kept = out / "DIGEST"
        if not kept.is_file() or kept.read_text(encoding="utf-8") != stamp:
            build(folders, out, stamp)
        wheels = sorted(out.glob("*.whl"))
        if len(wheels) != len(folders):
            build(folders, out, stamp)
            wheels = sorted(out.glob("*.whl"))
    installed = Path(sys.prefix) / "plait-plugin-wheels.digest"
    # Unless this environment already has these very wheels. The same version number may
    # hold new code: replace what an earlier run installed (or began to install); a fresh
    # environment needs no second pass.
    if not installed.is_file() or installed.read_text(encoding="utf-8") != stamp:
        again = installed.is_file()
        installed.write_text("", encoding="utf-8")
        install(*map(str, wheels))  # with their dependencies
        if again:
            install(*map(str, wheels), again=True)
        installed.write_text(stamp, encoding="utf-8")
    if argv[1:]:
        install(*argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
