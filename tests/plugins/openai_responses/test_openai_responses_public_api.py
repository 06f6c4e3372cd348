"""plait-openai-responses and plait-anthropic's model are written as third-party
providers are: they import only plait's public modules, never a ``plait._private`` one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import plait_anthropic.model
import plait_openai_responses.model

PUBLIC = {
    "plait",
    "plait.errors",
    "plait.lazy",
    "plait.messages",
    "plait.models",
    "plait.models.http",
    "plait.models.openai",
    "plait.options",
}


@pytest.mark.parametrize("module", [plait_openai_responses.model, plait_anthropic.model])
def test_the_provider_imports_only_plaits_public_api(module: object) -> None:
    source = Path(str(getattr(module, "__file__", "")))
    seen = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name == "plait" or name.startswith("plait."):
                seen.add(name)
                assert name in PUBLIC, f"{source.name} imports {name}"
    assert "plait.models.http" in seen
