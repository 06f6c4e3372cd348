"""The environment of a process a test starts: this one's, without the ``PLAIT_*``
settings a developer may have set outside (``PLAIT_DEBUG``, ``PLAIT_TRACE``,
``PLAIT_DISABLE_PLUGINS``...), which would change what it prints or loads. The suite's
own cache folder (``PLAIT_CACHE_DIR``, set by ``tests/conftest.py``) is kept, so that no
process of a test run writes into the user's ``~/.cache``."""

from __future__ import annotations

import os

KEPT = frozenset({"PLAIT_CACHE_DIR"})


def outside_env() -> dict[str, str]:
    """A copy of ``os.environ`` without the ``PLAIT_*`` settings but the suite's own."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PLAIT_") or k in KEPT}
