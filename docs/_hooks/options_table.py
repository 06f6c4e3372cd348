"""mkdocs hook: a line ``<!-- plait-options: module:Class -->`` in a page becomes the options table
of that middleware class, generated from its attrs fields with ``plait.options``, so the
table in the docs cannot drift from the code. A class that cannot be imported fails the
build (``mkdocs build --strict``)."""

from __future__ import annotations

import importlib
import logging
import re
from typing import Any

log = logging.getLogger("mkdocs.plugins.plait_options")

# On a line of its own, so the marker can be quoted in prose without being replaced.
_MARKER = re.compile(r"^<!--\s*plait-options:\s*([\w.]+):([\w.]+)\s*-->[ \t]*$", re.MULTILINE)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def options_table(module: str, qualname: str) -> str:
    from plait.options import describe_options

    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    rows = ["| option | type | default | meaning |", "|---|---|---|---|"]
    for option in describe_options(obj):
        default = "required" if option.required else f"`{_cell(str(option.default))}`"
        rows.append(
            f"| `{option.name}` | `{_cell(option.type)}` | {default} | {_cell(option.help or '')} |"
        )
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        try:
            return options_table(match.group(1), match.group(2))
        except Exception as exc:
            log.warning(
                "%s: cannot build the options table of %s:%s: %s: %s",
                page.file.src_path,
                match.group(1),
                match.group(2),
                type(exc).__name__,
                exc,
            )
            return match.group(0)

    return _MARKER.sub(replace, markdown)
