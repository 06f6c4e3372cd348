"""A third-party plugin distribution written for a test, as pip installs one: a module and
a ``.dist-info`` (``METADATA``, ``entry_points.txt``) beside it on ``sys.path``, and
plait's entry points found again."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from plait import _entrypoints


def install_distribution(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    name: str,
    version: str,
    module: str,
    source: str,
    group: str,
    entry_points: dict[str, str],
) -> None:
    """Distribution ``name`` ``version`` in ``folder``, first on ``sys.path`` for the test:
    ``module`` holds ``source``, and ``entry_points`` (entry-point name -> object in
    ``module``) are declared in ``group``."""
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    points = "".join(f"{point} = {module}:{obj}\n" for point, obj in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{points}")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, module, raising=False)
    _entrypoints.refresh()
