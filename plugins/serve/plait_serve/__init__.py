"""``plait-serve``: reach a plait agent over HTTP — AG-UI, with every run recorded in one
run log (the agent's checkpointer) that each protocol streams a projection of.

``plait_serve.app(agent)`` is the ASGI app; ``plait serve AGENT.toml`` runs it with uvicorn.
"""

from __future__ import annotations

from plait_serve._app import MAX_BODY, Server, app
from plait_serve._auth import ENV_KEYS, key_id, load_keys
from plait_serve._interrupts import Pending, ResumeRefused, ReviewedCall, check_resume
from plait_serve._runlog import Busy, NotFound, RunLog

__all__ = [
    "ENV_KEYS",
    "MAX_BODY",
    "Busy",
    "NotFound",
    "Pending",
    "ResumeRefused",
    "ReviewedCall",
    "RunLog",
    "Server",
    "app",
    "check_resume",
    "key_id",
    "load_keys",
]
