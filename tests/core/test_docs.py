"""The docs cannot drift from the code: every hook in ``plait.hookspecs`` and each of its
arguments has its place in ``docs/hooks.md``, as the site renders it from the specs'
docstrings (datasette's ``test_docs.py`` idea)."""

from __future__ import annotations

import enum
import functools
import importlib
import importlib.util
import inspect
import re
import types
from pathlib import Path

import pytest

from plait import hookspecs

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _sections(text: str) -> dict[str, str]:
    """Each ``### `hook(args)` `` heading's hook name → the text of its section."""
    found: dict[str, str] = {}
    parts = re.split(r"^### `([a-z_]+)\(([^)]*)\)`\s*$", text, flags=re.MULTILINE)
    for index in range(1, len(parts), 3):
        name, args, body = parts[index], parts[index + 1], parts[index + 2]
        found[name] = f"({args})\n{body}"
    return found


@functools.cache
def _docs_hook() -> types.ModuleType:
    """``docs/_hooks/plait_docs.py``, the mkdocs hook that renders generated parts."""
    spec = importlib.util.spec_from_file_location("plait_docs", DOCS / "_hooks/plait_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _render(markdown: str) -> str:
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_path="x.md"))
    rendered: str = _docs_hook().on_page_markdown(markdown, page=page)
    return rendered


HOOKS_MD = (DOCS / "hooks.md").read_text(encoding="utf-8")
SECTIONS = _sections(_render(HOOKS_MD))


@pytest.mark.parametrize("hook", hookspecs.ALL_HOOKS)
def test_every_hook_has_a_heading(hook: str) -> None:
    assert hook in SECTIONS, f"docs/hooks.md has no '### `{hook}(...)`' heading"


@pytest.mark.parametrize("hook", hookspecs.ALL_HOOKS)
def test_every_argument_is_in_the_heading_and_described(hook: str) -> None:
    spec = getattr(hookspecs, hook)
    params = list(inspect.signature(spec).parameters)
    section = SECTIONS.get(hook, "")
    heading, _, body = section.partition("\n")
    assert heading == f"({', '.join(params)})", f"{hook}: heading lists {heading}"
    for param in params:
        assert f"- `{param}`:" in body, f"docs/hooks.md: {hook} does not describe `{param}`"
    assert "Returns:" in body, f"docs/hooks.md: {hook} does not say what it returns"


def test_no_heading_for_a_hook_that_does_not_exist() -> None:
    assert set(SECTIONS) <= set(hookspecs.ALL_HOOKS)


def test_the_hook_reference_is_the_specs_docstrings_word_for_word() -> None:
    for hook in hookspecs.ALL_HOOKS:
        doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
        first = doc.split("\n\n")[0].replace("``", "`").replace("\n", " ")
        assert first in SECTIONS[hook].replace("\n", " "), hook
    assert "<!-- plait-hook" not in _render(HOOKS_MD)
    assert "### `" not in HOOKS_MD, "docs/hooks.md writes a hook's entry by hand"


def test_a_hook_marker_naming_no_hook_is_left_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    out = _render("<!-- plait-hook: before_modle -->\n")
    assert out == "<!-- plait-hook: before_modle -->\n"
    assert "cannot document hook before_modle" in caplog.text


def test_hooks_are_documented_in_loop_order() -> None:
    order = [name for name in SECTIONS]
    spec_order = [
        name
        for name, _ in sorted(
            ((n, inspect.getsourcelines(getattr(hookspecs, n))[1]) for n in hookspecs.ALL_HOOKS),
            key=lambda item: item[1],
        )
    ]
    assert order == spec_order


# -- one page per built-in middleware, naming every option ---------------------------------

PLUGINS = DOCS.parent / "plugins"


def _built_in_middleware() -> list[tuple[str, object]]:
    """The ``plait.middleware`` entry points of the distributions under ``plugins/``."""
    import tomllib
    from importlib.metadata import entry_points

    ours = set()
    for pyproject in PLUGINS.glob("*/pyproject.toml"):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        ours.update(project.get("entry-points", {}).get("plait.middleware", {}))
    return [(ep.name, ep) for ep in entry_points(group="plait.middleware") if ep.name in ours]


