"""``anthropic_text_editor``: the one tool and its four commands through agents (exact answers
and errors), files in thread state across turns, disk and store backends, path rules,
options and their errors, and the tool on the Anthropic wire (type only, no schema)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_server import claude_message, claude_tool_use

import plait
from plait.backends import (
    BackendError,
    CompositeBackend,
    DiskBackend,
    StateBackend,
    StoreBackend,
)
from plait.errors import ConfigError
from plait.store import MemoryStore
from plait.testing import ai, call, tool_answers
from plait_anthropic import AnthropicChatModel
from plait_anthropic._editor import Editor
from plait_anthropic.text_editor import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    AnthropicTextEditorMiddleware,
)

NAME = "str_replace_based_edit_tool"


def ed(id: str, command: str, **args: Any) -> Any:
    return call(NAME, id, command=command, **args)


def run(make_agent: Any, *calls: Any, middleware: Any = None, **kwargs: Any) -> Any:
    """One turn where the model makes each call in turn, then says done."""
    agent = make_agent(
        [*(ai("", c) for c in calls), "done"],
        middleware=[middleware or AnthropicTextEditorMiddleware()],
        **kwargs,
    )
    return agent, agent.invoke("go", thread_id="t")


def test_the_tool_has_anthropics_type_and_a_real_schema(make_agent: Any) -> None:
    agent = make_agent(["hi"], middleware=[AnthropicTextEditorMiddleware()])
    agent.invoke("hello")
    (tool,) = agent.model.requests[0].tools
    assert tool.name == TOOL_NAME == NAME
    assert tool.provider_options == {"anthropic": {"type": "text_editor_20250728"}}
    assert tool.description == TOOL_DESCRIPTION
    props = tool.parameters["properties"]
    assert set(props) == {
        "command",
        "path",
        "file_text",
        "old_str",
        "new_str",
        "insert_line",
        "insert_text",
        "view_range",
    }
    assert props["command"]["enum"] == ["view", "create", "str_replace", "insert"]
    assert tool.parameters["required"] == ["command", "path"]
    assert not agent.model.requests[0].system_prompt


def test_every_command_and_its_answers(make_agent: Any) -> None:
    agent, result = run(
        make_agent,
        ed("c", "create", path="/a.txt", file_text="one\ntwo\ntwo\n"),
        ed("v", "view", path="/a.txt"),
        ed("vr", "view", path="/a.txt", view_range=[2, -1]),
        ed("vr2", "view", path="/a.txt", view_range=[1, 2]),
        ed("d", "view", path="/"),
        ed("s0", "str_replace", path="/a.txt", old_str="zz", new_str="x"),
        ed("s2", "str_replace", path="/a.txt", old_str="two", new_str="x"),
        ed("s1", "str_replace", path="/a.txt", old_str="one", new_str="ONE"),
        ed("i0", "insert", path="/a.txt", insert_line=0, insert_text="zero"),
        ed("iend", "insert", path="/a.txt", insert_line=4, insert_text="last\n"),
        ed("i9", "insert", path="/a.txt", insert_line=9, insert_text="x"),
    )
    got = tool_answers(result.messages)
    assert got["c"].content == "Created /a.txt"
    assert got["v"].content == "     1\tone\n     2\ttwo\n     3\ttwo"
    assert got["vr"].content == "     2\ttwo\n     3\ttwo"
    assert got["vr2"].content == "     1\tone\n     2\ttwo"
    assert got["d"].content == "Directory /:\n/a.txt"
    assert got["s0"].status == "error"
    assert got["s0"].content == (
        "Error: No match for old_str in /a.txt: it must match the file exactly, whitespace "
        "and indentation included (view the file first)"
    )
    assert got["s2"].status == "error"
    assert got["s2"].content == (
        "Error: old_str occurs 2 times in /a.txt (at lines 2, 3); include more surrounding "
        "text so it matches exactly once"
    )
    assert got["s1"].content == (
        "Edited /a.txt. Lines 1-3 now read:\n     1\tONE\n     2\ttwo\n     3\ttwo"
    )
    assert got["i0"].content == (
        "Inserted 1 line at the start of /a.txt. Lines 1-4 now read:\n"
        "     1\tzero\n     2\tONE\n     3\ttwo\n     4\ttwo"
    )
    assert got["iend"].content == (
        "Inserted 1 line after line 4 of /a.txt. Lines 2-5 now read:\n"
        "     2\tONE\n     3\ttwo\n     4\ttwo\n     5\tlast"
    )
    assert got["i9"].status == "error"
    assert got["i9"].content == (
        "Error: insert_line 9 is out of range: /a.txt has 5 lines, so insert_line must be "
        "between 0 and 5 (0 inserts at the start)"
    )
    assert result.state["files"]["/a.txt"]["content"] == "zero\nONE\ntwo\ntwo\nlast\n"
    assert agent.get_state("t")["files"]["/a.txt"]["content"] == "zero\nONE\ntwo\ntwo\nlast\n"


def test_create_overwrites_and_edits_keep_the_creation_date(make_agent: Any) -> None:
    _, result = run(
        make_agent,
        ed("c1", "create", path="/n.md", file_text="old"),
        ed("c2", "create", path="/n.md", file_text="new"),
        ed("c3", "create", path="/e.md", file_text=""),
        ed("c4", "create", path="/e.md", file_text="filled"),
        ed("v", "view", path="/e.md"),
    )
    got = tool_answers(result.messages)
    assert got["c1"].content == "Created /n.md"
    assert got["c2"].content == "Overwrote /n.md"
    assert got["c4"].content == "Overwrote /e.md"
    assert got["v"].content == "     1\tfilled"
    files = result.state["files"]
    assert files["/n.md"]["content"] == "new"
    assert files["/e.md"]["content"] == "filled"


def test_view_edge_cases(make_agent: Any) -> None:
    _, result = run(
        make_agent,
        ed("c", "create", path="/dir/a.txt", file_text="a\nb\n"),
        ed("c0", "create", path="/empty.txt", file_text=""),
        ed("e", "view", path="/empty.txt"),
        ed("dir", "view", path="/dir"),
        ed("nx", "view", path="/nope.txt"),
        ed("r0", "view", path="/dir/a.txt", view_range=[0, 1]),
        ed("r9", "view", path="/dir/a.txt", view_range=[1, 9]),
        ed("r3", "view", path="/dir/a.txt", view_range=[1, 2, 3]),
        ed("rd", "view", path="/dir", view_range=[1, 2]),
    )
    got = tool_answers(result.messages)
    assert got["e"].content == "(the file /empty.txt is empty)"
    assert got["dir"].content == "Directory /dir:\n/dir/a.txt"
    assert got["nx"].content == (
        "Error: /nope.txt does not exist; view its parent directory to see what is there"
    )
    assert got["r0"].content == (
        "Error: view_range start 0 is out of range: /dir/a.txt has 2 lines, so start must "
        "be between 1 and 2"
    )
    assert got["r9"].content == (
        "Error: view_range end 9 is out of range: it must be between 1 and 2 (the last line "
        "of /dir/a.txt), or -1 for the end of the file"
    )
    assert got["r3"].content == (
        "Error: view_range must be two line numbers [start, end], got [1, 2, 3]"
    )
    assert got["rd"].content.startswith("Error: view_range applies to files")
    assert all(got[k].status == "error" for k in ("nx", "r0", "r9", "r3", "rd"))


def test_missing_arguments_and_the_new_str_spelling_of_insert(make_agent: Any) -> None:
    _, result = run(
        make_agent,
        ed("c", "create", path="/a.txt"),
        ed("c2", "create", path="/a.txt", file_text="x\n"),
        ed("s", "str_replace", path="/a.txt", new_str="y"),
        ed("i", "insert", path="/a.txt", insert_text="y"),
        ed("n", "insert", path="/a.txt", insert_line=1, new_str="y"),
        ed("del", "str_replace", path="/a.txt", old_str="x\n"),
        ed("bad", "move", path="/a.txt"),
    )
    got = tool_answers(result.messages)
    assert got["c"].content == "Error: the create command needs file_text"
    assert got["s"].content == (
        "Error: the str_replace command needs old_str (the exact text to replace)"
    )
    assert (
        got["i"].content == "Error: the insert command needs insert_line (0 inserts at the start)"
    )
    assert got["n"].content.startswith("Inserted 1 line after line 1 of /a.txt.")
    assert got["del"].content.startswith("Edited /a.txt.")
    assert got["bad"].status == "error" and "expected one of 'view'" in got["bad"].content
    assert result.state["files"]["/a.txt"]["content"] == "y\n"


def test_paths_are_guarded_and_confined_to_the_allowed_prefixes(make_agent: Any) -> None:
    mw = AnthropicTextEditorMiddleware(allowed_path_prefixes=["/project", "/notes/"])
    _, result = run(
        make_agent,
        ed("ok", "create", path="/project/a.py", file_text="pass\n"),
        ed("ok2", "create", path="/notes/n.md", file_text="n"),
        ed("out", "create", path="/etc/passwd", file_text="x"),
        ed("sib", "view", path="/projectX/a.py"),
        ed("up", "view", path="/project/../etc/passwd"),
        ed("rel", "view", path="project/a.py"),
        middleware=mw,
    )
    got = tool_answers(result.messages)
    assert got["ok"].content == "Created /project/a.py"
    assert got["ok2"].content == "Created /notes/n.md"
    assert got["out"].content == (
        "Error: access to /etc/passwd is not allowed: paths must be under /project or /notes"
    )
    assert got["sib"].content.startswith("Error: access to /projectX/a.py is not allowed")
    assert got["up"].content == (
        "Error: invalid path '/project/../etc/passwd': '..' segments are not allowed"
    )
    assert "must be absolute" in got["rel"].content
    assert set(result.state["files"]) == {"/project/a.py", "/notes/n.md"}


def test_files_survive_a_second_turn_and_stay_in_the_thread(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", ed("c", "create", path="/todo.txt", file_text="milk\n")),
            "ok",
            ai("", ed("s", "str_replace", path="/todo.txt", old_str="milk", new_str="tea")),
            ai("", ed("v", "view", path="/todo.txt")),
            "ok",
            ai("", ed("x", "view", path="/todo.txt")),
            "ok",
        ],
        middleware=[AnthropicTextEditorMiddleware()],
    )
    agent.invoke("write", thread_id="t")
    second = agent.invoke("edit", thread_id="t")
    assert tool_answers(second.messages)["v"].content == "     1\ttea"
    assert agent.get_state("t")["files"]["/todo.txt"]["content"] == "tea\n"
    other = agent.invoke("read", thread_id="u")
    assert tool_answers(other.messages)["x"].status == "error"


def test_disk_backend_edits_real_files(make_agent: Any, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    mw = AnthropicTextEditorMiddleware(backend=f"disk:{tmp_path}")
    assert mw.backend == DiskBackend(tmp_path)
    _, result = run(
        make_agent,
        ed("s", "str_replace", path="/src/app.py", old_str="hi", new_str="bye"),
        ed("i", "insert", path="/src/app.py", insert_line=0, insert_text="import os"),
        ed("c", "create", path="/docs/readme.md", file_text="# App\n"),
        ed("v", "view", path="/src"),
        middleware=mw,
    )
    got = tool_answers(result.messages)
    assert got["s"].status == "success", got["s"].content
    assert got["v"].content == "Directory /src:\n/src/app.py"
    assert (tmp_path / "src" / "app.py").read_text() == "import os\nprint('bye')\n"
    assert (tmp_path / "docs" / "readme.md").read_text() == "# App\n"
    assert not result.state.get("files")


def test_store_backend_is_shared_across_threads(make_agent: Any) -> None:
    store = MemoryStore()
    mw = AnthropicTextEditorMiddleware(backend=StoreBackend(("editor",)))
    writer = make_agent(
        [ai("", ed("c", "create", path="/shared.md", file_text="hello")), "ok"],
        middleware=[mw],
        store=store,
    )
    writer.invoke("go", thread_id="a")
    reader = make_agent(
        [ai("", ed("v", "view", path="/shared.md")), "ok"], middleware=[mw], store=store
    )
    assert tool_answers(reader.invoke("go", thread_id="b").messages)["v"].content == "     1\thello"
    assert store.get(("editor",), "/shared.md") is not None


def test_size_and_character_limits(make_agent: Any) -> None:
    mw = AnthropicTextEditorMiddleware(max_file_size_mb=1, max_characters=20)
    big = "x" * (1024 * 1024 + 1)
    agent, result = run(
        make_agent,
        ed("big", "create", path="/big.txt", file_text=big),
        ed("c", "create", path="/a.txt", file_text="line one\nline two\nline three\n"),
        ed("v", "view", path="/a.txt"),
        middleware=mw,
    )
    got = tool_answers(result.messages)
    assert got["big"].content == "Error: /big.txt would be 1.0 MB, over the 1 MB limit"
    assert got["v"].content == (
        "     1\tline one\n    \n... [output truncated at 20 characters: view a smaller view_range]"
    )
    (tool,) = agent.model.requests[0].tools
    assert tool.provider_options == {
        "anthropic": {"type": "text_editor_20250728", "max_characters": 20}
    }


def test_options_and_their_errors(tmp_path: Path) -> None:
    def build(**options: Any) -> Any:
        return plait.create_agent(
            plait.testing.scripted("hi"), middleware=[("anthropic_text_editor", options)]
        )

    assert build(backend="state", allowed_path_prefixes=["/a"]).invoke("x").text == "hi"
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_text_editor'.*allowed_path_prefixes"):
        build(allowed_path_prefixes="/a")
    with pytest.raises(ConfigError, match=r"allowed_path_prefixes.*'\.\.' segments"):
        build(allowed_path_prefixes=["/a/../b"])
    with pytest.raises(ConfigError) as info:
        build(allowed_path_prefixes=[])
    assert str(info.value) == (
        "plugin 'anthropic_text_editor': option 'allowed_path_prefixes': expected a non-empty "
        "list of absolute paths (such as ['/memories']) or None, got []"
    )
    with pytest.raises(ConfigError) as info:
        build(allowed_path_prefixes=["/a", "notes"])
    assert str(info.value) == (
        "plugin 'anthropic_text_editor': option 'allowed_path_prefixes': expected a non-empty "
        "list of absolute paths (such as ['/memories']) or None, got ['/a', 'notes'] (invalid "
        "path 'notes': it must be absolute, starting with '/' (e.g. '/notes.txt'))"
    )
    with pytest.raises(ConfigError, match="max_characters"):
        build(max_characters=0)
    with pytest.raises(ConfigError, match="max_file_size_mb"):
        build(max_file_size_mb="big")
    with pytest.raises(
        ConfigError, match=r"plugin 'anthropic_text_editor': option 'backend': expected a Backend"
    ):
        build(backend="s3")
    with pytest.raises(
        ConfigError, match=r"plugin 'anthropic_text_editor': option 'backend'.*store"
    ):
        build(backend="store")
    with pytest.raises(ValueError, match="max_characters: expected an int >= 1 or None, got -1"):
        AnthropicTextEditorMiddleware(max_characters=-1)


def test_on_the_anthropic_wire_the_tool_is_its_type(server: Any) -> None:
    create = {"command": "create", "path": "/a.md", "file_text": "hi\n"}
    server.json(claude_message(claude_tool_use("toolu_1", NAME, create)))
    server.json(claude_message("done"))
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=server.url)
    agent = plait.create_agent(model, middleware=[AnthropicTextEditorMiddleware()])
    result = agent.invoke("write a file")
    assert result.text == "done"
    assert server.requests[0].body["tools"] == [
        {"name": "str_replace_based_edit_tool", "type": "text_editor_20250728"}
    ]
    results = [
        block
        for turn in server.requests[1].body["messages"]
        if isinstance(turn["content"], list)
        for block in turn["content"]
        if block.get("type") == "tool_result"
    ]
    assert results[0]["tool_use_id"] == "toolu_1"
    assert "Created /a.md" in str(results[0]["content"])
    assert result.state["files"]["/a.md"]["content"] == "hi\n"


def test_editing_a_directory_or_a_missing_file_and_same_line_matches(make_agent: Any) -> None:
    _, result = run(
        make_agent,
        ed("c", "create", path="/d/a.txt", file_text="x = x + 1\n"),
        ed("dir", "str_replace", path="/d", old_str="x", new_str="y"),
        ed("nx", "insert", path="/d/none.txt", insert_line=0, insert_text="y"),
        ed("same", "str_replace", path="/d/a.txt", old_str="x", new_str="y"),
        ed("over", "create", path="/d", file_text="y"),
    )
    got = tool_answers(result.messages)
    assert got["dir"].content == "Error: /d is a directory, not a file; view it to list its entries"
    assert got["nx"].content == "Error: file /d/none.txt not found"
    assert got["same"].content == (
        "Error: old_str occurs 2 times in /d/a.txt (at line 1); include more surrounding text "
        "so it matches exactly once"
    )
    assert got["over"].content == "Error: /d is a directory"
    assert all(got[k].status == "error" for k in ("dir", "nx", "same", "over"))


def test_concurrent_creates_on_the_async_path_all_land(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", *(ed(f"c{n}", "create", path=f"/f{n}.txt", file_text=str(n)) for n in range(5))),
            "done",
        ],
        middleware=[AnthropicTextEditorMiddleware()],
    )
    asyncio.run(agent.ainvoke("go", thread_id="t"))
    files = agent.get_state("t")["files"]
    assert {p: f["content"] for p, f in files.items()} == {f"/f{n}.txt": str(n) for n in range(5)}


# -- properties of the shared commands (hypothesis) ------------------------------------------

LINES = st.lists(st.text(alphabet="ab x", max_size=6), max_size=6)


def state_editor(text: str) -> Editor:
    """The editor over thread state holding one file, ``/f.txt``."""
    runtime: Any = SimpleNamespace(state={"files": {"/f.txt": {"content": text}}})
    return Editor(fs=StateBackend().bind(runtime))


@settings(max_examples=200, deadline=None)
@given(LINES, LINES, st.data())
def test_insert_puts_the_lines_exactly_after_the_line(
    lines: list[str], new: list[str], data: st.DataObject
) -> None:
    text = "".join(f"{line}\n" for line in lines)
    at = data.draw(st.integers(0, len(lines)))
    inserted = "".join(f"{line}\n" for line in new) or "\n"
    outcome = state_editor(text).insert("/f.txt", at, inserted)
    assert outcome.update is not None
    result = outcome.update["/f.txt"]
    assert result is not None
    assert result["content"].splitlines() == lines[:at] + inserted.splitlines() + lines[at:]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\n", max_size=12), st.text(alphabet="ab\n", min_size=1, max_size=3))
def test_str_replace_edits_only_a_unique_match(text: str, old: str) -> None:
    editor = state_editor(text)
    if text.count(old) != 1:
        with pytest.raises(BackendError):
            editor.str_replace("/f.txt", old, "Z")
        return
    outcome = editor.str_replace("/f.txt", old, "Z")
    assert outcome.update is not None
    result = outcome.update["/f.txt"]
    assert result is not None and result["content"] == text.replace(old, "Z")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    import tracemalloc

    from plait_anthropic._editor import Editor

    with (tmp_path / "big.log").open("wb") as handle:
        handle.truncate(30 * 1024 * 1024)  # 30 MB of zeros, sparse on disk
    editor = Editor(fs=DiskBackend(tmp_path).bind(), max_file_size_mb=10)
    tracemalloc.start()
    try:
        for command in (
            lambda: editor.view("/big.log"),
            lambda: editor.str_replace("/big.log", "a", "b"),
        ):
            with pytest.raises(BackendError, match=r"^Error: /big.log is 30.0 MB, over the 10 MB"):
                command()
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert top < 1024 * 1024  # the file was never loaded


def _huge(lines: int) -> str:
    return "".join(f"line {n} é\n" for n in range(1, lines + 1))


HUGE = _huge(400_000)  # 5.6 MB in UTF-8


def _over_the_limit_backends(tmp_path: Path) -> list[tuple[str, Any, str]]:
    """(name, a bound file system holding HUGE, its path) for each kind of backend."""
    (tmp_path / "disk").mkdir()
    (tmp_path / "disk" / "huge.txt").write_text(HUGE)
    store = MemoryStore()
    store.put(("filesystem",), "/huge.txt", {"content": HUGE})
    runtime = SimpleNamespace(state={"files": {"/huge.txt": {"content": HUGE}}}, store=store)
    routed = CompositeBackend(
        default=StateBackend(), routes={"/disk/": DiskBackend(tmp_path / "disk")}
    )
    return [
        ("state", StateBackend().bind(runtime), "/huge.txt"),
        ("store", StoreBackend().bind(runtime), "/huge.txt"),
        ("composite to state", routed.bind(runtime), "/huge.txt"),
        ("composite to disk", routed.bind(runtime), "/disk/huge.txt"),
    ]


def test_a_file_over_the_limit_on_every_backend_is_refused_or_viewed_in_a_range(
    tmp_path: Path,
) -> None:
    import tracemalloc

    for name, fs, path in _over_the_limit_backends(tmp_path):
        editor = Editor(fs=fs, max_file_size_mb=1)
        tracemalloc.start()
        try:
            with pytest.raises(BackendError) as whole:
                editor.view(path)
            shown = editor.view(path, [399_999, 400_000]).text
            with pytest.raises(BackendError) as edit:
                editor.str_replace(path, "line 7 ", "LINE 7 ")
            with pytest.raises(BackendError) as inserted:
                editor.insert(path, 1, "x")
            _, top = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert str(whole.value) == (
            f"Error: {path} is 5.6 MB, over the 1 MB limit: view part of it with view_range "
            "[start, end] (up to 2000 lines)"
        ), name
        assert shown == "399999\tline 399999 é\n400000\tline 400000 é", name
        assert str(edit.value) == f"Error: {path} is 5.6 MB, over the 1 MB limit", name
        assert str(inserted.value) == str(edit.value), name
        assert top < 2.5 * 1024 * 1024, (name, top)  # never a copy of the 5 MB text


def test_a_range_of_a_file_over_the_limit_is_bounded_and_checked(tmp_path: Path) -> None:
    _, fs, path = _over_the_limit_backends(tmp_path)[3]
    editor = Editor(fs=fs, max_file_size_mb=1, max_characters=60)
    assert editor.view(path, [1, 2]).text == "     1\tline 1 é\n     2\tline 2 é"
    assert editor.view(path, [10, 2000]).text.endswith(
        "... [output truncated at 60 characters: view a smaller view_range]"
    )
    for bad in ([5, -1], [0, 3], [5, 2], [1, 2001]):
        with pytest.raises(BackendError, match=r"at most 2000 lines, got \["):
            editor.view(path, bad)
    with pytest.raises(
        BackendError, match=f"past the end of {re.escape(path)}, which has 400000 lines"
    ):
        editor.view(path, [400_001, 400_002])


def test_a_link_inside_a_composite_route_cannot_pass_the_prefix_check(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    (root / "notes").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "private" / "secret.txt").write_text("secret\n")
    (root / "notes" / "leak").symlink_to("../private")
    backend = CompositeBackend(default=StateBackend(), routes={"/memories/": DiskBackend(root)})
    runtime = SimpleNamespace(state={}, store=None)
    editor = Editor(fs=backend.bind(runtime), allowed_path_prefixes=["/memories/notes"])
    with pytest.raises(BackendError) as refused:
        editor.view("/memories/notes/leak/secret.txt")
    assert str(refused.value) == (
        "Error: access to /memories/notes/leak/secret.txt (a link to "
        "/memories/private/secret.txt) is not allowed: paths must be under /memories/notes"
    )
