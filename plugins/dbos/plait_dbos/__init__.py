"""plait-dbos: an agent's runs as DBOS workflows on a queue served by worker processes;
each model call, tool run and thread read or write is a recorded step, so a run whose
worker dies is finished by a worker, without repeating a finished call."""

from plait_dbos._middleware import DBOSMiddleware
from plait_dbos._submit import Submitted, submit
from plait_dbos._worker import Worker

__all__ = ["DBOSMiddleware", "Submitted", "Worker", "submit"]
