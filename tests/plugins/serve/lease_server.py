"""A plait server for the lease tests, run as its own process: ``python lease_server.py
CHECKPOINTER_URL PORT [SWEEP_EVERY]``. Its agent calls ``wait``, a tool that never
answers, so a run stays in the middle of a step until the process is killed; asked
``hang``, a hook never lets the run go on, so it stays before its first save."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import uvicorn

import plait
import plait_serve
from plait.testing import ai, call


def wait(reason: str) -> str:
    """Waits (for ever)."""
    time.sleep(3600)
    return reason


def brain(messages: list[Any], tools: Any) -> plait.AIMessage:
    """A tool call for the first question; a plain answer to anything after it."""
    if [m.text for m in messages if m.type == "human"][-1] == "again":
        return ai("A fresh answer.")
    return ai("Waiting.", call("wait", reason="ever"))


@plait.before_agent
async def hang(state: Any, runtime: plait.Runtime) -> None:
    """Asked ``hang``, never lets the run go on (the server's loop does): a run that
    stays before its first save (the input is saved as the model node starts)."""
    if [m.text for m in state["messages"] if m.type == "human"][-1] == "hang":
        await asyncio.Event().wait()


def agent(url: str) -> plait.Agent:
    return plait.create_agent(
        plait.ScriptedChatModel([brain] * 10),
        tools=[wait],
        middleware=[hang],
        checkpointer=url,
        name="waiter",
    )


if __name__ == "__main__":
    url, port = sys.argv[1], int(sys.argv[2])
    sweep = {"sweep_every": float(sys.argv[3])} if len(sys.argv) > 3 else {}
    application = plait_serve.app(agent(url), **sweep)
    uvicorn.run(application, host="127.0.0.1", port=port, log_level="warning")
