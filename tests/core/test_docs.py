"""The docs cannot drift from the code: every hook in ``plait.hookspecs`` and each of its
arguments has its place in ``docs/hooks.md``, as the site renders it from the specs'
docstrings (datasette's ``test_docs.py`` idea)."""

from __future__ import annotations

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


@pytest.mark.parametrize(("name", "ep"), _built_in_middleware())
def test_every_built_in_middleware_has_a_page_naming_its_options(name: str, ep: object) -> None:
    from plait.options import describe_options

    page = DOCS / "middleware" / f"{name}.md"
    assert page.exists(), f"docs/middleware/{name}.md is missing"
    text = page.read_text(encoding="utf-8")
    generated = "<!-- plait-options:" in text
    for option in describe_options(ep.load()):  # type: ignore[attr-defined]
        assert generated or f"`{option.name}`" in text, (
            f"docs/middleware/{name}.md does not mention option `{option.name}`"
        )


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
        "| `mode` | `str` | `'a\\|b'` | How to stop. |",
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
