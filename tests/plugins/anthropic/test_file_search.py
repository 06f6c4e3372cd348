"""``anthropic_file_search``: ``glob_search`` and ``grep_search`` (regular expressions, the
three output modes, include filters with braces, the size and count caps) over files the
text editor wrote in thread state, on disk and in the store; options and their errors;
plain function tools on the Anthropic wire."""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from replay_server import claude_message

import plait
from plait.errors import ConfigError
from plait.store import MemoryStore
from plait.testing import ai, call, tool_answers
from plait_anthropic import AnthropicChatModel
from plait_anthropic.file_search import TOOL_DESCRIPTIONS, AnthropicFileSearchMiddleware
from plait_anthropic.memory import AnthropicMemoryMiddleware
from plait_anthropic.text_editor import AnthropicTextEditorMiddleware

FILES = {
    "/src/app.py": "import os\n\ndef main():\n    print('hi')  # TODO\n",
    "/src/util/helpers.py": "def helper():\n    return 1\n",
    "/web/index.ts": "export function main() {}\n",
    "/web/view.tsx": "// TODO: render\n",
    "/README.md": "# App\nRun main.\n",
}


def search(make_agent: Any, *calls: Any, middleware: Any = None, **kwargs: Any) -> Any:
    """Files written by the text editor, then each search call in turn, in one turn."""
    agent = make_agent(
        [
            ai(
                "",
                *(
                    call("str_replace_based_edit_tool", command="create", path=p, file_text=t)
                    for p, t in FILES.items()
                ),
            ),
            *(ai("", c) for c in calls),
            "done",
        ],
        middleware=[AnthropicTextEditorMiddleware(), middleware or AnthropicFileSearchMiddleware()],
        **kwargs,
    )
    return agent.invoke("go", thread_id="t")


def test_the_tools_are_plain_function_tools(make_agent: Any) -> None:
    agent = make_agent(["hi"], middleware=[AnthropicFileSearchMiddleware()])
    agent.invoke("hello")
    tools = {tool.name: tool for tool in agent.model.requests[0].tools}
    assert set(tools) == {"glob_search", "grep_search"}
    assert all(tool.provider_options == {} for tool in tools.values())
    assert tools["grep_search"].description == TOOL_DESCRIPTIONS["grep_search"]
    grep = tools["grep_search"].parameters
    assert set(grep["properties"]) == {"pattern", "path", "include", "output_mode"}
    assert grep["required"] == ["pattern"]
    assert grep["properties"]["output_mode"]["enum"] == ["files_with_matches", "content", "count"]
    assert grep["properties"]["output_mode"]["default"] == "files_with_matches"
    assert grep["properties"]["path"]["default"] == "/"
    assert set(tools["glob_search"].parameters["properties"]) == {"pattern", "path"}


def test_glob_search(make_agent: Any) -> None:
    result = search(
        make_agent,
        call("glob_search", "all", pattern="**/*.py"),
        call("glob_search", "rel", pattern="*.py", path="/src"),
        call("glob_search", "abs", pattern="/web/*.ts*"),
        call("glob_search", "none", pattern="**/*.rs"),
        call("glob_search", "bad", pattern="*", path="src"),
    )
    got = tool_answers(result.messages)
    assert got["all"].content == "/src/app.py\n/src/util/helpers.py"
    assert got["rel"].content == "/src/app.py"
    assert got["abs"].content == "/web/index.ts\n/web/view.tsx"
    assert got["none"].content == "No files match '**/*.rs' under /"
    assert got["bad"].status == "error" and "must be absolute" in got["bad"].content