_OPTIONS_MARKER = re.compile(r"^<!--\s*plait-options:\s*([\w.]+):([\w.]+)\s*-->[ \t]*$", re.M)
# The header of a table of options or keys, or of fields with their defaults, written by
# hand instead of generated.
_HAND_TABLE = re.compile(r"^\|\s*(?:(?:option|key)s?\s*\||fields?\s*\|\s*default\s*\|)", re.M)


def _resolve(module: str, qualname: str) -> object:
    obj: object = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize(("name", "ep"), _built_in_middleware())
def test_every_built_in_middleware_page_renders_its_options_from_the_class(
    name: str, ep: object
) -> None:
    page = DOCS / "middleware" / f"{name}.md"
    assert page.exists(), f"docs/middleware/{name}.md is missing"
    text = page.read_text(encoding="utf-8")
    named = [_resolve(*m.groups()) for m in _OPTIONS_MARKER.finditer(text)]
    assert ep.load() in named, (  # type: ignore[attr-defined]
        f"docs/middleware/{name}.md has no '<!-- plait-options: {ep.value} -->' line"  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("page", sorted((DOCS / "middleware").glob("*.md")), ids=lambda p: p.stem)
def test_no_middleware_page_writes_an_options_table_by_hand(page: Path) -> None:
    hand = _HAND_TABLE.search(page.read_text(encoding="utf-8"))
    assert hand is None, (
        f"docs/middleware/{page.name} writes an options table by hand ({hand and hand.group(0)!r}):"
        " use a '<!-- plait-options: module:Class -->' line"
    )


def _marked_pages() -> list[tuple[str, str, str]]:
    return [
        (str(page.relative_to(DOCS)), *match.groups())
        for page in sorted(DOCS.rglob("*.md"))
        for match in _OPTIONS_MARKER.finditer(page.read_text(encoding="utf-8"))
    ]


def _cells(row: str) -> list[str]:
    """A table row's cells as Python-Markdown splits them: at pipes that are neither escaped
    nor inside a code span."""
    cells, current = [], ""
    for part in re.split(r"(``.*?``|`[^`]*`)", row.strip().strip("|")):
        if part.startswith("`"):
            current += part
            continue
        pieces = re.split(r"(?<!\\)\|", part)
        current += pieces[0]
        for piece in pieces[1:]:
            cells.append(current.strip())
            current = piece
    return [*cells, current.strip()]


def _table_default(cell: str) -> str:
    assert cell.startswith("`") and cell.endswith("`"), cell
    return cell.strip("`").strip(" ") if cell.startswith("``") else cell[1:-1]


def _default_block(rendered: str, option: str) -> str:
    head = f'??? note "Default `{option}`"\n\n    ```text\n'
    assert head in rendered, f"no block for the default of {option}"
    body = rendered.split(head, 1)[1].split("\n    ```", 1)[0]
    return "\n".join(line.removeprefix("    ") for line in body.split("\n"))


def _assert_shown_default(shown: str, rendered: str, option: str, default: object) -> None:
    """``shown`` (a table cell) stands for the class's actual ``default`` value."""
    import ast

    if shown == "built-in text, below":
        assert isinstance(default, str)
        assert _default_block(rendered, option) == "\n".join(default.splitlines())
        return
    text = _table_default(shown)
    if isinstance(default, enum.Enum):
        default = default.value
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if callable(default) and ":" in text:
            assert _resolve(*text.split(":", 1)) is default, (option, text)
        else:
            assert text == repr(default), (option, text)
        return
    assert value == default and type(value) is type(default), (option, text, default)


@pytest.mark.parametrize(("page", "module", "qualname"), _marked_pages())
def test_an_options_marker_names_a_class_and_shows_its_defaults(
    page: str, module: str, qualname: str
) -> None:
    import attrs

    try:
        cls = _resolve(module, qualname)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"docs/{page}: the options marker names {module}:{qualname}: {exc}")
    assert isinstance(cls, type) and attrs.has(cls), f"docs/{page}: {qualname} is no attrs class"
    rendered = _render(f"<!-- plait-options: {module}:{qualname} -->\n")
    rows = {
        cells[0].strip("`"): cells
        for cells in (_cells(row) for row in rendered.splitlines() if row.startswith("| `"))
    }
    for field in attrs.fields(cls):
        if not field.init:
            continue
        assert field.name in rows, f"docs/{page}: {qualname}.{field.name} is not in its table"
        shown = rows[field.name][2]
        if field.default is attrs.NOTHING:
            assert shown == "required", (field.name, shown)
            continue
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            if default.takes_self:
                continue
            default = default.factory()
        _assert_shown_default(shown, rendered, field.name, default)


