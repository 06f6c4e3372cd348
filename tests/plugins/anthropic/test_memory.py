"""``anthropic_memory``: the ``memory`` tool's six commands confined to ``/memories`` (exact
answers and errors), the prompt section only on calls offering the tool, memories in thread
state across turns, in the store across threads, on disk and through a composite route,
options and their errors, and the tool on the Anthropic wire."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replay_server import claude_message, claude_tool_use, openai_completion

import plait
from plait.backends import CompositeBackend, DiskBackend, StateBackend, StoreBackend
from plait.errors import ConfigError
from plait.models.openai import OpenAIChatModel
from plait.store import MemoryStore
from plait.testing import ai, call, tool_answers
from plait.types import ModelRequest, ModelResponse
from plait_anthropic import AnthropicChatModel
from plait_anthropic.memory import (
    DEFAULT_SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    AnthropicMemoryMiddleware,
)


def mem(id: str, command: str, **args: Any) -> Any:
    return call("memory", id, command=command, **args)


def run(make_agent: Any, *calls: Any, middleware: Any = None, **kwargs: Any) -> Any:
    agent = make_agent(
        [*(ai("", c) for c in calls), "done"],
        middleware=[middleware or AnthropicMemoryMiddleware()],
        **kwargs,
    )
    return agent, agent.invoke("go", thread_id="t")


def test_the_tool_and_the_prompt_section(make_agent: Any) -> None:
    agent = make_agent(["hi"], middleware=[AnthropicMemoryMiddleware()], system_prompt="Be kind.")
    agent.invoke("hello")
    request = agent.model.requests[0]
    (tool,) = request.tools
    assert tool.name == "memory"
    assert tool.provider_options == {"anthropic": {"type": "memory_20250818"}}
    assert tool.description == TOOL_DESCRIPTION
    props = tool.parameters["properties"]
    assert props["command"]["enum"] == [
        "view",
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    ]
    assert {"path", "old_path", "new_path", "insert_text", "view_range"} <= set(props)
    assert tool.parameters["required"] == ["command"]
    assert request.system_prompt == f"Be kind.\n\n{DEFAULT_SYSTEM_PROMPT}"
    assert "view /memories" in DEFAULT_SYSTEM_PROMPT


def test_the_section_is_left_out_when_the_tool_is_not_offered(make_agent: Any) -> None:
    @plait.wrap_model_call
    def no_tools(
        request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(request.override(tools=[]))

    agent = make_agent(["hi"], middleware=[no_tools, AnthropicMemoryMiddleware()])
    agent.invoke("hello")
    assert not agent.model.requests[0].system_prompt
    custom = make_agent(["hi"], middleware=[AnthropicMemoryMiddleware(system_prompt="Remember.")])
    custom.invoke("hello")
    assert custom.model.requests[0].system_prompt == "Remember."
    silent = make_agent(["hi"], middleware=[AnthropicMemoryMiddleware(system_prompt=None)])
    silent.invoke("hello")
    assert not silent.model.requests[0].system_prompt


def test_every_command_and_its_answers(make_agent: Any) -> None:
    agent, result = run(
        make_agent,
        mem("v0", "view", path="/memories"),
        mem("c", "create", path="/memories/prefs.md", file_text="- likes tea\n"),
        mem("c2", "create", path="/memories/work/todo.md", file_text="- ship\n- test\n"),
        mem("v1", "view", path="/memories"),
        mem("vf", "view", path="/memories/work/todo.md", view_range=[2, -1]),
        mem("s", "str_replace", path="/memories/prefs.md", old_str="tea", new_str="coffee"),
        mem("i", "insert", path="/memories/prefs.md", insert_line=1, insert_text="- cats"),
        mem("r", "rename", old_path="/memories/work", new_path="/memories/project"),
        mem("d", "delete", path="/memories/project/todo.md"),
        mem("v2", "view", path="/memories"),
    )
    got = tool_answers(result.messages)
    assert got["v0"].content == "Directory /memories is empty"
    assert got["c"].content == "Created /memories/prefs.md"
    assert got["v1"].content == "Directory /memories:\n/memories/prefs.md\n/memories/work/"
    assert got["vf"].content == "     2\t- test"
    assert (
        got["s"].content == "Edited /memories/prefs.md. Line 1 now reads:\n     1\t- likes coffee"
    )
    assert got["i"].content == (
        "Inserted 1 line after line 1 of /memories/prefs.md. Lines 1-2 now read:\n"
        "     1\t- likes coffee\n     2\t- cats"
    )
    assert got["r"].content == "Renamed /memories/work to /memories/project"
    assert got["d"].content == "Deleted /memories/project/todo.md"
    assert got["v2"].content == "Directory /memories:\n/memories/prefs.md"
    assert all(m.status == "success" for m in got.values())
    files = result.state["files"]
    assert {path: f["content"] for path, f in files.items()} == {
        "/memories/prefs.md": "- likes coffee\n- cats\n"
    }
    assert agent.get_state("t")["files"] == files


def test_errors(make_agent: Any) -> None:
    _, result = run(
        make_agent,
        mem("c", "create", path="/memories/a.md", file_text="a"),
        mem("c2", "create", path="/memories/b.md", file_text="b"),
        mem("out", "create", path="/notes.md", file_text="x"),
        mem("sib", "view", path="/memoriesX"),
        mem("up", "view", path="/memories/../etc"),
        mem("rn", "rename", old_path="/memories/a.md", new_path="/memories/b.md"),
        mem("ro", "rename", old_path="/memories/a.md", new_path="/tmp/a.md"),
        mem("rm", "rename", old_path="/memories/a.md"),
        mem("rr", "rename", old_path="/memories", new_path="/memories/x"),
        mem("dx", "delete", path="/memories/none.md"),
        mem("dr", "delete", path="/memories"),
        mem("np", "view"),
        mem("cr", "create", path="/memories/", file_text="x"),
        mem("vx", "view", path="/memories/none.md"),
    )
    got = tool_answers(result.messages)
    assert got["out"].content == (
        "Error: access to /notes.md is not allowed: paths must be under /memories"
    )
    assert got["sib"].content == (
        "Error: access to /memoriesX is not allowed: paths must be under /memories"
    )
    assert got["up"].content == (
        "Error: invalid path '/memories/../etc': '..' segments are not allowed"
    )
    assert got["rn"].content == "Error: /memories/b.md already exists"
    assert got["ro"].content == (
        "Error: access to /tmp/a.md is not allowed: paths must be under /memories"
    )
    assert got["rm"].content == "Error: the rename command needs new_path"
    assert got["rr"].content == "Error: /memories itself cannot be renamed or replaced"
    assert got["dx"].content == "Error: /memories/none.md not found"
    assert got["dr"].content == "Error: /memories itself cannot be deleted; delete what is in it"
    assert got["np"].content == "Error: the view command needs path"
    assert got["cr"].content == (
        "Error: /memories is a directory; create a file inside it, e.g. /memories/notes.md"
    )
    assert got["vx"].content.startswith("Error: /memories/none.md does not exist")
    assert all(got[k].status == "error" for k in got if k not in ("c", "c2"))
    assert set(result.state["files"]) == {"/memories/a.md", "/memories/b.md"}


def test_memories_in_state_survive_turns_but_not_threads(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", mem("c", "create", path="/memories/name.md", file_text="Ada")),
            "ok",
            ai("", mem("v", "view", path="/memories/name.md")),
            "ok",
            ai("", mem("w", "view", path="/memories")),
            "ok",
        ],
        middleware=[AnthropicMemoryMiddleware()],
    )
    agent.invoke("remember", thread_id="t")
    assert (
        tool_answers(agent.invoke("recall", thread_id="t").messages)["v"].content == "     1\tAda"
    )
    assert tool_answers(agent.invoke("new", thread_id="u").messages)["w"].content == (
        "Directory /memories is empty"
    )


@pytest.mark.parametrize("kind", ["store", "composite"])
def test_memories_in_the_store_outlive_the_thread(make_agent: Any, kind: str) -> None:
    store = MemoryStore()
    backend: Any = (
        StoreBackend(("memories",))
        if kind == "store"
        else CompositeBackend(StateBackend(), {"/memories/": StoreBackend(("memories",))})
    )
    mw = AnthropicMemoryMiddleware(backend=backend)
    first = make_agent(
        [ai("", mem("c", "create", path="/memories/name.md", file_text="Ada")), "ok"],
        middleware=[mw],
        store=store,
    )
    first.invoke("remember", thread_id="t1")
    second = make_agent(
        [ai("", mem("v", "view", path="/memories")), "ok"], middleware=[mw], store=store
    )
    assert tool_answers(second.invoke("recall", thread_id="t2").messages)["v"].content == (
        "Directory /memories:\n/memories/name.md"
    )
    key = "/memories/name.md" if kind == "store" else "/name.md"
    item = store.get(("memories",), key)
    assert item is not None and item.value["content"] == "Ada"


def test_memories_on_disk(make_agent: Any, tmp_path: Path) -> None:
    mw = AnthropicMemoryMiddleware(backend=DiskBackend(tmp_path))
    _, result = run(
        make_agent,
        mem("v", "view", path="/memories"),
        mem("c", "create", path="/memories/a.md", file_text="x\n"),
        mem("r", "rename", old_path="/memories/a.md", new_path="/memories/b.md"),
        middleware=mw,
    )
    got = tool_answers(result.messages)
    assert got["v"].content == "Directory /memories is empty"
    assert got["r"].content == "Renamed /memories/a.md to /memories/b.md"
    assert (tmp_path / "memories" / "b.md").read_text() == "x\n"
    assert not (tmp_path / "memories" / "a.md").exists()


def test_options_and_their_errors() -> None:
    def build(**options: Any) -> Any:
        return plait.create_agent(
            plait.testing.scripted("hi"), middleware=[("anthropic_memory", options)]
        )

    agent = build(allowed_path_prefixes=["/memories", "/team/"])
    assert agent.invoke("x").text == "hi"
    assert (
        agent.model.requests[0]
        .tools[0]
        .description.startswith(
            "Your memory: files under /memories or /team that you keep between conversations.\n"
            'Paths are absolute and must be under /memories or /team ("/memories/notes.md").'
        )
    )
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_memory'.*allowed_path_prefixes"):
        build(allowed_path_prefixes="/memories")
    with pytest.raises(ConfigError, match=r"allowed_path_prefixes.*must be absolute"):
        build(allowed_path_prefixes=["memories"])
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_memory'.*max_file_size_mb"):
        build(max_file_size_mb=0)
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_memory'.*system_prompt"):
        build(system_prompt=3)
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_memory'.*anthropic_betas"):
        build(anthropic_betas="context-management-2025-06-27")
    with pytest.raises(ValueError) as info:
        AnthropicMemoryMiddleware(anthropic_betas=[""])
    assert str(info.value) == (
        "anthropic_betas: expected a list of beta names such as "
        "['context-management-2025-06-27'], got ['']"
    )
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_memory': option 'backend'.*store"):
        build(backend="store:memories")


def test_on_the_anthropic_wire_the_tool_is_its_type(server: Any) -> None:
    view = {"command": "view", "path": "/memories"}
    server.json(claude_message(claude_tool_use("toolu_1", "memory", view)))
    server.json(claude_message("nothing yet"))
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=server.url)
    agent = plait.create_agent(model, middleware=[AnthropicMemoryMiddleware()])
    assert agent.invoke("what do you remember?").text == "nothing yet"
    body = server.requests[0].body
    assert body["tools"] == [{"name": "memory", "type": "memory_20250818"}]
    assert server.requests[0].headers["anthropic-beta"] == "context-management-2025-06-27"
    assert "view /memories" in str(body["system"])
    assert "Directory /memories is empty" in str(server.requests[1].body["messages"])


def test_on_an_openai_model_it_is_a_function_tool_that_works_the_same(server: Any) -> None:
    create = {"command": "create", "path": "/memories/a.md", "file_text": "tea"}
    server.json(openai_completion(None, ("call_1", "memory", create)))
    server.json(openai_completion("Noted."))
    model = OpenAIChatModel("gpt-4.1", api_key="k", base_url=server.url + "/v1")
    agent = plait.create_agent(model, middleware=[AnthropicMemoryMiddleware()])
    result = agent.invoke("I like tea")
    assert result.text == "Noted."
    body = server.requests[0].body
    [tool] = body["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "memory"
    assert tool["function"]["description"] == TOOL_DESCRIPTION
    assert tool["function"]["parameters"]["properties"]["command"]["enum"][-2:] == [
        "delete",
        "rename",
    ]
    assert "memory_20250818" not in json.dumps(body)
    assert DEFAULT_SYSTEM_PROMPT in json.dumps(body["messages"][0]["content"]).replace("\\n", "\n")
    assert result.state["files"]["/memories/a.md"]["content"] == "tea"


def test_the_beta_joins_the_requests_own_and_only_with_the_tool(make_agent: Any) -> None:
    @plait.wrap_model_call
    def other_beta(
        request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(request.override(provider_options={"anthropic": {"betas": ["b-1"]}}))

    seen: list[Any] = []

    @plait.wrap_model_call
    def spy(
        request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        seen.append(request.provider_options)
        return handler(request)

    agent = make_agent(["hi"], middleware=[other_beta, AnthropicMemoryMiddleware(), spy])
    agent.invoke("x")
    assert seen[-1] == {"anthropic": {"betas": ["b-1", "context-management-2025-06-27"]}}

    @plait.wrap_model_call
    def no_tools(
        request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(request.override(tools=[]))

    make_agent(["hi"], middleware=[no_tools, AnthropicMemoryMiddleware(), spy]).invoke("x")
    assert seen[-1] == {}
    none = AnthropicMemoryMiddleware(anthropic_betas=[])
    make_agent(["hi"], middleware=[none, spy]).invoke("x")
    assert seen[-1] == {}


def test_a_link_inside_memories_does_not_reach_past_the_prefix(
    make_agent: Any, tmp_path: Path
) -> None:
    (tmp_path / "memories").mkdir()
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.md").write_text("SECRET\n")
    os.symlink("../private", tmp_path / "memories" / "link")
    mw = AnthropicMemoryMiddleware(backend=DiskBackend(tmp_path))
    _, result = run(
        make_agent,
        mem("v", "view", path="/memories/link/secret.md"),
        mem("c", "create", path="/memories/link/new.md", file_text="x\n"),
        mem("d", "delete", path="/memories/link/secret.md"),
        middleware=mw,
    )
    got = tool_answers(result.messages)
    for key in ("v", "c", "d"):
        assert got[key].status == "error"
        assert got[key].content.startswith("Error: access to /memories/link/"), got[key].content
        assert "(a link to /private/" in got[key].content
        assert "SECRET" not in got[key].content and str(tmp_path) not in got[key].content
    assert sorted(os.listdir(tmp_path / "private")) == ["secret.md"]
