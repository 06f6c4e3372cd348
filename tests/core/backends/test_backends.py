"""``plait.backends`` without an agent: the path guard, numbered lines, every operation on
each backend, composite routing, and DiskBackend confinement (nothing outside root)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import plait
import plait.testing
from plait.backends import (
    FILES,
    FILES_FIELD,
    BackendError,
    CompositeBackend,
    DiskBackend,
    FileSystem,
    StateBackend,
    StoreBackend,
    check_path,
    format_lines,
    merge_files,
    text_lines,
    text_size,
)
from plait.errors import ConfigError, PlaitError
from plait.messages import ToolCall
from plait.persistence import SQLiteStore
from plait.store import MemoryStore
from plait.types import Runtime, ToolRuntime


def runtime(state: dict[str, Any] | None = None, store: Any = None) -> ToolRuntime:
    return ToolRuntime(
        tool_call=ToolCall("t", {}, "c1"),
        state=state or {},
        runtime=Runtime(thread_id="t", run_id="r", store=store),
    )


class StateFS:
    """A StateBackend whose updates are applied after each call, as the loop would."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {FILES: {}}

    def fs(self) -> FileSystem:
        return StateBackend().bind(runtime(self.state))

    def __getattr__(self, name: str) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            result = getattr(self.fs(), name)(*args, **kwargs)
            update = getattr(result, "files_update", None)
            if update is not None:
                self.state[FILES] = merge_files(self.state[FILES], update)
            return result

        return run


@pytest.fixture(params=["state", "store", "sqlite-store", "disk", "composite"])
def fs(request: Any, tmp_path: Path) -> Any:
    kind = request.param
    if kind == "state":
        return StateFS()
    if kind == "store":
        return StoreBackend().bind(runtime(store=MemoryStore()))
    if kind == "sqlite-store":
        return StoreBackend(("u", "1")).bind(runtime(store=SQLiteStore(str(tmp_path / "s.db"))))
    if kind == "disk":
        root = tmp_path / "root"
        root.mkdir()
        return DiskBackend(root).bind(runtime())
    backend = CompositeBackend(StoreBackend(), {"/other/": StoreBackend(("other",))})
    return backend.bind(runtime(store=MemoryStore()))


# -- the path guard --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("notes.txt", "must be absolute"),
        ("", "must be absolute"),
        ("/a/../b", "'..' segments"),
        ("/..", "'..' segments"),
        ("/a\x00b", "NUL"),
        ("/a\\b", "separator"),
        ("C:\\x", "separator"),
        ("C:/x", "drive letter"),
        ("/" + "x" * 256, "longer than 255 bytes"),
        ("/" + "/".join(["abcdefgh"] * 500), "longer than 4096 bytes"),
        ("/a\nb", "control character"),
    ],
)
def test_the_path_guard_refuses_with_the_path_and_rule(path: str, rule: str) -> None:
    with pytest.raises(BackendError, match="invalid path") as caught:
        check_path(path)
    assert rule in str(caught.value)
    assert isinstance(caught.value, PlaitError)


@pytest.mark.parametrize(
    ("path", "norm"), [("/", "/"), ("//a//b/", "/a/b"), ("/a/./b", "/a/b"), ("/é.md", "/é.md")]
)
def test_the_path_guard_normalises(path: str, norm: str) -> None:
    assert check_path(path) == norm


@given(st.text(max_size=80))
def test_any_accepted_path_is_absolute_normal_and_free_of_escapes(path: str) -> None:
    try:
        norm = check_path(path)
    except BackendError:
        return
    assert norm.startswith("/") and "\x00" not in norm and "\\" not in norm
    parts = norm.split("/")[1:]
    assert ".." not in parts and "." not in parts
    assert norm == "/" or "" not in parts
    assert check_path(norm) == norm


# -- numbered lines --------------------------------------------------------------------


