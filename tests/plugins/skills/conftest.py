"""Fixtures for the skills plugin's tests: ``make_bash`` (``tests/shell_support.py``), the
shell a skill's scripts run through, closed after each test."""

from __future__ import annotations

from shell_support import make_bash

__all__ = ["make_bash"]
