"""``agents_md``: AGENTS.md files (project root to working folder, nearest wins) in the
system prompt, and an optional tool the agent records what it learned with."""

from plait_agents_md.middleware import (
    DEFAULT_TOOL_DESCRIPTION,
    FILE_NAME,
    TOOL_NAME,
    AgentsMdMiddleware,
)

__all__ = ["DEFAULT_TOOL_DESCRIPTION", "FILE_NAME", "TOOL_NAME", "AgentsMdMiddleware"]
