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
    "Pending": "plait_serve._interrupts",
    "ReviewedCall": "plait_serve._interrupts",
    "SWEEP_EVERY": "plait_serve._runlog",
    "app": "plait_serve._app",
    "key_id": "plait_serve._auth",
    "load_keys": "plait_serve._auth",
    "scoped_thread_id": "plait_serve._auth",
}
"""Names load on first use: the ``plait`` CLI imports ``plait_serve.command`` (so this
package) on every invocation, and Starlette only when ``plait serve`` runs."""

__all__ = sorted(_EXPORTS)


_INTERNAL = {
    "Busy": ("plait_serve._runlog", "it is internal: a client sees it as HTTP 409"),
    "NotFound": ("plait_serve._runlog", "it is internal: a client sees it as HTTP 404"),
    "ResumeRefused": ("plait_serve._interrupts", "it is internal: a client sees it as HTTP 409"),
    "RunLog": ("plait_serve._runlog", "it is internal: plait_serve.app(agent) makes one"),
    "Server": ("plait_serve._app", "it is internal: plait_serve.app(agent) makes one"),
    "check_resume": ("plait_serve._interrupts", "it is internal: the server checks every resume"),
}
"""Names exported until they were found internal: each still imports, with a
``DeprecationWarning``, for one release."""

__getattr__ = lazy_exports(
    __name__,
    _EXPORTS,
    deprecated={
        name: (f"{module}:{name}", instead) for name, (module, instead) in _INTERNAL.items()
    },
)


if TYPE_CHECKING:
    from plait_serve._app import MAX_BODY as MAX_BODY
    from plait_serve._app import app as app
    from plait_serve._auth import ENV_KEYS as ENV_KEYS
    from plait_serve._auth import key_id as key_id
    from plait_serve._auth import load_keys as load_keys
    from plait_serve._auth import scoped_thread_id as scoped_thread_id
    from plait_serve._interrupts import Pending as Pending
    from plait_serve._interrupts import ReviewedCall as ReviewedCall
    from plait_serve._runlog import SWEEP_EVERY as SWEEP_EVERY
