"""Fixtures for the Anthropic plugin's tests: the replay server speaking the Messages API
(``tests/replay_server.py``) and an environment without the user's Anthropic settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from replay_server import ReplayServer


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    srv = ReplayServer()
    yield srv
    srv.close()


@pytest.fixture(autouse=True)
def _clean_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