def test_grep_search_modes_and_filters(make_agent: Any) -> None:
    result = search(
        make_agent,
        call("grep_search", "files", pattern=r"def \w+\("),
        call("grep_search", "content", pattern="TODO", output_mode="content"),
        call("grep_search", "count", pattern="main|helper", output_mode="count"),
        call("grep_search", "include", pattern="main", include="*.{ts,tsx}"),
        call("grep_search", "nested", pattern="def", include="util/*.py", path="/src"),
        call("grep_search", "under", pattern="main", path="/src"),
        call("grep_search", "file", pattern="print", path="/src/app.py", output_mode="content"),
        call("grep_search", "none", pattern="^zzz$"),
        call("grep_search", "badre", pattern="(unclosed"),
        call("grep_search", "badmode", pattern="x", output_mode="lines"),
    )
    got = tool_answers(result.messages)
    assert got["files"].content == "/src/app.py\n/src/util/helpers.py"
    assert got["content"].content == (
        "/src/app.py:4:     print('hi')  # TODO\n/web/view.tsx:1: // TODO: render"
    )
    assert got["count"].content == (
        "/README.md:1\n/src/app.py:1\n/src/util/helpers.py:1\n/web/index.ts:1"
    )
    assert got["include"].content == "/web/index.ts"
    assert got["nested"].content == "/src/util/helpers.py"
    assert got["under"].content == "/src/app.py"
    assert got["file"].content == "/src/app.py:4:     print('hi')  # TODO"
    assert got["none"].content == "No matches for '^zzz$' under /"
    assert got["badre"].status == "error"
    assert got["badre"].content == (
        "Error: invalid regular expression '(unclosed': missing ), unterminated subpattern "
        "at position 0"
    )
    assert got["badmode"].status == "error"
    assert "expected one of 'files_with_matches'" in got["badmode"].content


