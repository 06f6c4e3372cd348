"""``ModelRequest``: copies with changes, and prompt sections for the tools a call offers."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

import plait
from plait.models import ScriptedChatModel
from plait.testing import scripted
from plait.types import ModelRequest


def _tool(name: str) -> plait.Tool:
    return plait.Tool(name=name, description="", parameters={}, func=lambda: "")


def _request(system_prompt: str | None, *tools: str) -> ModelRequest:
    return ModelRequest(
        model=ScriptedChatModel([]),
        messages=(),
        system_prompt=system_prompt,
        tools=tuple(_tool(t) for t in tools),
    )


def test_a_section_is_appended_after_a_blank_line() -> None:
    request = _request("Be brief.", "search")
    assert request.with_prompt_section("## Search").system_prompt == "Be brief.\n\n## Search"
    assert request.system_prompt == "Be brief."  # a copy; the request is frozen


def test_a_section_becomes_the_prompt_when_there_is_none() -> None:
    assert _request(None).with_prompt_section("## Files").system_prompt == "## Files"


def test_no_section_or_an_empty_one_leaves_the_request_as_it_is() -> None:
    request = _request("Be brief.")
    assert request.with_prompt_section(None) is request
    assert request.with_prompt_section("") is request


def test_when_tools_adds_the_section_only_to_calls_offering_one_of_them() -> None:
    narrowed = _request("Be brief.", "search")
    assert narrowed.with_prompt_section("## Files", when_tools={"ls", "read_file"}) is narrowed
    offered = _request("Be brief.", "search", "read_file")
    added = offered.with_prompt_section("## Files", when_tools={"ls", "read_file"})
    assert added.system_prompt == "Be brief.\n\n## Files"


def test_request_middleware_rewrites_sync_and_async_calls() -> None:
    @attrs.frozen
    class Prefix(plait.RequestMiddleware):
        prefix: str = "Be concise."

        def rewrite_request(self, request: Any) -> Any:
            return request.override(system_prompt=f"{self.prefix} {request.system_prompt}")

    model = scripted("a", "b")
    agent = plait.create_agent(model, system_prompt="Hi.", middleware=[Prefix()])
    agent.invoke("x")
    asyncio.run(agent.ainvoke("y"))
    assert [r.system_prompt for r in model.requests] == ["Be concise. Hi.", "Be concise. Hi."]
