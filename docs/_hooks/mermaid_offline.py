"""mkdocs hook: the site carries its own mermaid, so diagrams render with no network.

mkdocs-material draws a page's mermaid blocks with the page's global ``mermaid`` when
there is one, and otherwise loads mermaid from a CDN (nothing is drawn offline). This
hook copies the mermaid build that the ``mermaidx`` distribution ships (from PyPI; its
file is read, the package is never imported) into the site and adds it to
``extra_javascript``. Without ``mermaidx`` installed the build fails, naming it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

SITE_PATH = "assets/javascripts/mermaid.min.js"


def _mermaid_js() -> Path:
    spec = importlib.util.find_spec("mermaidx")
    folders = list(spec.submodule_search_locations or ()) if spec else []
    for folder in folders:
        path = Path(folder) / "assets" / "mermaid.js"
        if path.is_file():
            return path
    raise PluginError(
        "the docs need mermaid's JavaScript to draw diagrams offline: pip install mermaidx"
    )


def on_config(config: Any) -> Any:
    if SITE_PATH not in [str(script) for script in config.extra_javascript]:
        config.extra_javascript.append(SITE_PATH)
    return config


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, SITE_PATH, abs_src_path=str(_mermaid_js())))
    return files
