"""``filesystem``: the six tools through agents, errors as error tool messages, files in
thread state across turns and agents (memory and SQLite), the store shared across threads,
composite routing, concurrent writes, large-result eviction, options and their errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.messages import ToolMessage
from plait.store import MemoryStore
from plait.testing import ai, call, tool_answers
from plait_filesystem import (
    DEFAULT_SYSTEM_PROMPT,
    TOOL_DESCRIPTIONS,
    CompositeBackend,
    DiskBackend,
    FilesystemMiddleware,
    StateBackend,
    StoreBackend,
)


def run(make_agent: Any, *calls: Any, middleware: Any = None, **kwargs: Any) -> Any:
    """One turn where the model makes each group of calls in turn, then says done."""
    script = [ai("", *group) if isinstance(group, tuple) else ai("", group) for group in calls]
    agent = make_agent(
        [*script, "done"], middleware=[middleware or FilesystemMiddleware()], **kwargs
    )
    return agent, agent.invoke("go", thread_id="t")


def test_the_tools_are_offered_with_the_prompt_section(make_agent: Any) -> None:
    agent = make_agent(["hi"], middleware=[FilesystemMiddleware()])
    agent.invoke("hello")
    request = agent.model.requests[0]
    offered = {tool.name: tool for tool in request.tools}
    assert set(offered) == set(TOOL_DESCRIPTIONS)
    assert offered["read_file"].description == TOOL_DESCRIPTIONS["read_file"]
    assert set(offered["edit_file"].parameters["properties"]) == {
        "file_path",
        "old_string",
        "new_string",
        "replace_all",
    }
    assert request.system_prompt.endswith(DEFAULT_SYSTEM_PROMPT)


def test_custom_descriptions_and_no_prompt(make_agent: Any) -> None:
    middleware = FilesystemMiddleware(
        system_prompt=None, custom_tool_descriptions={"grep": "Find text."}
    )
    agent = make_agent(["hi"], middleware=[middleware])
    agent.invoke("hello")
    request = agent.model.requests[0]
    assert {t.name: t.description for t in request.tools}["grep"] == "Find text."
    assert not request.system_prompt


def test_write_read_edit_ls_glob_grep_through_an_agent(make_agent: Any) -> None:
    agent, result = run(
        make_agent,
        call("write_file", "w", file_path="/notes/a.md", content="alpha\nbeta\nbeta\n"),
        call("read_file", "r", file_path="/notes/a.md", offset=1, limit=1),
        call("edit_file", "e1", file_path="/notes/a.md", old_string="beta", new_string="B"),
        call(
            "edit_file",
            "e2",
            file_path="/notes/a.md",
            old_string="beta",
            new_string="B",
            replace_all=True,
        ),
        call("ls", "l", path="/"),
        call("glob", "g", pattern="**/*.md"),
        call("grep", "s", pattern="alpha"),
        call("write_file", "w2", file_path="/notes/a.md", content="again"),
        call("read_file", "r2", file_path="/notes/a.md", offset=10),
        call("read_file", "r3", file_path="relative.md"),
    )
    got = tool_answers(result.messages)
    assert got["w"].content == "Wrote /notes/a.md"
    assert got["r"].content == "     2\tbeta\n... [1 more line: read with offset=2]"
    assert got["e1"].status == "error" and "occurs 2 times" in got["e1"].content
    assert got["e2"].content == "Replaced 2 occurrences in /notes/a.md"
    assert got["l"].content == "/notes/"
    assert got["g"].content == "/notes/a.md"
    assert got["s"].content == "/notes/a.md:1: alpha"
    assert got["w2"].status == "error" and "already exists" in got["w2"].content
    assert got["r2"].status == "error" and "past the end of /notes/a.md" in got["r2"].content
    assert got["r3"].status == "error" and "must be absolute" in got["r3"].content
    files = agent.get_state("t")["files"]
    assert files["/notes/a.md"]["content"] == "alpha\nB\nB\n"


@pytest.mark.parametrize("database", ["memory", "sqlite"])
def test_state_files_persist_across_turns_and_agents(
    make_agent: Any, tmp_path: Path, database: str
) -> None:
    checkpointer = "memory" if database == "memory" else f"sqlite:///{tmp_path / 'a.db'}"
    mw = FilesystemMiddleware()
    first = make_agent(
        [
            ai("", call("write_file", "w", file_path="/todo.txt", content="buy milk")),
            "ok",
            ai("", call("read_file", "r", file_path="/todo.txt")),
            "ok",
        ],
        middleware=[mw],
        checkpointer=checkpointer,
    )
    first.invoke("write", thread_id="t")
    second_turn = first.invoke("read", thread_id="t")
    assert tool_answers(second_turn.messages)["r"].content == "     1\tbuy milk"
    other_thread = make_agent(
        [ai("", call("read_file", "x", file_path="/todo.txt")), "ok"],
        middleware=[mw],
        checkpointer=checkpointer,
    )
    assert tool_answers(other_thread.invoke("read", thread_id="u").messages)["x"].status == "error"
    if database == "sqlite":
        fresh = make_agent(
            [
                ai(
                    "",
                    call(
                        "edit_file", "e", file_path="/todo.txt", old_string="milk", new_string="tea"
                    ),
                ),
                "ok",
            ],
            middleware=[FilesystemMiddleware()],
            checkpointer=checkpointer,
        )
        fresh.invoke("edit", thread_id="t")
        assert fresh.get_state("t")["files"]["/todo.txt"]["content"] == "buy tea"


def test_store_backend_is_shared_across_threads(make_agent: Any) -> None:
    store = MemoryStore()
    mw = FilesystemMiddleware(backend=StoreBackend())
    writer = make_agent(
        [ai("", call("write_file", "w", file_path="/shared.md", content="hi all")), "ok"],
        middleware=[mw],
        store=store,
    )
    writer.invoke("go", thread_id="a")
    reader = make_agent(
        [ai("", call("read_file", "r", file_path="/shared.md")), "ok"],
        middleware=[mw],
        store=store,
    )
    assert (
        tool_answers(reader.invoke("go", thread_id="b").messages)["r"].content == "     1\thi all"
    )
    assert "files" not in writer.get_state("a") or writer.get_state("a")["files"] == {}


def test_a_store_backend_without_a_store_fails_at_build(make_agent: Any) -> None:
    with pytest.raises(ConfigError, match=r"plugin 'filesystem': option 'backend'.*store"):
        make_agent(["hi"], middleware=[FilesystemMiddleware(backend=StoreBackend())])
    composite = CompositeBackend(StateBackend(), {"/memories/": StoreBackend()})
    with pytest.raises(ConfigError, match="needs the agent's store"):
        make_agent(["hi"], middleware=[FilesystemMiddleware(backend=composite)])


def test_composite_routes_memories_to_the_store(make_agent: Any) -> None:
    store = MemoryStore()
    backend = CompositeBackend(StateBackend(), {"/memories/": StoreBackend()})
    agent, result = run(
        make_agent,
        (
            call("write_file", "m", file_path="/memories/prefs.md", content="likes tea"),
            call("write_file", "s", file_path="/scratch.md", content="draft"),
        ),
        call("ls", "l", path="/"),
        call("grep", "g", pattern="tea"),
        middleware=FilesystemMiddleware(backend=backend),
        store=store,
    )
    got = tool_answers(result.messages)
    assert got["l"].content == "/memories/\n/scratch.md"
    assert got["g"].content == "/memories/prefs.md:1: likes tea"
    assert set(agent.get_state("t")["files"]) == {"/scratch.md"}
    assert store.get(("filesystem",), "/prefs.md").value["content"] == "likes tea"  # type: ignore[union-attr]


def test_concurrent_writes_in_one_message_all_land_on_the_async_path(make_agent: Any) -> None:
    writes = tuple(
        call("write_file", f"w{n}", file_path=f"/f{n}.txt", content=str(n)) for n in range(5)
    )
    agent = make_agent([ai("", *writes), "done"], middleware=[FilesystemMiddleware()])
    result = asyncio.run(agent.ainvoke("go", thread_id="t"))
    assert all(m.status == "success" for m in tool_answers(result.messages).values())
    files = agent.get_state("t")["files"]
    assert {path: f["content"] for path, f in files.items()} == {
        f"/f{n}.txt": str(n) for n in range(5)
    }


REPORT = "\n".join(f"row {n}: " + "x" * 50 for n in range(200))


@plait.tool
def big_report() -> str:
    """Produce a long report."""
    return REPORT


def test_a_large_tool_result_is_saved_to_a_file_and_replaced_by_a_pointer(make_agent: Any) -> None:
    mw = FilesystemMiddleware(tool_token_limit_before_evict=500)
    agent = make_agent(
        [
            ai("", call("big_report", "big1")),
            ai("", call("read_file", "r", file_path="/large_tool_results/big1", offset=199)),
            "done",
        ],
        tools=[big_report],
        middleware=[mw],
    )
    result = agent.invoke("go", thread_id="t")
    got = tool_answers(result.messages)
    pointer = got["big1"].content
    assert "saved to /large_tool_results/big1" in pointer
    assert "read_file(file_path='/large_tool_results/big1', offset=0, limit=100)" in pointer
    assert "     1\trow 0: " in pointer and "row 150" not in pointer
    assert got["r"].content.startswith("   200\trow 199: ")
    assert agent.get_state("t")["files"]["/large_tool_results/big1"]["content"] == REPORT


def test_eviction_can_be_disabled_and_small_results_stay(make_agent: Any) -> None:
    for limit in (None, 10**6):
        agent = make_agent(
            [ai("", call("big_report", "b")), "done"],
            tools=[big_report],
            middleware=[FilesystemMiddleware(tool_token_limit_before_evict=limit)],
        )
        result = agent.invoke("go", thread_id="t")
        assert tool_answers(result.messages)["b"].content == REPORT
        assert agent.get_state("t")["files"] == {}


def test_disk_backend_through_an_agent_stays_in_root(make_agent: Any, tmp_path: Path) -> None:
    root, sibling = tmp_path / "root", tmp_path / "sibling"
    root.mkdir()
    sibling.mkdir()
    (root / "link").symlink_to(sibling)
    _, result = run(
        make_agent,
        call("write_file", "ok", file_path="/in/a.txt", content="inside"),
        call("write_file", "up", file_path="/../sibling/x.txt", content="out"),
        call("write_file", "ln", file_path="/link/x.txt", content="out"),
        middleware=FilesystemMiddleware(backend="disk:" + str(root)),
    )
    got = tool_answers(result.messages)
    assert (root / "in" / "a.txt").read_text() == "inside"
    assert got["up"].status == "error" and "'..' segments" in got["up"].content
    assert got["ln"].status == "error" and "resolves outside" in got["ln"].content
    assert list(sibling.iterdir()) == []


def test_options_by_name_and_their_errors(tmp_path: Path) -> None:
    agent = plait.create_agent(
        plait.testing.scripted("hi"),
        middleware=[
            ("filesystem", {"backend": "store:team/notes", "tool_token_limit_before_evict": 100})
        ],
        store=MemoryStore(),
    )
    assert agent.invoke("x").text == "hi"
    mw = FilesystemMiddleware(backend="store:team/notes")
    assert mw.backend == StoreBackend(("team", "notes"))
    assert FilesystemMiddleware(backend="state").backend == StateBackend()
    assert FilesystemMiddleware(backend="disk:" + str(tmp_path)).backend == DiskBackend(tmp_path)
    with pytest.raises(ConfigError) as info:
        plait.create_agent(
            plait.testing.scripted("hi"),
            middleware=[("filesystem", {"custom_tool_descriptions": {"cat": "x"}})],
        )
    assert str(info.value) == (
        "plugin 'filesystem': option 'custom_tool_descriptions': unknown key 'cat' (valid: "
        "ls, read_file, write_file, edit_file, glob, grep)"
    )
    with pytest.raises(ConfigError) as info:
        plait.create_agent(
            plait.testing.scripted("hi"),
            middleware=[("filesystem", {"custom_tool_descriptions": {"ls": " "}})],
        )
    assert str(info.value) == (
        "plugin 'filesystem': option 'custom_tool_descriptions': expected a mapping of tool "
        "names to non-empty strings, got {'ls': ' '} (the description of 'ls' is not a "
        "non-empty string)"
    )
    with pytest.raises(
        ConfigError, match=r"plugin 'filesystem': option 'backend': expected a Backend"
    ):
        plait.create_agent(
            plait.testing.scripted("hi"), middleware=[("filesystem", {"backend": "s3"})]
        )
    with pytest.raises(ConfigError, match="tool_token_limit_before_evict"):
        plait.create_agent(
            plait.testing.scripted("hi"),
            middleware=[("filesystem", {"tool_token_limit_before_evict": 0})],
        )


@plait.tool
def report_with_update(runtime: plait.types.ToolRuntime) -> plait.types.Command:
    """Produce a long report and note it in state."""
    answer = ToolMessage(REPORT, tool_call_id=runtime.tool_call_id, name="report_with_update")
    return plait.types.Command(update={"messages": [answer]})


def test_concurrent_evictions_on_the_async_path_keep_every_file(make_agent: Any) -> None:
    mw = FilesystemMiddleware(tool_token_limit_before_evict=500)
    agent = make_agent(
        [
            ai(
                "",
                call("big_report", "b1"),
                call("big_report", "b2"),
                call("report_with_update", "c1"),
            ),
            "done",
        ],
        tools=[big_report, report_with_update],
        middleware=[mw],
    )
    result = asyncio.run(agent.ainvoke("go", thread_id="t"))
    got = tool_answers(result.messages)
    for call_id in ("b1", "b2", "c1"):
        assert f"saved to /large_tool_results/{call_id}" in got[call_id].content
    files = agent.get_state("t")["files"]
    assert {p: f["content"] for p, f in files.items()} == {
        f"/large_tool_results/{call_id}": REPORT for call_id in ("b1", "b2", "c1")
    }