def test_format_lines_numbers_pages_and_marks_cut_lines() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 11)) + "\n" + "x" * 30
    assert format_lines("a\nb") == "     1\ta\n     2\tb"
    page = format_lines(text, offset=2, limit=3, path="/f")
    assert page.splitlines()[:3] == ["     3\tline 3", "     4\tline 4", "     5\tline 5"]
    assert "[6 more lines: read with offset=5]" in page
    cut = format_lines(text, offset=10, max_line_length=10)
    assert cut == "    11\txxxxxxxxxx... [line truncated: 20 more characters]"
    with pytest.raises(BackendError, match="offset 11 is past the end of /f, which has 11 lines"):
        format_lines(text, offset=11, path="/f")
    assert "is empty" in format_lines("", path="/f")


_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@given(
    st.lists(st.sampled_from(["a", "é", "\ud800", "😀", *_BREAKS, "\r\n"]), max_size=60).map(
        "".join
    ),
    st.booleans(),
)
def test_text_lines_and_size_agree_with_splitlines_and_encode(text: str, long: bool) -> None:
    if long:  # past the size where lines are found one at a time
        text = text + "x" * (1 << 20) + text
    assert list(text_lines(text)) == text.splitlines()
    assert text_size(text) == len(text.encode("utf-8", "surrogatepass"))


def test_every_backend_tells_a_files_size_without_reading_it(fs: Any) -> None:
    fs.write("/a.txt", "héllo\n")
    assert fs.size("/a.txt") == 7
    assert fs.size("/nope.txt") is None
    fs.write("/d/b.txt", "x")
    assert fs.size("/d") is None


# -- every backend ------------------------------------------------------------------------


def test_write_read_ls_on_every_backend(fs: Any) -> None:
    assert fs.write("/docs/a.md", "hello\nworld\n").path == "/docs/a.md"
    fs.write("/top.txt", "top")
    assert fs.read("/docs/a.md") == "     1\thello\n     2\tworld"
    assert fs.read("/docs/a.md", offset=1, limit=1) == "     2\tworld"
    assert fs.read_text("/docs/a.md") == "hello\nworld\n"
    listing = [(e.path, e.is_dir) for e in fs.ls("/")]
    assert ("/docs/", True) in listing and ("/top.txt", False) in listing
    assert [e.path for e in fs.ls("/docs")] == ["/docs/a.md"]
    with pytest.raises(BackendError, match="already exists; use edit_file"):
        fs.write("/docs/a.md", "again")
    with pytest.raises(BackendError, match=r"file /nope\.md not found"):
        fs.read("/nope.md")
    with pytest.raises(BackendError, match="past the end"):
        fs.read("/docs/a.md", offset=5)


def test_edit_on_every_backend(fs: Any) -> None:
    fs.write("/f.py", "x = 1\ny = 1\n")
    with pytest.raises(BackendError, match=r"occurs 2 times in /f\.py"):
        fs.edit("/f.py", "= 1", "= 2")
    with pytest.raises(BackendError, match=r"old_string not found in /f\.py"):
        fs.edit("/f.py", "z = 1", "z = 2")
    assert fs.edit("/f.py", "x = 1", "x = 3").count == 1
    assert fs.read_text("/f.py") == "x = 3\ny = 1\n"
    assert fs.edit("/f.py", "= ", "=", replace_all=True).count == 2
    assert fs.read_text("/f.py") == "x =3\ny =1\n"
    with pytest.raises(BackendError, match="not found"):
        fs.edit("/missing.py", "a", "b")