def test_caps_on_file_size_and_count(make_agent: Any, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("needle\n" * (1024 * 1024 // 7 + 1))
    for n in range(3):
        (tmp_path / f"small{n}.txt").write_text("needle\n")
    mw = AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}", max_file_size_mb=1, max_files=3)
    agent = make_agent(
        [ai("", call("grep_search", "g", pattern="needle")), "done"], middleware=[mw]
    )
    got = tool_answers(agent.invoke("go").messages)
    assert got["g"].content == (
        "/small0.txt\n/small1.txt\n"
        "(searched the first 3 of 4 files: narrow path or include to search the rest)\n"
        "(1 file over 1 MB not searched)"
    )


def test_on_disk_and_in_the_store(make_agent: Any, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("alpha\nbeta\n")
    disk = make_agent(
        [
            ai("", call("glob_search", "g", pattern="**/*.md")),
            ai("", call("grep_search", "s", pattern="^b", output_mode="content")),
            "done",
        ],
        middleware=[AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}")],
    )
    got = tool_answers(disk.invoke("go").messages)
    assert got["g"].content == "/notes/a.md"
    assert got["s"].content == "/notes/a.md:2: beta"

    store = MemoryStore()
    writer = make_agent(
        [
            ai(
                "",
                call(
                    "str_replace_based_edit_tool", command="create", path="/k.md", file_text="key"
                ),
            ),
            "ok",
        ],
        middleware=[AnthropicTextEditorMiddleware(backend="store:shared")],
        store=store,
    )
    writer.invoke("go", thread_id="a")
    reader = make_agent(
        [ai("", call("grep_search", "s", pattern="k.y")), "done"],
        middleware=[AnthropicFileSearchMiddleware(backend="store:shared")],
        store=store,
    )
    assert tool_answers(reader.invoke("go", thread_id="b").messages)["s"].content == "/k.md"


def test_options_and_their_errors() -> None:
    def build(**options: Any) -> Any:
        return plait.create_agent(
            plait.testing.scripted("hi"), middleware=[("anthropic_file_search", options)]
        )

    assert build(max_file_size_mb=None, max_files=None).invoke("x").text == "hi"
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_file_search'.*max_files"):
        build(max_files=0)
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_file_search'.*max_file_size_mb"):
        build(max_file_size_mb=1.5)
    with pytest.raises(ConfigError, match=r"plugin 'anthropic_file_search': option 'backend'"):
        build(backend="nowhere")
    with pytest.raises(ConfigError, match=r"option 'timeout'.*expected"):
        build(timeout=0)
    with pytest.raises(ConfigError, match=r"option 'allowed_path_prefixes'.*expected"):
        build(allowed_path_prefixes="/memories")
    with pytest.raises(ConfigError, match=r"option 'backend'.*store"):
        build(backend="store")


def test_on_the_anthropic_wire_they_are_custom_tools(server: Any) -> None:
    server.json(claude_message("ok"))
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=server.url)
    plait.create_agent(model, middleware=[AnthropicFileSearchMiddleware()]).invoke("x")
    tools = {tool["name"]: tool for tool in server.requests[0].body["tools"]}
    assert set(tools) == {"glob_search", "grep_search"}
    assert "type" not in tools["grep_search"]
    assert tools["grep_search"]["description"] == TOOL_DESCRIPTIONS["grep_search"]
    assert set(tools["grep_search"]["input_schema"]["properties"]) == {
        "pattern",
        "path",
        "include",
        "output_mode",
    }


def test_a_file_over_the_limit_is_skipped_before_it_is_read(
    make_agent: Any, tmp_path: Path
) -> None:
    import tracemalloc

    with (tmp_path / "huge.log").open("wb") as handle:
        handle.truncate(30 * 1024 * 1024)  # 30 MB of zeros, sparse on disk
    (tmp_path / "small.txt").write_text("needle\n")
    mw = AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}", max_file_size_mb=10)
    agent = make_agent(
        [ai("", call("grep_search", "g", pattern="needle")), "done"], middleware=[mw]
    )
    tracemalloc.start()
    try:
        got = tool_answers(agent.invoke("go").messages)
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got["g"].content == "/small.txt\n(1 file over 10 MB not searched)"
    assert top < 5 * 1024 * 1024  # the 30 MB file was never loaded


def test_a_state_file_with_a_lone_surrogate_is_written_and_searched(make_agent: Any) -> None:
    from plait_anthropic.text_editor import AnthropicTextEditorMiddleware

    text = "caf\udce9 needle\nother\n"  # a Latin-1 file name or text decoded as UTF-8
    create = call("str_replace_based_edit_tool", "c", command="create", path="/odd.txt")
    create.args["file_text"] = text
    agent = make_agent(
        [
            ai("", create),
            ai("", call("grep_search", "g", pattern="needle", output_mode="content")),
            "done",
        ],
        middleware=[AnthropicTextEditorMiddleware(), AnthropicFileSearchMiddleware()],
    )
    got = tool_answers(agent.invoke("go").messages)
    assert got["c"].content == "Created /odd.txt"
    assert got["g"].content == "/odd.txt:1: caf\udce9 needle"


def test_on_disk_grep_searches_a_file_path_and_skips_binary_files(
    make_agent: Any, tmp_path: Path
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import os\ndef main():\n    print('hi')\n")
    (tmp_path / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00def main\x00\xff\n")
    agent = make_agent(
        [
            ai(
                "",
                call("grep_search", "file", pattern="print", path="/src/app.py"),
                call("grep_search", "all", pattern="def main", output_mode="content"),
                call("grep_search", "png", pattern="main", path="/src/logo.png"),
            ),
            "done",
        ],
        middleware=[AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}")],
    )
    got = tool_answers(agent.invoke("go").messages)
    assert got["file"].content == "/src/app.py"
    assert got["all"].content == "/src/app.py:2: def main():"
    assert got["png"].content == "No matches for 'main' under /src/logo.png"


def test_a_pattern_that_runs_too_long_is_stopped_and_the_run_goes_on(
    make_agent: Any, tmp_path: Path
) -> None:
    # (a+)+$ backtracks 2**n ways on a run of a's ending in b: with Python's re, 40 a's
    # hold the GIL (every thread of the process) for hours
    (tmp_path / "a.txt").write_text("fine\n")
    (tmp_path / "b.txt").write_text("x\n" + "a" * 5000 + "b\n")
    agent = make_agent(
        [
            ai("", call("grep_search", "slow", pattern="(a+)+$")),
            ai("", call("grep_search", "next", pattern="fin(e|d)")),
            "done",
        ],
        middleware=[AnthropicFileSearchMiddleware(backend=f"disk:{tmp_path}", timeout=2)],
    )
    outcome: list[Any] = []
    worker = threading.Thread(target=lambda: outcome.append(agent.invoke("go")), daemon=True)
    worker.start()
    for _ in range(30):  # this thread runs while the search does: the GIL is not held
        time.sleep(0.01)
    assert worker.is_alive() and not outcome
    worker.join(120)  # generous: the bound is 2 s, without it this takes hours
    assert not worker.is_alive(), "grep_search did not stop the pattern"
    got = tool_answers(outcome[0].messages)
    assert got["slow"].status == "error"
    assert got["slow"].content == (
        "Error: the pattern '(a+)+$' took longer than 2 s (stopped on /b.txt line 2); "
        "try a simpler pattern"
    )
    assert got["next"].content == "/a.txt"
    assert outcome[0].text == "done"


def test_python_regular_expression_syntax_keeps_working(make_agent: Any) -> None:
    result = search(
        make_agent,
        call("grep_search", "named", pattern=r"(?P<kw>def|import) (?P=kw)?\w", output_mode="count"),
        call("grep_search", "flags", pattern=r"(?i)^# APP$"),
        call("grep_search", "look", pattern=r"(?<=\()'hi'(?=\))"),
        call("grep_search", "class", pattern=r"[^\W\d]+\(\)\s*\{"),
        call("grep_search", "atomic", pattern=r"(?>ret)urn \d++"),
        call("grep_search", "posix", pattern=r"[[:alpha:]]"),
    )
    got = tool_answers(result.messages)
    assert got["named"].content == "/src/app.py:2\n/src/util/helpers.py:1"
    assert got["flags"].content == "/README.md"
    assert got["look"].content == "/src/app.py"
    assert got["class"].content == "/web/index.ts"
    assert got["atomic"].content == "/src/util/helpers.py"
    # matched by the regex package: a POSIX class means what it means to grep (Python's re
    # would read a set of ':', 'a', 'l', 'p', 'h' followed by ']')
    assert got["posix"].content == "\n".join(sorted(FILES))


def test_set_syntax_re_warns_about_prints_no_warning(make_agent: Any) -> None:
    # re.compile warns (FutureWarning, "Possible nested set") on '[[' and '&&' in a set:
    # a model's pattern must not print into the process's output. The patterns mean what
    # they mean to re, except a POSIX class, which means what it means to grep.
    with warnings.catch_warnings(record=True) as printed:
        warnings.simplefilter("always")
        filters = list(warnings.filters)
        result = search(
            make_agent,
            call("grep_search", "bracket", pattern=r"[[(]'hi'", output_mode="content"),
            call("grep_search", "and", pattern=r"[&&x]port"),
            call("grep_search", "digit", pattern=r"[[:digit:]]$"),
            call("grep_search", "unknown", pattern=r"[[:nope:]]"),
        )
        assert warnings.filters == filters  # the process's own filters are as they were
    assert [str(w.message) for w in printed] == []
    got = tool_answers(result.messages)
    assert got["bracket"].content == "/src/app.py:4:     print('hi')  # TODO"
    assert got["and"].content == "/web/index.ts"
    assert got["digit"].content == "/src/util/helpers.py"
    # re takes it (a set of ':', 'n', 'o', 'p', 'e' then ']'); the regex package, which
    # reads POSIX classes, names the class unknown: an error the model can act on
    assert got["unknown"].status == "error"
    assert got["unknown"].content == (
        "Error: invalid regular expression '[[:nope:]]': unknown property at position 9"
    )


def agent_data(root: Path) -> None:
    """A DiskBackend root holding memories and files the memory tool may not touch."""
    (root / "memories").mkdir()
    (root / "memories" / "notes.md").write_text("the user likes tea\n")
    (root / "private").mkdir()
    (root / "private" / "keys.txt").write_text("the api key is sk-123\n")
    (root / "memories" / "leak.txt").symlink_to(root / "private" / "keys.txt")


def test_beside_the_memory_tool_it_searches_only_memories(make_agent: Any, tmp_path: Path) -> None:
    agent_data(tmp_path)
    backend = f"disk:{tmp_path}"
    agent = make_agent(
        [
            ai(
                "",
                call("grep_search", "all", pattern="the", output_mode="content"),
                call("glob_search", "files", pattern="**/*"),
                call("grep_search", "outside", pattern="key", path="/private"),
                call("glob_search", "outside_glob", pattern="*", path="/private"),
                call("grep_search", "link", pattern="key", path="/memories/leak.txt"),
                call("glob_search", "abs", pattern="/private/*"),
            ),
            "done",
        ],
        middleware=[
            AnthropicMemoryMiddleware(backend=backend),
            AnthropicFileSearchMiddleware(backend=backend),
        ],
    )
    got = tool_answers(agent.invoke("go").messages)
    assert got["all"].content == "/memories/notes.md:1: the user likes tea"
    assert got["files"].content == "/memories/notes.md"
    refused = "Error: access to /private is not allowed: paths must be under /memories"
    assert (got["outside"].status, got["outside"].content) == ("error", refused)
    assert (got["outside_glob"].status, got["outside_glob"].content) == ("error", refused)
    assert got["link"].status == "error"
    assert got["link"].content == (
        "Error: access to /memories/leak.txt (a link to /private/keys.txt) is not allowed: "
        "paths must be under /memories"
    )
    assert got["abs"].content == "No files match '/private/*' under /"


def test_its_scope_follows_the_file_tools_on_its_backend_or_is_given(
    make_agent: Any, tmp_path: Path
) -> None:
    agent_data(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("the app\n")
    backend = f"disk:{tmp_path}"

    def files(*middleware: Any) -> str:
        agent = make_agent(
            [ai("", call("glob_search", "g", pattern="**/*")), "done"], middleware=list(middleware)
        )
        return str(tool_answers(agent.invoke("go").messages)["g"].content)

    memory = AnthropicMemoryMiddleware(backend=backend)
    search = AnthropicFileSearchMiddleware(backend=backend)
    # the editor's prefixes join the memory's
    editor = AnthropicTextEditorMiddleware(backend=backend, allowed_path_prefixes=["/src"])
    assert files(memory, editor, search) == "/memories/notes.md\n/src/app.py"
    # a file tool that may read anything on the backend: so may the search
    everything = "/memories/leak.txt\n/memories/notes.md\n/private/keys.txt\n/src/app.py"
    assert files(memory, AnthropicTextEditorMiddleware(backend=backend), search) == everything
    # alone it searches its whole backend; memory on another backend does not narrow it
    assert files(search) == everything
    assert (
        files(AnthropicMemoryMiddleware(backend=f"disk:{tmp_path / 'memories'}"), search)
        == everything
    )
    # given, its own prefixes win
    given = AnthropicFileSearchMiddleware(backend=backend, allowed_path_prefixes=["/src"])
    assert files(memory, given) == "/src/app.py"
    nested = ["/src", "/memories", "/memories/notes.md"]  # any order, nested: each file once
    agent = make_agent(
        [ai("", call("grep_search", "g", pattern="the")), "done"],
        middleware=[AnthropicFileSearchMiddleware(backend=backend, allowed_path_prefixes=nested)],
    )
    assert tool_answers(agent.invoke("go").messages)["g"].content == (
        "/memories/notes.md\n/src/app.py"
    )
    whole = AnthropicFileSearchMiddleware(backend=backend, allowed_path_prefixes=["/"])
    assert files(memory, whole) == everything


def test_an_include_with_too_many_alternatives_is_refused(make_agent: Any) -> None:
    # each {a,b} doubles what include stands for: 31 of them were 2**31 patterns, built in
    # memory before one file was read
    include = "*.{py,md}" + "{a,b}" * 30
    result = search(make_agent, call("grep_search", "many", pattern="x", include=include))
    got = tool_answers(result.messages)["many"]
    assert got.status == "error"
    assert got.content == (
        f"Error: include {include!r} stands for more than 256 patterns; "
        "use fewer {...} alternatives"
    )
