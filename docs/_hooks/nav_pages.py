"""mkdocs hook: the ``nav`` of mkdocs.yml is the order pages are read in, and it never
breaks the build when the pages change.

A page the ``nav`` names that is not in docs/ is left out (a page removed, or one an open
change adds); a page in docs/ the ``nav`` does not name is added at the end of the
section of its folder (a new middleware page under *Middleware*), else under *More*, so
a new page is in the sidebar as soon as it is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _listed(items: list[Any], exists: set[str], seen: set[str]) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                kept.append({title: _listed(value, exists, seen)})
                continue
            page = value
        else:
            page = item
        if isinstance(page, str) and page.endswith(".md"):
            if page not in exists:
                continue
            seen.add(page)
        kept.append(item)
    return kept


def _section_of(nav: list[Any], folder: str) -> list[Any] | None:
    """The section whose pages are all under ``folder/`` (the Middleware section)."""
    for item in nav:
        if isinstance(item, dict):
            ((_, value),) = item.items()
            pages = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
            if pages and all(page.startswith(folder + "/") for page in pages):
                return value  # type: ignore[no-any-return]
    return None


def on_config(config: Any) -> Any:
    nav = config.get("nav")
    if not nav:
        return config
    docs = Path(config["docs_dir"])
    exists = {
        path.relative_to(docs).as_posix()
        for path in docs.rglob("*.md")
        if not path.relative_to(docs).parts[0].startswith("_")
    }
    seen: set[str] = set()
    nav = _listed(nav, exists, seen)
    more: list[Any] = []
    for page in sorted(exists - seen):
        folder = page.rpartition("/")[0]
        section = _section_of(nav, folder) if folder else None
        if section is not None:
            section.append(page)
            section.sort(key=lambda p: p if isinstance(p, str) else "")
        else:
            more.append(page)
    if more:
        nav.append({"More": more})
    config["nav"] = nav
    return config