def test_glob_grep_delete_rename_on_every_backend(fs: Any) -> None:
    fs.write("/src/a.py", "import os\nprint('TODO')\n")
    fs.write("/src/pkg/b.py", "# TODO: (x)\n")
    fs.write("/notes.md", "TODO list\n")
    assert [i.path for i in fs.glob("**/*.py")] == ["/src/a.py", "/src/pkg/b.py"]
    assert [i.path for i in fs.glob("*.py", "/src")] == ["/src/a.py"]
    assert [i.path for i in fs.glob("/src/*/*.py")] == ["/src/pkg/b.py"]
    hits = fs.grep("TODO")
    assert [(h.path, h.line) for h in hits] == [
        ("/notes.md", 1),
        ("/src/a.py", 2),
        ("/src/pkg/b.py", 1),
    ]
    # Literal, not a regular expression.
    assert [(h.path, h.text) for h in fs.grep("(x)")] == [("/src/pkg/b.py", "# TODO: (x)")]
    assert [h.path for h in fs.grep("TODO", glob="*.py")] == ["/src/a.py", "/src/pkg/b.py"]
    assert [h.path for h in fs.grep("TODO", path="/src/pkg")] == ["/src/pkg/b.py"]
    fs.rename("/notes.md", "/archive/notes.md")
    assert fs.read_text("/archive/notes.md") == "TODO list\n"
    with pytest.raises(BackendError, match="not found"):
        fs.read_text("/notes.md")
    with pytest.raises(BackendError, match="already exists"):
        fs.rename("/src/a.py", "/archive/notes.md")
    fs.rename("/src", "/lib")
    assert [i.path for i in fs.glob("**")] == ["/archive/notes.md", "/lib/a.py", "/lib/pkg/b.py"]
    fs.delete("/lib")
    fs.delete("/archive/notes.md")
    assert fs.glob("**") == []
    with pytest.raises(BackendError, match="not found"):
        fs.delete("/lib")


def test_glob_under_a_file_path_finds_that_file_on_every_backend(fs: Any) -> None:
    # the path given is a file: it is the one file under it, as is_under(path, path) says,
    # at the relative path "" (so "**/*" and "*" match it, "*.py" does not)
    fs.write("/a/file.txt", "x\n")
    fs.write("/a/other.txt", "y\n")
    assert [i.path for i in fs.glob("**/*", "/a/file.txt")] == ["/a/file.txt"]
    assert [i.path for i in fs.glob("**", "/a/file.txt")] == ["/a/file.txt"]
    assert [i.path for i in fs.glob("/a/*.txt", "/a/file.txt")] == ["/a/file.txt"]
    assert fs.glob("*.py", "/a/file.txt") == []
    assert fs.glob("**/*", "/a/file.txt/below") == []
    assert fs.glob("**/*", "/a/missing.txt") == []
    assert fs.glob("**/*", "/missing/deeper") == []


def test_a_glob_pattern_that_would_backtrack_without_end_is_matched_at_once_on_every_backend(
    fs: Any,
) -> None:
    # glob patterns come from the model (glob, grep's glob, glob_search, include): as a
    # backtracking regex, '**/' x 12 on a 30-deep path or '*a' x 8 + 'b' on a long name
    # ran for minutes to hours, holding the GIL
    deep = "/" + "a/" * 30 + "y.txt"
    long = "/" + "a" * 200
    fs.write(deep, "x\n")
    fs.write(long, "x\n")
    found: list[Any] = []

    def search() -> None:
        found.append([i.path for i in fs.glob("**/" * 12 + "x")])
        found.append([i.path for i in fs.glob("*a" * 8 + "b")])
        found.append([i.path for i in fs.glob("/**" * 8 + "b")])
        found.append([h.path for h in fs.grep("x", glob="*a" * 8 + "b")])
        found.append([i.path for i in fs.glob("**/" * 12 + "*.txt")])
        found.append([i.path for i in fs.glob("*a" * 8)])

    worker = threading.Thread(target=search, daemon=True)
    worker.start()
    worker.join(60)  # generous: each is a few milliseconds; as a backtracking regex, hours
    assert not worker.is_alive(), "a glob pattern backtracked"
    assert found == [[], [], [], [], [deep], [long]]


