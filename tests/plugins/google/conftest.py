"""Fixtures for the Gemini provider's tests: the loopback replay server
(``tests/replay_server.py``), the recorded Gemini traffic from ``../shared/recorded/``,
and an environment without the user's Google settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from replay_server import ReplayServer

GOOGLE_ENV = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    srv = ReplayServer()
    yield srv
    srv.close()


@pytest.fixture(autouse=True)
def _clean_google_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in GOOGLE_ENV:
        monkeypatch.delenv(name, raising=False)
