"""``plait``'s lazy export table and its type-checking imports name the same objects, so
``mypy --strict`` sees every public name a user can import."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
from pathlib import Path

import plait


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(Path(plait.__file__).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{alias.name} is re-exported as itself"
                    found[alias.name] = stmt.module
    return found


def test_lazy_and_type_checking_exports_match() -> None:
    assert _type_checking_imports() == plait._EXPORTS


def test_every_export_resolves_to_its_module() -> None:
    for name, module in plait._EXPORTS.items():
        assert getattr(plait, name) is getattr(importlib.import_module(module), name)
    assert sorted(plait.__all__) == sorted(plait._EXPORTS)


def test_version_comes_from_the_installed_distribution() -> None:
    assert plait.__version__ == importlib.metadata.version("plait")