def test_glob_patterns_keep_their_meaning_on_every_backend(fs: Any) -> None:
    for path in ["/a.py", "/src/b.py", "/src/x/c.py", "/src/x/y/d.md", "/.hidden", "/[a].txt"]:
        fs.write(path, "x\n")

    def paths(pattern: str, path: str = "/") -> list[str]:
        return [i.path for i in fs.glob(pattern, path)]

    assert paths("*.py") == ["/a.py"]
    assert paths("**/*.py") == ["/a.py", "/src/b.py", "/src/x/c.py"]
    assert paths("src/**/*.py") == ["/src/b.py", "/src/x/c.py"]
    assert paths("src/**") == ["/src/b.py", "/src/x/c.py", "/src/x/y/d.md"]
    assert paths("**/x/**/*") == ["/src/x/c.py", "/src/x/y/d.md"]
    assert paths("/src/*/?.py") == ["/src/x/c.py"]
    assert paths("*/[!b].py") == []
    assert paths("**/[bc].py") == ["/src/b.py", "/src/x/c.py"]
    assert paths("[[]a].txt") == ["/[a].txt"]
    assert paths("*", "/src/x") == ["/src/x/c.py"]
    assert paths(".*") == ["/.hidden"]
    assert paths("**") == sorted(paths("**/*"))
    assert paths("[z-a].py") == []  # a reversed range matches nothing, it is no error
    assert [h.path for h in fs.grep("x", glob="*.md")] == ["/src/x/y/d.md"]
    assert [h.path for h in fs.grep("x", path="/src", glob="x/*.py")] == ["/src/x/c.py"]


def test_state_backend_returns_updates_and_changes_nothing_itself() -> None:
    state = {FILES: {"/old.txt": {"content": "x", "created_at": "t", "modified_at": "t"}}}
    fs = StateBackend().bind(runtime(state))
    result = fs.write("/new.txt", "n")
    assert result.files_update is not None and result.files_update["/new.txt"]["content"] == "n"
    assert fs.delete("/old.txt").files_update == {"/old.txt": None}
    assert set(state[FILES]) == {"/old.txt"}


def test_the_files_reducer_merges_by_path_and_none_deletes() -> None:
    a, b = {"content": "a"}, {"content": "b"}
    assert merge_files({"/a": a}, {"/b": b}) == {"/a": a, "/b": b}
    assert merge_files({"/a": a, "/b": b}, {"/a": None}) == {"/b": b}
    assert merge_files(None, {"/a": a}) == {"/a": a}
    assert FILES_FIELD.shared and FILES_FIELD.scope == "thread" and FILES_FIELD.default == {}


def test_store_backend_without_a_store_says_so() -> None:
    with pytest.raises(BackendError, match="StoreBackend needs a store"):
        StoreBackend().bind(runtime())


def test_store_backend_namespaces_are_separate() -> None:
    store = MemoryStore()
    StoreBackend(("a",)).bind(runtime(store=store)).write("/f", "in a")
    assert StoreBackend(("a", "b")).bind(runtime(store=store)).glob("**") == []
    assert store.get(("a",), "/f") is not None


def test_composite_routes_by_longest_prefix_and_lists_routes() -> None:
    store = MemoryStore()
    mem, deep = StoreBackend(("mem",)), StoreBackend(("deep",))
    backend = CompositeBackend(StateBackend(), {"/memories/": mem, "/memories/deep/": deep})
    fs = backend.bind(runtime({FILES: {}}, store=store))
    assert fs.write("/memories/a.md", "A").files_update is None
    fs.write("/memories/deep/b.md", "B")
    local = fs.write("/local.txt", "L")
    assert local.files_update is not None and set(local.files_update) == {"/local.txt"}
    # The route backends see paths with the prefix stripped.
    assert store.get(("mem",), "/a.md") is not None
    assert store.get(("deep",), "/b.md") is not None
    assert [(e.path, e.is_dir) for e in fs.ls("/")] == [("/local.txt", False), ("/memories/", True)]
    assert [e.path for e in fs.ls("/memories")] == ["/memories/a.md", "/memories/deep/"]
    assert [i.path for i in fs.glob("**/*.md")] == ["/memories/a.md", "/memories/deep/b.md"]
    assert [h.path for h in fs.grep("B")] == ["/memories/deep/b.md"]


