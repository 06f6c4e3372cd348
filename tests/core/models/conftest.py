"""Fixtures for the kernel's provider tests (``tests/provider_fixtures.py``)."""

from __future__ import annotations

from provider_fixtures import _clean_provider_env, closed_port, make_tool, server

__all__ = ["_clean_provider_env", "closed_port", "make_tool", "server"]
