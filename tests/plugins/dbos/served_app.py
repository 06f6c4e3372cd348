"""The durable agent the ``plait serve`` + dbos tests serve: the model asks for a slow
``lookup`` tool, which reports its progress (naming the worker process running it, so a
call made again by another worker reports something else), then answers.

Run as ``python served_app.py DATABASE_URL LOG_FILE`` it is a worker; it prints its DBOS
executor id, then serves the queue until killed.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from app_support import append_line, dbos, serve_queue

import plait
from plait.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from plait.models import ScriptedChatModel

TOOL_SECONDS = float(os.environ.get("SERVED_TOOL_SECONDS", "2.0"))


def respond(messages: Sequence[AnyMessage], tools: Any) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"{last.text} and it ships tomorrow")
    assert isinstance(last, HumanMessage)
    return AIMessage("", tool_calls=[ToolCall("lookup", {"item": last.text}, id=plait.new_id())])


def make_lookup(log: str) -> Any:
    def lookup(item: str, runtime: plait.ToolRuntime) -> str:
        """Look ``item`` up in the catalogue (slowly)."""
        append_line(log, f"start {item} {os.getpid()}")
        runtime.stream_writer({"looking_up": item, "worker": os.getpid()})
        time.sleep(TOOL_SECONDS)
        append_line(log, f"done {item} {os.getpid()}")
        return f"{item} is in stock"

    return lookup


def build_agent(database_url: str, log: str) -> plait.Agent:
    return plait.create_agent(
        model=ScriptedChatModel([respond] * 1000),
        tools=[make_lookup(log)],
        middleware=[dbos(database_url)],
        checkpointer=database_url,
        name="shop",
    )


if __name__ == "__main__":
    url, log_file = sys.argv[1:3]
    serve_queue(build_agent(url, log_file))