def test_composite_rename_across_backends_copies_then_deletes() -> None:
    store = MemoryStore()
    backend = CompositeBackend(StateBackend(), {"/memories/": StoreBackend()})
    state: dict[str, Any] = {FILES: {}}
    fs = backend.bind(runtime(state, store=store))
    state[FILES] = merge_files(state[FILES], fs.write("/draft.md", "keep me").files_update)
    fs = backend.bind(runtime(state, store=store))
    result = fs.rename("/draft.md", "/memories/kept.md")
    assert result.files_update == {"/draft.md": None}
    assert store.get(("filesystem",), "/kept.md").value["content"] == "keep me"  # type: ignore[union-attr]


def test_composite_state_route_updates_carry_the_prefix() -> None:
    backend = CompositeBackend(StoreBackend(), {"/scratch/": StateBackend()})
    fs = backend.bind(runtime({FILES: {}}, store=MemoryStore()))
    update = fs.write("/scratch/x.txt", "x").files_update
    assert update is not None and set(update) == {"/scratch/x.txt"}


def test_composite_errors_name_the_callers_path(tmp_path: Path) -> None:
    """A routed backend sees ``/a.md`` for ``/memories/a.md``; its errors, which the model
    reads, said ``file /a.md not found`` and sent it looking at the root."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "f.txt").write_text("")
    (tmp_path / "out").symlink_to("/etc")
    backend = CompositeBackend(
        StateBackend(), {"/memories/": StoreBackend(), "/disk/": DiskBackend(tmp_path)}
    )
    fs = backend.bind(runtime({FILES: {}}, store=MemoryStore()))

    def error(operation: str, *args: Any) -> str:
        with pytest.raises(BackendError) as info:
            getattr(fs, operation)(*args)
        return str(info.value)

    assert error("read", "/memories/nope.md") == "Error: file /memories/nope.md not found"
    assert error("read_text", "/disk/sub") == "Error: /disk/sub is a directory; use ls to list it"
    assert error("read", "/disk/out/passwd") == (
        "Error: invalid path '/disk/out/passwd': it resolves outside the backend's root "
        "(through a symbolic link)"
    )
    assert error("write", "/disk/f.txt/y", "x") == (
        "Error: cannot write /disk/f.txt/y: a part of it is a file"
    )
    assert error("edit", "/disk/f.txt", "q", "r").startswith(
        "Error: old_string not found in /disk/f.txt;"
    )
    assert error("delete", "/disk/nope") == "Error: /disk/nope not found"
    assert error("rename", "/disk/f.txt", "/disk/sub") == "Error: /disk/sub already exists"
    assert error("ls", "/disk/nope") == "Error: directory /disk/nope not found"
    assert fs.read("/disk/f.txt") == "(the file /disk/f.txt is empty)"


# -- DiskBackend confinement ----------------------------------------------------------


@pytest.fixture
def disk(tmp_path: Path) -> tuple[Any, Path, Path]:
    root, sibling = tmp_path / "root", tmp_path / "sibling"
    root.mkdir()
    sibling.mkdir()
    (sibling / "secret.txt").write_text("secret")
    return DiskBackend(root).bind(runtime()), root, sibling


def snapshot(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): p.read_text() for p in directory.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("/../sibling/evil.txt", "'..' segments"),
        ("/a/../../sibling/evil.txt", "'..' segments"),
        ("../sibling/evil.txt", "must be absolute"),
        ("/bad\x00.txt", "NUL"),
        ("/" + "n" * 300, "longer than 255"),
        ("\\sibling\\evil.txt", "separator"),
        ("C:\\sibling\\evil.txt", "separator"),
        ("/link_dir/evil.txt", "resolves outside"),
        ("/link_file", "resolves outside"),
    ],
)
def test_disk_refuses_escapes_and_touches_nothing_outside(
    disk: tuple[Any, Path, Path], path: str, rule: str
) -> None:
    fs, root, sibling = disk
    os.symlink(sibling, root / "link_dir")
    os.symlink(sibling / "secret.txt", root / "link_file")
    before = snapshot(sibling)
    for attempt in (
        lambda: fs.write(path, "pwned"),
        lambda: fs.edit(path, "secret", "pwned"),
        lambda: fs.read(path),
        lambda: fs.delete(path),
        lambda: fs.rename(path, "/inside.txt"),
        lambda: fs.rename("/", path),
    ):
        with pytest.raises(BackendError) as caught:
            attempt()
        assert "Error:" in str(caught.value)
    with pytest.raises(BackendError, match=rule):
        fs.write(path, "pwned")
    assert snapshot(sibling) == before
    assert sorted(os.listdir(sibling)) == ["secret.txt"]
    assert not (root.parent / "evil.txt").exists()


def test_disk_absolute_paths_are_inside_root(disk: tuple[Any, Path, Path]) -> None:
    fs, root, sibling = disk
    fs.write(str(sibling / "x.txt"), "x")
    assert (root / str(sibling).lstrip("/") / "x.txt").read_text() == "x"
    assert sorted(os.listdir(sibling)) == ["secret.txt"]


def test_disk_skips_links_outside_root_when_listing(disk: tuple[Any, Path, Path]) -> None:
    fs, root, sibling = disk
    os.symlink(sibling, root / "link_dir")
    os.symlink(sibling / "secret.txt", root / "link_file")
    (root / "inner.txt").write_text("inner secret")
    assert [e.path for e in fs.ls("/")] == ["/inner.txt"]
    assert [i.path for i in fs.glob("**")] == ["/inner.txt"]
    assert [h.path for h in fs.grep("secret")] == ["/inner.txt"]


def test_disk_root_must_exist() -> None:
    missing = "/no/such/dir"
    with pytest.raises(ValueError) as info:
        DiskBackend(missing)
    assert str(info.value) == f"DiskBackend root: expected an existing directory, got {missing!r}"
    with pytest.raises(ConfigError) as error:
        plait.create_agent(
            plait.testing.scripted("hi"),
            middleware=[("filesystem", {"backend": f"disk:{missing}"})],
        )
    assert str(error.value) == (
        "plugin 'filesystem': option 'backend': DiskBackend root: expected an existing "
        f"directory, got {missing!r}"
    )


def test_disk_follows_links_that_stay_inside_root(disk: tuple[Any, Path, Path]) -> None:
    fs, root, _ = disk
    (root / "real").mkdir()
    (root / "real" / "a.txt").write_text("a\n")
    os.symlink(root / "real" / "a.txt", root / "alias.txt")
    os.symlink(root / "real", root / "alias_dir")
    assert fs.read("/alias.txt") == "     1\ta"
    fs.edit("/alias.txt", "a", "b")
    assert (root / "real" / "a.txt").read_text() == "b\n"
    fs.write("/alias_dir/new.txt", "n")
    assert (root / "real" / "new.txt").read_text() == "n"
    fs.delete("/alias.txt")
    assert not (root / "alias.txt").exists() and (root / "real" / "a.txt").exists()


def test_a_file_name_that_is_not_utf8_is_a_path_like_any_other(tmp_path: Path) -> None:
    """A Latin-1 name on disk reads back as a lone surrogate (Python's file-name
    convention); every operation takes it, instead of a raw UnicodeEncodeError."""
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"hello\n")
    fs = DiskBackend(tmp_path).bind(runtime())
    assert check_path("/caf\udce9.txt") == "/caf\udce9.txt"
    (entry,) = fs.ls("/")
    assert entry.path == "/caf\udce9.txt" and entry.size == 6
    assert fs.read(entry.path) == "     1\thello"
    assert fs.size(entry.path) == 6
    assert [m.path for m in fs.grep("hello")] == ["/caf\udce9.txt"]
    fs.rename(entry.path, "/d\udce9j\udce0.txt")
    assert os.listdir(tmp_path.as_posix().encode()) == [b"d\xe9j\xe0.txt"]
    fs.delete("/d\udce9j\udce0.txt")
    assert os.listdir(tmp_path) == []
    state = StateBackend().bind(runtime())
    assert state.write("/caf\udce9.txt", "x").path == "/caf\udce9.txt"
