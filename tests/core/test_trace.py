"""``PLAIT_TRACE=1`` logs every hook call with its middleware, arguments and result."""

from __future__ import annotations

import subprocess
import sys


def test_trace_logs_each_hook_call_with_middleware_and_result() -> None:
    code = """
import logging, plait
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")

@plait.before_model
def hello(state):
    return {"messages": [plait.HumanMessage("extra")]}

agent = plait.create_agent(plait.ScriptedChatModel(["ok"]), middleware=[hello])
agent.invoke("hi")
"""
    env = {"PLAIT_TRACE": "1", "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    lines = [line for line in out.stderr.splitlines() if line.startswith("plait.trace")]
    assert lines[0].startswith("plait.trace hello.before_model(StateView(")
    assert "hello.before_model -> {'messages': [HumanMessage(content='extra'" in lines[1]
