"""plait's agent for ``construct_cost.py``: ``create_agent`` with the fake model, the tool
and the five middleware of ``vs_langchain.py``, named as a user names them."""

from __future__ import annotations

from typing import Any

from _vs_common import Brain
from _vs_plait import MIDDLEWARE, TOOL, FakeModel

from plait import create_agent

WHAT = "create_agent, 5 middleware by name (the vs_langchain five)"


def build(*, middleware: bool = True) -> Any:
    return create_agent(
        FakeModel(Brain(1)), tools=[TOOL], middleware=MIDDLEWARE if middleware else []
    )
