"""plait-dbos: an agent's runs as DBOS workflows on a queue served by worker processes;
each model call, tool run and thread load is a recorded step (each save written once),
so a run whose worker dies is finished by a worker, without repeating a finished call.

Names load on first use, so the ``plait`` CLI (which reads this plugin's commands on every
call) does not import DBOS until a command of this plugin runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.lazy import lazy_exports

_EXPORTS = {
    "DBOSMiddleware": "plait_dbos._middleware",
    "Piece": "plait_dbos._submit",
    "Submitted": "plait_dbos._submit",
    "Worker": "plait_dbos._worker",
    "submit": "plait_dbos._submit",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from plait_dbos._middleware import DBOSMiddleware as DBOSMiddleware
    from plait_dbos._submit import Piece as Piece
    from plait_dbos._submit import Submitted as Submitted
    from plait_dbos._submit import submit as submit
    from plait_dbos._worker import Worker as Worker
