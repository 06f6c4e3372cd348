"""``plait-serve``: reach a plait agent over HTTP — AG-UI, with every run recorded in one
run log (the agent's checkpointer) that each protocol streams a projection of.

``plait_serve.app(agent)`` is the ASGI app; ``plait serve AGENT.toml`` runs it with uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.lazy import lazy_exports

_EXPORTS = {
    "ENV_KEYS": "plait_serve._auth",
    "MAX_BODY": "plait_serve._app",
    "Busy": "plait_serve._runlog",
    "NotFound": "plait_serve._runlog",
    "Pending": "plait_serve._interrupts",
    "ResumeRefused": "plait_serve._interrupts",
    "ReviewedCall": "plait_serve._interrupts",
    "RunLog": "plait_serve._runlog",
    "SWEEP_EVERY": "plait_serve._runlog",
    "Server": "plait_serve._app",
    "app": "plait_serve._app",
    "check_resume": "plait_serve._interrupts",
    "key_id": "plait_serve._auth",
    "load_keys": "plait_serve._auth",
    "scoped_thread_id": "plait_serve._auth",
}
"""Names load on first use: the ``plait`` CLI imports ``plait_serve.command`` (so this
package) on every invocation, and Starlette only when ``plait serve`` runs."""

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from plait_serve._app import MAX_BODY as MAX_BODY
    from plait_serve._app import Server as Server
    from plait_serve._app import app as app
    from plait_serve._auth import ENV_KEYS as ENV_KEYS
    from plait_serve._auth import key_id as key_id
    from plait_serve._auth import load_keys as load_keys
    from plait_serve._auth import scoped_thread_id as scoped_thread_id
    from plait_serve._interrupts import Pending as Pending
    from plait_serve._interrupts import ResumeRefused as ResumeRefused
    from plait_serve._interrupts import ReviewedCall as ReviewedCall
    from plait_serve._interrupts import check_resume as check_resume
    from plait_serve._runlog import SWEEP_EVERY as SWEEP_EVERY
    from plait_serve._runlog import Busy as Busy
    from plait_serve._runlog import NotFound as NotFound
    from plait_serve._runlog import RunLog as RunLog
