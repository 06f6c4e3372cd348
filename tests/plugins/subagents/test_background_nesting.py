"""A background task's run is nested in the run that started it, under the start_task
call's id: its events reach that run's stream while it is open (every mode, sync and
async), its usage counts in that run's usage and per task, and that run's usage_limit and
model_call_limit refuse its calls, also once that run has ended, unless it opts out."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import plait
from plait.messages import Usage
from plait.middleware import Middleware
from plait.testing import ai, call
from plait.types import AgentResult, RunRequest
from plait.usage import RunUsage
from plait_subagents import BACKGROUND_KEY, SubAgentMiddleware

MODES = ("updates", "messages", "values", "custom")
gate = threading.Event()


@pytest.fixture(autouse=True)
def _open_gate() -> Iterator[None]:
    gate.clear()
    yield
    gate.set()


def progress(step: str, runtime: plait.ToolRuntime) -> str:
    """Report progress.

    Args:
        step: what was done.
    """
    runtime.stream_writer({"progress": step})
    return "noted"


async def hold() -> str:
    """Wait until the test lets the work go on."""
    assert await asyncio.to_thread(gate.wait, 10), "the test never opened the gate"
    return "go on"


def researcher(*answers: Any, **options: Any) -> dict[str, Any]:
    return {
        "name": "researcher",
        "description": "researches a topic",
        "system_prompt": "Research.",
        "model": plait.ScriptedChatModel(list(answers)),
        "tools": [progress, hold],
        **options,
    }


def start(call_id: str) -> Any:
    return call("start_task", call_id, description="Research X", subagent_type="researcher")


def desk(make_agent: Any, sub: dict[str, Any], *answers: Any, **kwargs: Any) -> Any:
    """The main agent, with a ``wait`` tool that returns once the thread's tasks are done."""
    middleware = SubAgentMiddleware(subagents=[sub], background=True)

    def wait(runtime: plait.ToolRuntime) -> str:
        """Wait for the background tasks."""
        gate.set()
        assert middleware.wait_for_tasks(str(runtime.runtime.thread_id), timeout=10)
        return "all done"

    extra = kwargs.pop("middleware", [])
    agent = make_agent(list(answers), tools=[wait], middleware=[*extra, middleware], **kwargs)
    return agent, middleware


def waiting_desk(make_agent: Any) -> Any:
    sub = researcher(ai("", call("progress", "p1", step="half way")), "X is great.")
    agent, _ = desk(make_agent, sub, ai("", start("s1")), ai("", call("wait", "w1")), "Done.")
    return agent


def check_nested(events: list[plait.StreamEvent], mode: str) -> None:
    assert {e.mode for e in events} == {mode}
    nested = [e for e in events if e.path]
    assert {e.path for e in nested} == {("s1",)}
    if mode == "custom":
        assert [e.data for e in nested] == [{"progress": "half way"}]
    elif mode == "messages":
        chunks = [e.data.content for e in nested if e.source == "model"]
        assert "".join(chunks) == "X is great."
        assert [e.data.text for e in nested if e.source == "progress"] == ["noted"]
    elif mode == "updates":
        final = [e for e in nested if e.source == "model"][-1]
        assert final.data["model"]["messages"][0].text == "X is great."
        assert "progress" in {e.source for e in nested}
    else:
        assert nested[-1].data["messages"][-1].text == "X is great."


