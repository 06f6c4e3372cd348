"""Suite-wide ordering: tests marked ``slow`` (fresh virtual environments, minutes each) are
collected first, so that under pytest-xdist (tox runs ``-n 3``) they start at once and
overlap the rest of the suite instead of running alone at its end."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: order kept
