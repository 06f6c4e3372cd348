"""Suite-wide setup.

- Tests marked ``slow`` (fresh virtual environments, minutes each) and ``waits`` (a lease
  running out: seconds of an idle core) start first, so that under pytest-xdist (tox runs
  ``-n 4``) they overlap the rest of the suite instead of running alone at its end. xdist's
  worksteal hands each worker a contiguous block of the collection, so they are spread
  over the blocks' starts: ``slow`` at the first worker's, ``waits`` at the others'.
- plait's cache files (the copy of the entry-point scan, attrs' compiled methods) go to a
  folder of the run's own, removed at its end, for the suite's processes and the ones
  they start: a test run writes nothing into the user's ``~/.cache``. (pytest imports
  plait, as its plugin, before this runs: under tox, ``tox.ini`` gives that a folder.)
- Under pytest-xdist, the controller rewrites the test modules' asserts once, into
  pytest's own cache, before it starts the workers, which then load them from there:
  each worker rewrote all of them (5 s of CPU a worker, the same work four times).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from pathlib import Path

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = [item for item in items if item.get_closest_marker("slow")]
    waits = [item for item in items if item.get_closest_marker("waits") and item not in slow]
    first = {id(item) for item in (*slow, *waits)}
    rest = [item for item in items if id(item) not in first]  # order kept
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers < 2:
        items[:] = [*slow, *waits, *rest]
        return
    # The blocks worksteal sends at the start: worker i gets len(pending) // (workers - i).
    starts: list[list[pytest.Item]] = [list(slow)] + [[] for _ in range(workers - 1)]
    for k, item in enumerate(waits):
        starts[1 + k % (workers - 1)].append(item)
    ordered: list[pytest.Item] = []
    remaining = len(items)
    for i, block in enumerate(starts):
        size = remaining // (workers - i)
        fill = max(0, size - len(block))
        ordered += block + rest[:fill]
        del rest[:fill]
        remaining -= len(block) + fill
    items[:] = ordered + rest


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before pytest-xdist's controller starts its workers (its own hook runs last)."""
    config = session.config
    if config.pluginmanager.hasplugin("dsession"):  # an xdist controller, not a worker
        _rewrite_test_modules_once(config)


def _rewrite_test_modules_once(config: pytest.Config) -> None:
    """Write the rewritten code of each test module and conftest.py where pytest's import
    hook looks first (``__pycache__/*.pytest-*.pyc``, checked against the source), as
    pytest itself writes it. pytest's own helpers, private: if they change, nothing is
    written and each worker rewrites as before."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        patterns = [*config.getini("python_files"), "conftest.py"]
        for path in sorted(Path(__file__).parent.rglob("*.py")):
            if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns):
                continue
            cache = rewrite.get_cache_dir(path)
            pyc = cache / (path.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(path, pyc) is not None:
                continue
            cache.mkdir(exist_ok=True)
            stamp, code = rewrite._rewrite_test(path, config)
            rewrite._write_pyc(state, code, stamp, pyc)
    except (AttributeError, ImportError, KeyError, OSError, TypeError):
        return
