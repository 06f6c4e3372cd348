"""Fixtures for the provider tests (the kernel's, plait-anthropic's, plait-openai-responses'):
the replay server (``tests/replay_server.py``), a Claude model sending to it, a closed
port, a clean provider environment and tool objects. Each test folder's ``conftest.py``
imports the ones it uses."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from replay_server import ReplayServer

ANTHROPIC_KEY = "sk-ant-api03-abcdefghijklmnopSECRET"
"""The key ``claude`` models are given: shaped like Anthropic's, so a test can check that
it, and anything like it, is kept out of errors."""


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    srv = ReplayServer()
    yield srv
    srv.close()


@pytest.fixture
def claude(server: ReplayServer) -> Any:
    """``claude(**settings)``: an ``AnthropicChatModel`` for ``claude-sonnet-4-5`` sending to
    ``server`` with ``ANTHROPIC_KEY`` (``model=`` another model, settings as the class)."""
    from plait_anthropic.model import AnthropicChatModel

    def build(model: str = "claude-sonnet-4-5", **settings: Any) -> AnthropicChatModel:
        settings.setdefault("api_key", ANTHROPIC_KEY)
        return AnthropicChatModel(model, base_url=server.url, **settings)

    return build


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture(autouse=True)
def _clean_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


@attrs.frozen
class StandInTool:
    """The attributes of ``plait.Tool`` a provider reads."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = attrs.Factory(lambda: {"type": "object", "properties": {}})
    provider_options: dict[str, Any] = attrs.Factory(dict)


@pytest.fixture
def make_tool() -> Any:
    """``make_tool(name, description, parameters, provider_options)`` → a tool object:
    ``plait.Tool`` when the tools module is available, else a stand-in with its fields."""
    try:
        from plait.tools import Tool
    except ImportError:  # pragma: no cover - until plait.tools lands
        return StandInTool

    def build(
        name: str,
        description: str = "",
        parameters: dict[str, Any] | None = None,
        provider_options: dict[str, Any] | None = None,
    ) -> Any:
        return Tool(
            name=name,
            description=description,
            parameters=parameters or {"type": "object", "properties": {}},
            provider_options=provider_options or {},
        )

    return build
