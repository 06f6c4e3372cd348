"""The floor under plait for ``construct_cost.py``: importing only the libraries the kernel
is built on and must load for any agent (attrs for its types, cattrs for its conversions,
pluggy for its hooks) and building nothing. No framework on this core set can import and
build for less; the gap between this row and plait's is what plait's own code costs."""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
import pluggy

WHAT = "import attrs, cattrs and pluggy; build nothing"

_LOADED = (attrs, cattrs, pluggy)


def build(**_options: Any) -> None:
    """Nothing to build: the row measures the imports alone."""
