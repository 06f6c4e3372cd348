"""The agent the DBOS tests run in worker processes: a deterministic model that calls a
slow tool once per prompt, and the tool, which logs each execution and makes its side
effect once per idempotency key (in PostgreSQL, or a SQLite file for the embedded test).

Run as ``python durable_app.py WORKER_ID DATABASE_URL LOG_FILE`` it is a worker
(``WORKER_ID`` ``-`` for none: a worker that only takes over runs once they are stale).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from typing import Any

from app_support import HEARTBEAT, append_line, dbos, serve_queue

import plait
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from plait.models.base import ChatModel

__all__ = ["HEARTBEAT", "build_agent", "make_record"]

TOOL_SECONDS = float(os.environ.get("DURABLE_TOOL_SECONDS", "0.3"))
MODEL_SECONDS = float(os.environ.get("DURABLE_MODEL_SECONDS", "0.05"))


class EchoModel(ChatModel):
    """Asks for ``record`` with the prompt, then answers with what the tool said."""

    provider = "echo"
    model_name = "echo"

    def invoke(self, messages: Sequence[AnyMessage], **_: Any) -> AIMessage:
        time.sleep(MODEL_SECONDS)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(f"done: {last.text}")
        assert isinstance(last, HumanMessage)
        call = ToolCall("record", {"item": last.text}, id=plait.new_id())
        return AIMessage("", tool_calls=[call])


def make_record(database_url: str, log: str) -> Any:
    def record(item: str, runtime: plait.ToolRuntime) -> str:
        """Record ``item`` (slowly), once per call."""
        key = runtime.idempotency_key
        append_line(log, f"start {key} {item} {os.getpid()}")
        time.sleep(TOOL_SECONDS)
        fresh = _effect_once(database_url, key, item)
        append_line(log, f"done {key} {item} {'new' if fresh else 'again'} {os.getpid()}")
        return f"recorded {item}"

    return record


def _effect_once(database_url: str, key: str, item: str) -> bool:
    """The side effect, keyed by the idempotency key: True if this call made it."""
    if database_url.startswith("sqlite"):
        with sqlite3.connect(database_url.removeprefix("sqlite:///") + ".effects") as conn:
            conn.execute("create table if not exists effects (key text primary key, item text)")
            cursor = conn.execute(
                "insert into effects values (?, ?) on conflict do nothing", (key, item)
            )
            return cursor.rowcount == 1
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:  # the test creates the table
        cursor = conn.execute(
            "insert into effects values (%s, %s) on conflict do nothing", (key, item)
        )
        return cursor.rowcount == 1


def build_agent(database_url: str, log: str, checkpointer: str | None = None) -> plait.Agent:
    # DURABLE_APPROVAL=1: a person approves each call of the tool
    approval: list[Any] = (
        [("human_in_the_loop", {"interrupt_on": {"record": True}})]
        if os.environ.get("DURABLE_APPROVAL") == "1"
        else []
    )
    return plait.create_agent(
        model=EchoModel(),
        tools=[make_record(database_url, log)],
        middleware=[
            dbos(database_url, worker_concurrency=4),
            *approval,
        ],
        checkpointer=checkpointer or _threads_url(database_url),
        name="durable",
    )


def _threads_url(database_url: str) -> str:
    """Threads beside the DBOS system database (their own file, for SQLite)."""
    return database_url + "-threads" if database_url.startswith("sqlite") else database_url


if __name__ == "__main__":
    worker_id, url, log_file = sys.argv[1:4]
    serve_queue(build_agent(url, log_file), executor_id=None if worker_id == "-" else worker_id)
