"""``agent.close()``: middleware holding resources (sessions, processes) release them."""

from __future__ import annotations

import asyncio

import attrs

import plait
from plait.testing import scripted


@attrs.define
class Holder(plait.Middleware):
    log: list[str]
    label: str

    def before_model(self) -> None:
        return None

    def close(self) -> None:
        self.log.append(f"close {self.label}")


@attrs.define
class AsyncHolder(Holder):
    async def aclose(self) -> None:
        self.log.append(f"aclose {self.label}")


def test_close_calls_each_middleware_close_last_first() -> None:
    log: list[str] = []
    agent = plait.create_agent(
        model=scripted("hi"), middleware=[Holder(log, "a"), Holder(log, "b")]
    )
    with agent:
        assert agent.invoke("x").text == "hi"
        assert log == []
    assert log == ["close b", "close a"]


def test_aclose_prefers_aclose_and_runs_close_otherwise() -> None:
    log: list[str] = []
    agent = plait.create_agent(
        model=scripted("hi"), middleware=[AsyncHolder(log, "a"), Holder(log, "b")]
    )
    asyncio.run(agent.aclose())
    assert log == ["close b", "aclose a"]
