"""A durable agent whose model calls are not all its own: a summarization middleware
(an async hook calling its model), a sub-agent behind the ``task`` tool (an async tool
running another agent), and the agent's own calls, streamed when the run is.

Every model call that really happens is logged (``model ROLE PID``); the final answer is
streamed in three chunks. With ``CRASH_MARKER`` set, the worker SIGKILLs itself half-way
through streaming the final answer, the first time only (the marker file records it).

Run as ``python features_app.py WORKER_ID DATABASE_URL LOG_FILE`` it is a worker.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import plait
from plait.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from plait.models.base import ChatModel

FINAL = ["the answer ", "is ", "42"]


def _log(line: str) -> None:
    fd = os.open(os.environ["FEATURES_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


class MainModel(ChatModel):
    """Delegates to the researcher, then answers with what it found."""

    provider = "features"
    model_name = "main"

    def invoke(self, messages: Sequence[AnyMessage], **_: Any) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            _log("model main-final")
            return AIMessage("".join(FINAL))
        _log("model main-first")
        assert isinstance(last, HumanMessage)
        args = {"description": f"look up {last.text}", "subagent_type": "researcher"}
        return AIMessage("Asking. ", tool_calls=[ToolCall("task", args, id=plait.new_id())])

    def stream(self, messages: Sequence[AnyMessage], **options: Any) -> Iterator[AIMessageChunk]:
        if not isinstance(messages[-1], ToolMessage):
            yield from super().stream(messages, **options)
            return
        _log("model main-final-streamed")
        marker = os.environ.get("CRASH_MARKER")
        for n, piece in enumerate(FINAL):
            yield AIMessageChunk(piece)
            if n == 0 and marker and not os.path.exists(marker):
                open(marker, "w").close()
                threading.Event().wait(0.5)  # the first piece reaches the database
                os.kill(os.getpid(), signal.SIGKILL)


class ResearchModel(ChatModel):
    provider = "features"
    model_name = "researcher"

    def invoke(self, messages: Sequence[AnyMessage], **_: Any) -> AIMessage:
        _log("model researcher")
        return AIMessage("found: 42")


class SummaryModel(ChatModel):
    provider = "features"
    model_name = "summarizer"

    def invoke(self, messages: Sequence[AnyMessage], **_: Any) -> AIMessage:
        _log("model summarizer")
        return AIMessage("SUMMARY of the research")


def build_agent(database_url: str, threads_url: str | None = None) -> plait.Agent:
    return plait.create_agent(
        model=MainModel(),
        middleware=[
            ("dbos", {"database_url": database_url, "poll_interval": 0.1}),
            (
                "summarization",
                {"model": SummaryModel(), "trigger": {"messages": 3}, "keep": {"messages": 1}},
            ),
            (
                "subagents",
                {
                    "subagents": [
                        {
                            "name": "researcher",
                            "description": "finds things out",
                            "system_prompt": "Find it out.",
                            "model": ResearchModel(),
                        }
                    ]
                },
            ),
        ],
        checkpointer=threads_url or database_url,
        name="features",
    )


if __name__ == "__main__":
    worker_id, url = sys.argv[1:3]
    from plait_dbos import Worker

    worker = Worker(build_agent(url), executor_id=worker_id)
    worker.start()
    print(worker.executor_id, flush=True)
    threading.Event().wait()
