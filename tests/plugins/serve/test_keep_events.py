"""``app(agent, keep_events=N)`` (``plait serve --keep-events N``): when a run ends, the
thread's older finished runs are forgotten from its run log, whole, keeping the last N
events and the thread's first (its owner); a reconnect asking for forgotten events is a
410 saying where to resume; the thread's state keeps every message — on the memory,
SQLite and PostgreSQL checkpointers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from serve_helpers import Served, parse_sse, run_input

import plait
from plait.checkpoint import EventLog
from plait.errors import ConfigError
from plait_serve import app

KEEP = 12


def chatty(checkpointer_url: str) -> plait.Agent:
    def answer(messages: list[Any], tools: Any) -> plait.AIMessage:
        return plait.AIMessage(f"Answer to {messages[-1].text}.")

    return plait.create_agent(
        plait.ScriptedChatModel([answer] * 20), checkpointer=checkpointer_url, name="chatty"
    )


def test_old_runs_are_forgotten_and_a_reconnect_into_them_is_410(
    checkpointer_url: str, serve: Callable[..., Served]
) -> None:
    agent = chatty(checkpointer_url)
    store = agent.checkpointer
    assert isinstance(store, EventLog)
    served = serve(agent, keep_events=KEEP)
    with served.client() as client:
        for n in range(6):
            posted = client.post("/ag-ui", json=run_input("t", f"r{n}", f"q{n}"))
            assert posted.status_code == 200, posted.text
            assert parse_sse(posted.text)[-1][1]["type"] == "RUN_FINISHED"
        deadline = time.monotonic() + 10  # the last run's writes and trim follow its end
        while True:
            log = store.read_events("t")
            starts = [seq for seq, e in log if e["type"] == "run_started"]
            per_run = starts[-1] - starts[-2] if len(starts) > 1 else 0  # events a run
            if log[-1][1].get("run_id") == "r5" and log[-1][1]["type"] == "run_finished":
                if 0 < per_run < KEEP and len(log) - 1 < KEEP + per_run:
                    break
            assert time.monotonic() < deadline, f"the run log was not trimmed: {log}"
            time.sleep(0.02)
        numbers = [seq for seq, _ in log]
        kinds = [event["type"] for _, event in log]
        assert kinds[0] == "thread" and numbers[0] == 1  # the owner's record stays
        kept = numbers[1:]
        assert kept == list(range(kept[0], kept[-1] + 1))  # one piece, at the end
        assert KEEP <= len(kept) < KEEP + per_run  # whole runs, the last KEEP at least
        assert kinds[1] == "run_started"
        assert kept[-1] == store.last_event("t") == 1 + 6 * per_run
        streamed = parse_sse(client.get("/plait/threads/t/events?since=0").text)
        assert [seq for seq, _ in streamed] == kept  # since=0: what is kept
        assert kept == list(range(kept[0], kept[-1] + 1))  # one piece, at the end
        assert [e["run_id"] for _, e in log if e["type"] == "run_started"][-1] == "r5"
        first_run = next(e["run_id"] for _, e in log if e["type"] == "run_started")
        assert first_run != "r0"

        # a reconnect from a forgotten event: one clear 410, nothing streamed
        gone = client.get("/ag-ui/threads/t/stream", headers={"Last-Event-ID": "3"})
        assert gone.status_code == 410
        error = gone.json()["error"]
        assert error["code"] == "events_forgotten"
        assert f"up to {kept[0] - 1} were forgotten" in error["message"]
        assert f"resume after {kept[0] - 1}" in error["message"]
        raw = client.get("/plait/threads/t/events", headers={"Last-Event-ID": "2"})
        assert raw.status_code == 410
        # resuming where it says works
        resumed = parse_sse(client.get(f"/ag-ui/threads/t/stream?since={kept[0] - 1}").text)
        assert resumed[0][1]["type"] == "RUN_STARTED"
        # the Agent Protocol: a forgotten run is gone, a kept one is whole
        missing = client.get("/threads/t/runs/r0")
        assert missing.status_code == 404
        assert "forgets older runs" in missing.json()["error"]["message"]
        assert client.get("/threads/t/runs/r5").json()["status"] == "success"
    # the thread itself keeps every message
    texts = [m.text for m in agent.get_state("t")["messages"]]
    assert texts[-2:] == ["q5", "Answer to q5."] and len(texts) == 12


def test_keep_events_must_be_a_positive_count() -> None:
    with pytest.raises(ConfigError, match="keep_events: expected a positive int, got 0"):
        app(chatty("memory"), keep_events=0)
