"""LangChain's agent for ``construct_cost.py``: ``langchain.agents.create_agent`` with the
same fake model, tool and five middleware as in ``vs_langchain.py``."""

from __future__ import annotations

from typing import Any

from _vs_common import Brain
from _vs_lc import agent

WHAT = "create_agent, 5 middleware (ModelCallLimit, ToolCallLimit, ModelRetry, ToolRetry, PII)"


def build() -> Any:
    return agent(Brain(1), with_middleware=True)
