"""Fixtures for the Anthropic plugin's tests (``tests/provider_fixtures.py``): the replay
server speaking the Messages API, a closed port, tool objects and an environment without
the user's provider settings."""

from __future__ import annotations

from provider_fixtures import _clean_provider_env, closed_port, make_tool, server

__all__ = ["_clean_provider_env", "closed_port", "make_tool", "server"]
