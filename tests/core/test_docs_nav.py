"""The site's ``nav`` (mkdocs.yml) never fails the build when pages come and go
(docs/_hooks/nav_pages.py): a listed page that is missing is left out, a page not listed is
added to its folder's section or under *More*."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("nav_pages", REPO / "docs/_hooks/nav_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_pages_are_dropped_and_new_ones_added(tmp_path: Path) -> None:
    for page in ("index.md", "tools.md", "serving.md", "middleware/a.md", "middleware/c.md"):
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text("# page\n")
    (tmp_path / "_hooks").mkdir()
    (tmp_path / "_hooks" / "notes.md").write_text("# not a page\n")
    nav = [
        "index.md",
        {"Guide": ["tools.md", "from-langchain.md"]},
        {"Middleware": ["middleware/c.md", "middleware/b.md"]},
    ]
    config = _hook().on_config({"nav": nav, "docs_dir": str(tmp_path)})
    assert config["nav"] == [
        "index.md",
        {"Guide": ["tools.md"]},
        {"Middleware": ["middleware/a.md", "middleware/c.md"]},
        {"More": ["serving.md"]},
    ]


def test_the_sites_nav_names_pages_that_exist() -> None:
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    block = text.split("\nnav:\n", 1)[1].split("\n\n", 1)[0]
    listed = set(re.findall(r"^\s*- (?:[^:\n]+: )?([\w/.-]+\.md)\s*$", block, re.MULTILINE))
    docs = REPO / "docs"
    pages = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md") if "_hooks" not in p.parts}
    assert listed <= pages
    assert {"index.md", "security.md", "middleware/pii.md"} <= listed
