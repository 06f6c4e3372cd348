"""Fixtures for the Anthropic plugin's tests: from ``tests/provider_fixtures.py`` the
replay server speaking the Messages API, a Claude model sending to it (``claude``), a closed
port, tool objects and an environment without the user's provider settings; from
``tests/shell_support.py`` ``make_bash``, which closes every shell a test starts."""

from __future__ import annotations

from provider_fixtures import _clean_provider_env, claude, closed_port, make_tool, server
from shell_support import make_bash

__all__ = ["_clean_provider_env", "claude", "closed_port", "make_bash", "make_tool", "server"]
