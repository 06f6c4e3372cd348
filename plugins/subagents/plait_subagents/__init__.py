"""``subagents``: a ``task`` tool that hands work to a sub-agent with a fresh context
(the middleware in ``middleware``, background tasks in ``background``)."""

from plait_subagents.background import BACKGROUND_KEY
from plait_subagents.middleware import (
    BACKGROUND_TOOLS,
    GENERAL_PURPOSE,
    TOOL_NAME,
    BackgroundSubAgentMiddleware,
    SubAgent,
    SubAgentInterruptError,
    SubAgentMiddleware,
)

__all__ = [
    "BACKGROUND_KEY",
    "BACKGROUND_TOOLS",
    "GENERAL_PURPOSE",
    "TOOL_NAME",
    "BackgroundSubAgentMiddleware",
    "SubAgent",
    "SubAgentInterruptError",
    "SubAgentMiddleware",
]
