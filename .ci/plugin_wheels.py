"""Install every built-in plugin (plugins/*/) into the running Python from wheels built
once per tox run and shared by its environments.

    python .ci/plugin_wheels.py WHEEL_DIR

tox calls this before each environment's commands. The first environment builds the
wheels into WHEEL_DIR (``pip wheel --no-deps``); the others find them there and only
install them. The build requirements the plugins' pyproject.toml files name are installed
once into the building environment and every plugin is built with them
(``--no-build-isolation``): pip would otherwise make a fresh build environment, and install
setuptools into it, for each of the thirty-odd plugins. The wheels are rebuilt when a file under plugins/ changed since they were
built (a digest of every file is kept beside them), and an environment that already holds
wheels of that digest installs nothing. A lock file serializes environments run in
parallel (``tox -p``).
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tomllib
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


def pip(*args: str) -> None:
    subprocess.check_call([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args])


def build_requirements(folders: list[Path]) -> list[str]:
    """Every requirement of the plugins' ``[build-system]`` tables, each named once."""
    needs: set[str] = set()
    for folder in folders:
        data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
        needs.update(data["build-system"]["requires"])
    return sorted(needs)


def build(folders: list[Path], out: Path, stamp: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    pip("install", *build_requirements(folders))
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(out), *map(str, folders))
    (out / "DIGEST").write_text(stamp, encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
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
    if installed.is_file() and installed.read_text(encoding="utf-8") == stamp:
        return 0  # this environment already has these very wheels
    pip("install", *map(str, wheels))  # with their dependencies
    # The same version number may hold new code: replace what an earlier run installed.
    pip("install", "--no-deps", "--force-reinstall", *map(str, wheels))
    installed.write_text(stamp, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
