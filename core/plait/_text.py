"""Text shortened for one terminal line (the CLI's display and listings)."""

from __future__ import annotations

__all__ = ["short"]


def short(text: str, width: int = 100) -> str:
    """``text`` on one line, cut to ``width`` characters with ``...``."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."