@pytest.mark.parametrize("mode", MODES)
def test_a_tasks_events_reach_the_open_stream_under_the_start_task_call(
    make_agent: Any, mode: str
) -> None:
    stream = waiting_desk(make_agent).stream("research X", thread_id="t", mode=mode)
    events = list(stream)
    assert stream.result is not None and stream.result.text == "Done."
    check_nested(events, mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_tasks_events_reach_the_open_stream_async(make_agent: Any, mode: str) -> None:
    agent = waiting_desk(make_agent)

    async def scenario() -> list[plait.StreamEvent]:
        return [e async for e in agent.astream("research X", thread_id="t", mode=mode)]

    check_nested(asyncio.run(scenario()), mode)


def test_once_the_stream_has_ended_a_task_runs_on_without_writing_to_it(
    make_agent: Any,
) -> None:
    sub = researcher(ai("", call("hold", "h1")), ai("", call("progress", "p1", step="late")), "X.")
    agent, middleware = desk(make_agent, sub, ai("", start("s1")), "Started.", "It says X.")
    stream = agent.stream("research X", thread_id="t", mode=["custom", "updates"])
    events = list(stream)
    assert stream.result is not None and stream.result.text == "Started."
    assert {e.path for e in events} <= {(), ("s1",)}
    gate.set()
    assert middleware.wait_for_tasks("t", timeout=10)
    assert stream._pace.events.empty()  # nothing written to the stream nobody reads any more
    assert [e.data for e in events if e.mode == "custom"] == []
    [record] = agent.invoke("news?", thread_id="t").state[BACKGROUND_KEY].values()
    assert record["status"] == "completed"


def test_once_the_async_stream_has_ended_a_task_runs_on_without_writing_to_it(
    make_agent: Any,
) -> None:
    sub = researcher(ai("", call("hold", "h1")), ai("", call("progress", "p1", step="late")), "X.")
    agent, middleware = desk(make_agent, sub, ai("", start("s1")), "Started.")

    async def scenario() -> Any:
        stream = agent.astream("research X", thread_id="t", mode=["custom", "updates"])
        events = [e async for e in stream]
        gate.set()
        assert await asyncio.to_thread(middleware.wait_for_tasks, "t", 10)
        return stream, events

    stream, events = asyncio.run(scenario())
    assert stream.result.text == "Started."
    assert [e.data for e in events if e.mode == "custom"] == []
    assert stream._pace.events.empty()
    assert len(sub["model"].requests) == 3  # the task ran to its end meanwhile


class KeepLedger(Middleware):
    """Keeps the ledger of each run, to read its per-path usage."""

    def __init__(self) -> None:
        self.ledgers: list[RunUsage] = []

    def wrap_run(
        self, request: RunRequest, handler: Callable[[RunRequest], AgentResult]
    ) -> AgentResult:
        self.ledgers.append(request.usage)
        return handler(request)


def test_a_tasks_usage_rolls_up_and_is_reported_per_task(make_agent: Any) -> None:
    sub = researcher(
        ai("", call("progress", "p1", step="x"), usage=Usage(200, 20)),
        ai("X is great.", usage=Usage(300, 30)),
    )
    keep = KeepLedger()
    agent, _ = desk(
        make_agent,
        sub,
        ai("", start("s1"), usage=Usage(100, 10)),
        ai("", call("wait", "w1"), usage=Usage(100, 10)),
        ai("Done.", usage=Usage(100, 10)),
        middleware=[keep],
    )
    result = agent.invoke("research X", thread_id="t")
    assert result.usage == Usage(800, 80)
    assert keep.ledgers[0].nested == {("s1",): Usage(500, 50)}
    delivered = [m for m in result.messages if m.type == "human" and "subagents" in m.metadata]
    assert delivered[0].metadata["subagents"]["usage"]["input_tokens"] == 500


def spender(*options: Any, **kwargs: Any) -> dict[str, Any]:
    """A task that holds first, then spends 400 tokens per call, calling progress."""
    answers = [ai("", call("hold", "h1"), usage=Usage(380, 20))]
    answers += [ai("", call("progress", f"p{i}", step="x"), usage=Usage(380, 20)) for i in range(4)]
    return researcher(*answers, ai("Finished.", usage=Usage(380, 20)), **kwargs)


def test_the_starting_runs_usage_limit_bounds_a_task_after_that_run_ended(
    make_agent: Any,
) -> None:
    sub = spender()
    agent, middleware = desk(
        make_agent,
        sub,
        ai("", start("s1"), usage=Usage(140, 10)),
        ai("Started.", usage=Usage(140, 10)),
        "It stopped.",
        middleware=[("usage_limit", {"run_limit": {"total_tokens": 1000}})],
    )
    first = agent.invoke("research X", thread_id="t")
    assert first.text == "Started."
    gate.set()  # the run has ended; its ledger still counts the task: 300 + 400 so far
    assert middleware.wait_for_tasks("t", timeout=10)
    assert len(sub["model"].requests) == 2  # 700, then 1100: a third call is refused
    later = agent.invoke("news?", thread_id="t")
    [record] = later.state[BACKGROUND_KEY].values()
    assert record["status"] == "failed"
    assert record["result"] == (
        "UsageLimitExceededError: Usage limit reached (run limit: total_tokens 1100/1000)."
    )


def test_the_starting_runs_model_call_limit_bounds_a_task_async(make_agent: Any) -> None:
    sub = spender()
    agent, _ = desk(
        make_agent,
        sub,
        ai("", start("s1")),
        ai("", call("wait", "w1")),
        "Done.",
        middleware=[("model_call_limit", {"run_limit": 4})],
    )

    async def scenario() -> Any:
        return await agent.ainvoke("research X", thread_id="t")

    result = asyncio.run(scenario())
    # before wait opens the gate: 2 main calls and the task's first; then the task's second
    # reaches the limit: its third is refused, and so is the main's third
    assert len(sub["model"].requests) == 2
    assert result.text.startswith("Model call limit reached: run limit (4/4)")
    later = asyncio.run(agent.ainvoke("news?", thread_id="t"))
    assert later.text == "Done."  # the answer the refused call never got
    [record] = later.state[BACKGROUND_KEY].values()
    assert record["status"] == "failed"
    assert record["result"].startswith("ModelCallLimitExceededError: Model call limit reached")


def test_a_task_that_opts_out_is_counted_but_not_refused(make_agent: Any) -> None:
    sub = spender(inherit=[])
    keep = KeepLedger()
    agent, _ = desk(
        make_agent,
        sub,
        ai("", start("s1"), usage=Usage(140, 10)),
        ai("", call("wait", "w1"), usage=Usage(140, 10)),
        ai("It finished.", usage=Usage(140, 10)),
        middleware=[keep, ("usage_limit", {"run_limit": {"total_tokens": 1000}})],
    )
    result = agent.invoke("research X", thread_id="t")
    assert len(sub["model"].requests) == 6  # 2,700 tokens in all: never refused
    assert keep.ledgers[0].nested == {("s1",): Usage(6 * 380, 6 * 20)}
    # the main run's own next call is refused: the task's spending counted
    assert result.text == (
        "Usage limit reached (run limit: total_tokens 2700/1000). The agent stopped without "
        "calling the model again; start a new conversation or raise the limit to continue."
    )
    later = agent.invoke("news?", thread_id="t")  # a new run, with a limit of its own
    assert later.text == "It finished."
    [record] = later.state[BACKGROUND_KEY].values()
    assert record["status"] == "completed"
