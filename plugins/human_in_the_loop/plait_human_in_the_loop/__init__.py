"""plait-human-in-the-loop: pause before chosen tool calls for a human to review them.

The middleware lives in ``middleware.py``, the terminal dialog ``plait run``/``plait chat``
show for its interrupts in ``answerer.py``; this module only exports.
"""

from __future__ import annotations

from plait_human_in_the_loop.middleware import (
    ApproveDecision,
    EditDecision,
    EditedAction,
    HumanInTheLoopError,
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
    RejectDecision,
    RespondDecision,
)

__all__ = [
    "ApproveDecision",
    "EditDecision",
    "EditedAction",
    "HumanInTheLoopError",
    "HumanInTheLoopMiddleware",
    "InterruptOnConfig",
    "RejectDecision",
    "RespondDecision",
]
