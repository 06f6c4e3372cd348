"""A middleware that takes runs over (``submit_run``) is served like a local agent: the
server writes ``run_started``, hands the run over, and streams what the runner appends to
the log. Here the runner is a task that writes a run whose process "died" mid-answer and
the run made again — the log holds a ``step_restarted`` — and each protocol copes: the
OpenAI-compatible answer (official ``openai`` client) has only the text made again, AG-UI
closes the void message and says so, the Agent Protocol's partial message starts over.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
from serve_helpers import Served, parse_sse, run_input

import plait
from plait.checkpoint import MemoryCheckpointer
from plait.runlog import LogWriter, RunHandle, RunJob, event_log

DEAD = ["Hel", "lo wor"]  # what the dying attempt streamed
AGAIN = ["Hel", "p is on the way"]  # the call made again


def _answer(words: list[str], run_id: str, end: bool) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "state_snapshot", "values": {}},
        {"type": "message_start", "message_id": "m1"},
    ]
    events += [{"type": "text", "message_id": "m1", "delta": w} for w in words]
    if end:
        events += [
            {"type": "message_end", "message_id": "m1"},
            {"type": "run_finished", "run_id": run_id, "status": "success", "text": "".join(words)},
        ]
    return events


class _Elsewhere:
    def __init__(self, job: RunJob, agent: plait.Agent) -> None:
        self.job = job
        self.task = asyncio.ensure_future(asyncio.to_thread(self._run, event_log(agent)))

    def _run(self, log: Any) -> None:
        dying = LogWriter(log, self.job.thread_id, start=self.job.start)
        for event in _answer(DEAD, self.job.run_id, end=False):
            dying.emit(event)
        dying.flush()
        again = LogWriter(log, self.job.thread_id, start=self.job.start)
        for event in _answer(AGAIN, self.job.run_id, end=True):
            again.emit(event)
        again.flush()

    async def wait(self) -> None:
        await self.task

    async def cancel(self) -> None:
        self.task.cancel()


class Elsewhere(plait.Middleware):
    """Runs each run in a "worker" of its own that dies once mid-answer."""

    async def submit_run(self, job: RunJob, agent: plait.Agent) -> RunHandle:
        return _Elsewhere(job, agent)


def _agent() -> plait.Agent:
    return plait.create_agent(
        model=plait.ScriptedChatModel([]),  # never called here: the runs go elsewhere
        middleware=[Elsewhere()],
        checkpointer=MemoryCheckpointer(),
        name="elsewhere",
    )


def test_the_openai_answer_leaves_a_restarted_steps_void_text_out(
    serve: Callable[..., Served],
) -> None:
    served = serve(_agent())
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="none", max_retries=0)
    answer = client.chat.completions.create(
        model="elsewhere", messages=[{"role": "user", "content": "help?"}]
    )
    assert answer.choices[0].message.content == "Help is on the way"


def test_ag_ui_closes_the_void_message_and_says_so(serve: Callable[..., Served]) -> None:
    served = serve(_agent())
    with httpx.Client(base_url=served.url, timeout=20) as http:
        response = http.post("/ag-ui", json=run_input("t1", "r1", "help?"))
    events = [e for _, e in parse_sse(response.text)]
    shown = [(e["type"], e.get("delta") or e.get("name") or "") for e in events]
    assert shown == [
        ("RUN_STARTED", ""),
        ("STATE_SNAPSHOT", ""),
        ("TEXT_MESSAGE_START", ""),
        ("TEXT_MESSAGE_CONTENT", "Hel"),
        ("TEXT_MESSAGE_CONTENT", "lo wor"),
        ("TEXT_MESSAGE_END", ""),
        ("CUSTOM", "plait.step_restarted"),
        ("TEXT_MESSAGE_START", ""),
        ("TEXT_MESSAGE_CONTENT", "Hel"),
        ("TEXT_MESSAGE_CONTENT", "p is on the way"),
        ("TEXT_MESSAGE_END", ""),
        ("RUN_FINISHED", ""),
    ]
    marker = events[6]["value"]
    assert marker["voided"] == 1 and marker["message_id"] == "m1" and marker["open"]


def test_the_agent_protocols_partial_message_starts_over(serve: Callable[..., Served]) -> None:
    served = serve(_agent())
    with httpx.Client(base_url=served.url, timeout=20) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        body = {
            "assistant_id": "elsewhere",
            "input": {"messages": [{"role": "user", "content": "help?"}]},
            "stream_mode": ["messages", "custom"],
        }
        response = http.post(f"/threads/{thread}/runs/stream", json=body)
    blocks = [b for b in response.text.split("\n\n") if b.strip()]
    parts = []
    for block in blocks:
        lines = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        parts.append((lines["event"], json.loads(lines["data"])))
    partials = [data[0]["content"] for kind, data in parts if kind == "messages/partial"]
    assert partials == ["Hel", "Hello wor", "Hel", "Help is on the way"]
    complete = [data[0]["content"] for kind, data in parts if kind == "messages/complete"]
    assert complete == ["Help is on the way"]
    custom = [data for kind, data in parts if kind == "custom"]
    assert [c["plait"] for c in custom] == ["step_restarted"]
