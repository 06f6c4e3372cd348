"""Suite-wide setup.

- Tests marked ``slow`` (fresh virtual environments, minutes each) are collected first, so
  that under pytest-xdist (tox runs ``-n 4``) they start at once and overlap the rest of
  the suite instead of running alone at its end.
- plait's cache (the copy of the entry-point scan) goes to a folder of the run's own,
  removed at its end, for the suite's processes and the ones they start: a test run
  writes nothing into the user's ``~/.cache``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CACHE_DIR = "PLAIT_CACHE_DIR"
_saved: list[tuple[str | None, str]] = []


def pytest_configure(config: pytest.Config) -> None:
    folder = tempfile.mkdtemp(prefix="plait-test-cache-")
    _saved.append((os.environ.get(_CACHE_DIR), folder))
    os.environ[_CACHE_DIR] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    while _saved:
        before, folder = _saved.pop()
        if before is None:
            os.environ.pop(_CACHE_DIR, None)
        else:
            os.environ[_CACHE_DIR] = before
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: order kept
