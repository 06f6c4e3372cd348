"""What the tests of ``anthropic_bash`` and of what runs through it share: ``make_bash``,
which closes every shell a test starts; whether a bubblewrap sandbox can be made here
(skipped where it cannot, except under ``PLAIT_REQUIRE_SANDBOX=1``, CI, where that is a
failure); and directories a root agent's sandbox user can reach. A test folder's
``conftest.py`` imports the fixtures it uses."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plait_anthropic._sandbox import NOBODY, Bubblewrap, SandboxUnavailable
from plait_anthropic.bash import AnthropicBashMiddleware

PATH = os.environ.get("PATH", os.defpath)


@pytest.fixture
def make_bash() -> Iterator[Callable[..., AnthropicBashMiddleware]]:
    """``make_bash(**options)``: an ``AnthropicBashMiddleware``, closed after the test (its
    shells, and every process they started, killed)."""
    made: list[AnthropicBashMiddleware] = []

    def factory(**options: Any) -> AnthropicBashMiddleware:
        middleware = AnthropicBashMiddleware(**options)
        made.append(middleware)
        return middleware

    yield factory
    for middleware in made:
        middleware.close()


def _unavailable() -> str | None:
    try:
        Bubblewrap.build(path=PATH)
    except SandboxUnavailable as problem:
        return str(problem)
    return None


def requires_sandbox() -> pytest.MarkDecorator:
    """The module mark of a sandbox test (``pytestmark = requires_sandbox()``)."""
    why = _unavailable()
    if why is not None and os.environ.get("PLAIT_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"PLAIT_REQUIRE_SANDBOX=1 but bubblewrap cannot run here: {why}")
    return pytest.mark.skipif(why is not None, reason=f"no bubblewrap sandbox: {why}")


def reachable(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path``, except as root: then a directory every user can reach, since a root
    agent's sandbox runs as an unprivileged user, who must reach the directories it shows
    (pytest's are under a 0700 ``/tmp/pytest-of-root``)."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    made = Path(tempfile.mkdtemp(prefix="plait-sandbox-test-"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def workspace(tmp_path: Path) -> Path:
    """``tmp_path / "ws"``, given to nobody when the tests run as root: a root agent's
    sandbox runs as the workspace's owner, and refuses a workspace only root can write."""
    path = tmp_path / "ws"
    path.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    return path
