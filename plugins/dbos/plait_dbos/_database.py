"""The system database as the user sees it: one line when it cannot be reached (never
SQLAlchemy's two lines, never its password), a refusal to queue runs in a PostgreSQL
database that does not exist (DBOS would create it, and no worker serves it), and a
worker's log that says in one line why a queued run failed for a reason plait knows."""

from __future__ import annotations

import logging
from typing import Any

from plait.errors import PlaitError, StoreError

__all__ = ["OneLineRunFailures", "check_database", "shown_url"]


def shown_url(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.partition(':')[0]}:***@{host}"


def _one_line(text: str, url: str) -> str:
    password = _password(url)
    line = " ".join(text.split())
    return line.replace(password, "***") if password else line


def _password(url: str) -> str:
    userinfo = url.partition("://")[2].rpartition("@")[0]
    return userinfo.partition(":")[2]


def _libpq_url(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://``) as libpq takes it."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.partition('+')[0]}{sep}{rest}"


def check_database(url: str, *, may_create: bool) -> None:
    """Refuse, in one line, a system database that cannot be used: a server that cannot
    be reached, or — unless ``may_create`` (a worker, which creates and migrates it) — a
    PostgreSQL database that does not exist: a run queued there would wait for a worker
    that never comes (a misspelt name). SQLite files are left to DBOS, which creates them."""
    if not url.startswith(("postgresql", "postgres:")):
        return
    import psycopg

    target = _libpq_url(url)
    try:
        psycopg.connect(target, connect_timeout=10).close()
        return
    except psycopg.Error as exc:
        reason = _one_line(str(exc), url)
    missing = _missing_database(target)
    if missing is None:
        raise StoreError(
            f"plugin 'dbos': cannot connect to the system database {shown_url(url)}: {reason}"
        )
    if not may_create:
        raise StoreError(
            f"plugin 'dbos': option 'database_url': the system database {missing!r} does not "
            f"exist on that server ({shown_url(url)}), so no worker serves it; start "
            "`plait worker` for this agent first (it creates the database), or correct the "
            "name"
        )


def _missing_database(target: str) -> str | None:
    """The database's name if the server answers and has no database of that name; else
    ``None`` (the server itself cannot be reached, or refuses us)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        params = conninfo_to_dict(target)
    except psycopg.Error:
        return None
    name = params.get("dbname")
    if not isinstance(name, str) or not name:
        return None
    try:
        maintenance = make_conninfo(target, dbname="postgres")
        with psycopg.connect(maintenance, connect_timeout=10) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            return None if found.fetchone() else name
    except psycopg.Error:
        return None


class OneLineRunFailures(logging.Filter):
    """On DBOS's logger in a worker: a queued run that failed with a ``PlaitError`` (a
    resume with nothing paused, a provider error, a limit) is logged as one line with
    the error, not DBOS's traceback; any other exception (a bug) keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error: Any = record.exc_info[1] if record.exc_info else None
        if isinstance(error, PlaitError):
            record.msg = "a queued run failed: %s: %s"
            record.args = (type(error).__name__, " ".join(str(error).split()))
            record.exc_info = None
            record.exc_text = None
        return True


def install_one_line_failures() -> None:
    logger = logging.getLogger("dbos")
    if not any(isinstance(f, OneLineRunFailures) for f in logger.filters):
        logger.addFilter(OneLineRunFailures())
