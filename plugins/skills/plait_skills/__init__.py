"""``skills``: Agent Skills (``SKILL.md`` folders) the model sees by name and loads on demand."""

from plait_skills.middleware import (
    DEFAULT_SYSTEM_PROMPT,
    DEFAULT_TOOL_DESCRIPTION,
    STATE_KEY,
    TOOL_NAME,
    SkillsMiddleware,
)
from plait_skills.skill import Skill, SkillError, parse_skill

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_TOOL_DESCRIPTION",
    "STATE_KEY",
    "TOOL_NAME",
    "Skill",
    "SkillError",
    "SkillsMiddleware",
    "parse_skill",
]
