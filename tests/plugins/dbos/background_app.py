"""The agents of the durable background-task test: ``boss`` starts a ``researcher`` in
the background (``subagents(background=True)``); both use the dbos middleware, so the
researcher's run is a workflow of its own. The researcher's ``dig`` tool is slow and
logs each execution with its process id.

Run as ``python background_app.py DATABASE_URL LOG_FILE`` it is a worker serving both.
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

DIG_SECONDS = 3.0


def researcher_answers(messages: Sequence[AnyMessage], tools: Any) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"found: {last.text}")
    return AIMessage("", tool_calls=[ToolCall("dig", {"topic": last.text}, id=plait.new_id())])


def boss_answers(messages: Sequence[AnyMessage], tools: Any) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage("I started the research.")
    assert isinstance(last, HumanMessage)
    if last.text.startswith("research "):
        args = {"description": last.text.removeprefix("research "), "subagent_type": "researcher"}
        return AIMessage("", tool_calls=[ToolCall("start_task", args, id=plait.new_id())])
    return AIMessage(f"seen: {last.text}")


def build_agents(database_url: str, log: str) -> tuple[plait.Agent, plait.Agent]:
    def dig(topic: str) -> str:
        """Dig into ``topic`` (slowly)."""
        append_line(log, f"start {topic} {os.getpid()}")
        time.sleep(DIG_SECONDS)
        append_line(log, f"done {topic} {os.getpid()}")
        return f"{topic} rise twice a day"

    researcher = plait.create_agent(
        model=ScriptedChatModel([researcher_answers] * 100),
        tools=[dig],
        middleware=[dbos(database_url)],
        checkpointer=database_url,
        name="researcher",
    )
    from plait_subagents import SubAgent

    boss = plait.create_agent(
        model=ScriptedChatModel([boss_answers] * 100),
        middleware=[
            dbos(database_url),
            (
                "subagents",
                {
                    "background": True,
                    "subagents": [
                        SubAgent(name="researcher", description="digs", agent=researcher)
                    ],
                },
            ),
        ],
        checkpointer=database_url,
        name="boss",
    )
    return boss, researcher


if __name__ == "__main__":
    url, log_file = sys.argv[1:3]
    serve_queue(list(build_agents(url, log_file)))