# -- the mkdocs hook that generates options tables -------------------------------------------


def test_options_marker_becomes_a_table_from_the_attrs_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util
    import types

    (tmp_path / "docs_demo_mw.py").write_text(
        "import attrs\n\n"
        "@attrs.frozen\n"
        "class DemoMiddleware:\n"
        "    limit: int\n"
        "    mode: str = 'a|b'\n"
        '    """How to stop."""\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location("options_hook", DOCS / "_hooks/plait_docs.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_path="x.md"))
    markdown = (
        "Intro `<!-- plait-options: a:B -->` stays.\n\n"
        "<!-- plait-options: docs_demo_mw:DemoMiddleware -->\n"
    )
    out = hook.on_page_markdown(markdown, page=page)
    assert out.splitlines() == [
        "Intro `<!-- plait-options: a:B -->` stays.",
        "",
        "| option | type | default | meaning |",
        "|---|---|---|---|",
        "| `limit` | `int` | required |  |",
        "| `mode` | `str` | `'a|b'` | How to stop. |",
    ]


def test_api_marker_becomes_signature_and_docstring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util
    import types

    (tmp_path / "docs_demo_api.py").write_text(
        "from __future__ import annotations\n\n"
        "def greet(name: str, *, loud: bool = False) -> str:\n"
        '    """Say hello.\n\n'
        "    :param name: who to greet, e.g. ``Ada``.\n"
        "    :param loud: shout it.\n"
        '    """\n'
        "    return name\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location("api_hook", DOCS / "_hooks/plait_docs.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_path="x.md"))
    out = hook.on_page_markdown("<!-- plait-api: docs_demo_api:greet -->\n", page=page)
    assert "def greet(name: str, *, loud: bool = False) -> str" in out
    assert "- `name`: who to greet, e.g. `Ada`." in out
    assert "- `loud`: shout it." in out


def test_api_marker_on_a_constant_shows_its_value_and_docstring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docs_demo_const.py").write_text(
        'MODES = frozenset({"b", "a"})\n"""The ``modes`` a run streams."""\n'
    )
    (tmp_path / "docs_demo_reexport.py").write_text("from docs_demo_const import MODES\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = _render("<!-- plait-api: docs_demo_reexport:MODES -->\n")
    assert out.splitlines() == [
        "### `MODES`",
        "",
        "```python",
        "MODES = frozenset({'a', 'b'})",
        "```",
        "",
        "From `docs_demo_reexport`.",
        "",
        "The `modes` a run streams.",
    ]


def test_a_type_alias_is_shown_as_its_source_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docs_demo_alias.py").write_text(
        "from collections.abc import Callable\n"
        "from typing import Any, TypeAlias\n\n"
        "Handler = Callable[[Exception, Any], str | None]\n"
        '"""What handles an error."""\n'
        'Update: TypeAlias = "dict[str, Any] | None"\n'
        '"""What a hook returns."""\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    handler = _render("<!-- plait-api: docs_demo_alias:Handler -->\n")
    assert "Handler = Callable[[Exception, Any], str | None]\n" in handler
    assert handler.rstrip().endswith("What handles an error.")
    update = _render("<!-- plait-api: docs_demo_alias:Update -->\n")
    assert "Update = dict[str, Any] | None\n" in update


def test_a_long_constant_is_shown_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A container too wide for a line is one item a line, a long line of text is split in
    parts, and a text of several lines is shown whole in a collapsed block below its
    entry: none is cut."""
    prompt = "## Files\n\nYou have files." + " Use them well." * 10
    (tmp_path / "docs_demo_long_const.py").write_text(
        f"NAMES = {tuple(f'tool_number_{i}' for i in range(8))!r}\n"
        '"""The tools."""\n'
        f"PROMPT = {prompt!r}\n"
        '"""The prompt."""\n'
    )
    (tmp_path / "docs_demo_long_line.py").write_text(f"LINE = {'word ' * 40!r}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    line = _render("<!-- plait-api: docs_demo_long_line:LINE -->\n")
    block = line.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert max(map(len, block.splitlines())) <= _docs_hook().SIGNATURE_WIDTH
    import ast

    assert ast.literal_eval(block.split(" = ", 1)[1]) == "word " * 40
    names = _render("<!-- plait-api: docs_demo_long_const:NAMES -->\n")
    block = names.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert block.splitlines()[0] == "NAMES = ('tool_number_0',"
    assert len(block.splitlines()) == 8
    assert max(map(len, block.splitlines())) <= _docs_hook().SIGNATURE_WIDTH
    text = _render("<!-- plait-api: docs_demo_long_const:PROMPT -->\n")
    assert "PROMPT: str  # the text below" in text
    assert '??? note "The text of `PROMPT`"' in text
    shown = text.split("    ```text\n", 1)[1].split("\n    ```", 1)[0]
    assert "\n".join(line.removeprefix("    ") for line in shown.splitlines()) == prompt


def test_a_long_signature_is_one_parameter_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signature wider than the site's code column is broken as black breaks a ``def``,
    so the API page never clips it (the browser test checks the drawn page)."""
    import importlib.util
    import types

    (tmp_path / "docs_demo_long.py").write_text(
        "from __future__ import annotations\n\n"
        "def build(source: str, /, target: str | None = None, *, retries: int = 3, "
        "timeout_seconds: float | None = None, on_error: str = 'raise') -> dict[str, int]:\n"
        '    """Build it."""\n'
        "    return {}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location("api_hook", DOCS / "_hooks/plait_docs.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_path="x.md"))
    out = hook.on_page_markdown("<!-- plait-api: docs_demo_long:build -->\n", page=page)
    block = out.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert block.splitlines() == [
        "def build(",
        "    source: str,",
        "    /,",
        "    target: str | None = None,",
        "    *,",
        "    retries: int = 3,",
        "    timeout_seconds: float | None = None,",
        "    on_error: str = 'raise',",
        ") -> dict[str, int]",
    ]
    assert max(map(len, block.splitlines())) <= hook.SIGNATURE_WIDTH


