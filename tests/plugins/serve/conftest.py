"""Fixtures: ``serve(agent, **options)`` starts ``plait_serve.app`` under uvicorn on a
loopback port (stopped after the test); ``support`` is examples/support.toml's agent;
``checkpointer_url`` is each kind of checkpointer in turn (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_server import fresh_postgres_schema
from serve_helpers import SUPPORT, Served

import plait
import plait_serve
from plait.agentfile import load_agent


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(agent: plait.Agent, **options: Any) -> Served:
        served = Served(plait_serve.app(agent, **options))
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture
def support() -> plait.Agent:
    """examples/support.toml: looks orders up, pauses for approval before a refund."""
    return load_agent(SUPPORT)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def checkpointer_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'agent.db'}"
    else:
        with fresh_postgres_schema() as schema_url:
            yield schema_url