# -- every public name is documented -------------------------------------------------------
#
# A public name is one in the ``__all__`` of a module of ``plait`` or of a built-in plugin's
# package (``plugins/*/plait_*``) whose dotted name has no part starting with ``_``. It
# is documented when a page shows its generated API entry with a docstring (a
# ``plait-api`` marker, a ``plait-hook`` marker for a hook) or names it in code: qualified
# (``plait.runlog.cancel_paused_run``, ``from plait.runlog import cancel_paused_run``), or
# as a code span of its own (`cancel_paused_run(...)`) on a page that names, in code, a
# module exporting it. A name exported by several modules (``plait.tool`` and
# ``plait.tools.tool``) is documented once for all.


def _public_modules() -> list[str]:
    import pkgutil

    import plait

    names = ["plait"] + [
        info.name
        for info in pkgutil.walk_packages(plait.__path__, "plait.")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    packages = sorted(init.parent.name for init in PLUGINS.glob("*/plait_*/__init__.py"))
    names += packages
    for package in packages:  # then their public modules (a name both export: the package's)
        path = importlib.import_module(package).__path__
        names += [
            info.name
            for info in pkgutil.walk_packages(path, f"{package}.")
            if not any(part.startswith("_") for part in info.name.split("."))
        ]
    return names


@functools.cache
def _exports() -> list[tuple[str, str, object]]:
    """``(module, name, object)`` for each public name."""
    found = []
    for module in _public_modules():
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", ()):
            found.append((module, name, getattr(mod, name)))
    return found


_PLAIN_VALUES = (str, bytes, int, float, tuple, frozenset, dict, list, type(None))


def _same(a: object, b: object, name_a: str, name_b: str) -> bool:
    """Two exports are one name: the same object (a constant also under the same name,
    as two constants may share a value)."""
    return a is b and (name_a == name_b or not isinstance(a, _PLAIN_VALUES))


def _code(text: str) -> tuple[list[str], list[str]]:
    """A rendered page's fenced blocks and its inline code spans (outside the blocks)."""
    fence = re.compile(r"^[ \t]*(`{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
    blocks = [match.group(2) for match in fence.finditer(text)]
    spans = re.findall(r"`([^`\n]+)`", fence.sub("", text))
    return blocks, spans


def _entry_has_doc(module: str, qualname: str, obj: object) -> bool:
    """Whether the entry the site generates for ``obj`` explains it: some text after its
    signature (a docstring of its own, or a constant's under its assignment)."""
    if inspect.isclass(obj) and not vars(obj).get("__doc__"):
        return False  # the entry would show a base class's docstring
    entry: str = _docs_hook().api_entry(module, qualname, obj)
    return bool(entry.split(f"From `{module}`.", 1)[1].strip())


@functools.cache
def _documentation() -> tuple[list[tuple[str, str, object]], dict[str, tuple[str, str]]]:
    """The API entries pages generate (with a docstring), and each page's code."""
    entries: list[tuple[str, str, object]] = []
    code: dict[str, tuple[str, str]] = {}
    api = re.compile(r"^<!--\s*plait-api:\s*([\w.]+):([\w.]+)\s*-->[ \t]*$", re.M)
    hook = re.compile(r"^<!--\s*plait-hook:\s*(\w+)\s*-->[ \t]*$", re.M)
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for module, qualname in api.findall(text):
            obj = _resolve(module, qualname)
            if _entry_has_doc(module, qualname, obj):
                entries.append((module, qualname.rsplit(".", 1)[-1], obj))
        entries += [
            ("plait.hookspecs", name, getattr(hookspecs, name)) for name in hook.findall(text)
        ]
        blocks, spans = _code(_render(text))
        code[str(page.relative_to(DOCS))] = ("\n".join(blocks), "\n".join(spans))
    return entries, code


def _named_in_code(name: str, modules: set[str], code: dict[str, tuple[str, str]]) -> bool:
    qualified = "|".join(re.escape(module) for module in sorted(modules))
    dotted = re.compile(rf"(?<![\w.])(?:{qualified})\.{name}\b")
    spans_name = re.compile(rf"^(?:[\w.]+\.)?{name}(?:\(.*\)|\[.*\]|\.[\w.()]+)?$")
    module_named = re.compile(rf"(?<![\w.])(?:{qualified})\b")
    for blocks, spans in code.values():
        both = blocks + "\n" + spans
        if dotted.search(both):
            return True
        for statement in re.findall(
            rf"^from (?:{qualified}) import (?:\([^)]*\)|[^\n]*)", blocks, re.M
        ):
            if re.search(rf"\b{name}\b", statement):
                return True
        if module_named.search(both) and any(
            spans_name.match(span.strip()) for span in spans.split("\n")
        ):
            return True
    return False


def _undocumented() -> list[str]:
    exports = _exports()
    entries, code = _documentation()
    missing = []
    for index, (module, name, obj) in enumerate(exports):
        if any(_same(o, obj, n, name) for _, n, o in exports[:index]):
            continue  # named under the module exporting it first
        one = [(m, n) for m, n, o in exports if _same(o, obj, n, name)]
        if any(_same(o, obj, n, name) for _, n, o in entries):
            continue
        if _named_in_code(name, {m for m, _ in one}, code):
            continue
        missing.append(f"{module}.{name}")
    return missing


def test_every_public_name_is_documented() -> None:
    missing = _undocumented()
    assert not missing, (
        f"{len(missing)} public names appear on no docs page (nor in the generated API"
        " reference): " + ", ".join(missing) + ". Add a '<!-- plait-api: module:name -->'"
        " line to the page of its feature or docs/api.md (it needs a docstring: a"
        " constant's is the string under its assignment), or name it in code on a page."
    )


def test_a_public_name_no_page_names_is_reported() -> None:
    """The check above can fail: a name only an unlisted page would document is missing."""
    exports = _exports()
    entries, code = _documentation()
    module, name, obj = next(
        e for e in exports if e[0] == "plait.runlog" and e[1] == "guarded_keys"
    )
    assert any(o is obj for _, _, o in entries) or _named_in_code(name, {module}, code)
    no_code: dict[str, tuple[str, str]] = {}
    assert not _named_in_code(name, {module}, no_code)
    assert _named_in_code(name, {module}, {"x.md": ("", "plait.runlog.guarded_keys")})
    assert _named_in_code(
        name, {module}, {"x.md": ("from plait.runlog import (\n    guarded_keys,\n)", "")}
    )
    assert not _named_in_code(name, {module}, {"x.md": ("", "guarded_keys")})  # no module named
    assert _named_in_code(name, {module}, {"x.md": ("", "plait.runlog\nguarded_keys(agent)")})
