"""Anthropic's model and the Responses API left the kernel for plugins (plait-anthropic,
plait-openai-responses); their old import paths work for one release with a
``DeprecationWarning``, and the kernel itself never imports a plugin."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

import plait
from plait.models import init_chat_model

MOVED = [
    ("plait.models.anthropic", "AnthropicChatModel", "plait_anthropic", "plait-anthropic"),
    (
        "plait.models.openai_responses",
        "OpenAIResponsesModel",
        "plait_openai_responses",
        "plait-openai-responses",
    ),
]


@pytest.mark.parametrize(("old", "name", "package", "dist"), MOVED)
def test_the_old_path_gives_the_plugins_class_with_a_warning(
    old: str, name: str, package: str, dist: str
) -> None:
    module = importlib.import_module(old)
    with pytest.warns(
        DeprecationWarning, match=rf"{old} is deprecated .* from {package} \(the {dist}"
    ):
        cls = getattr(module, name)
    assert cls is getattr(importlib.import_module(package), name)
    with pytest.warns(DeprecationWarning, match=old):
        assert getattr(importlib.import_module("plait.models"), name) is cls


@pytest.mark.parametrize(("old", "name", "package", "dist"), MOVED)
def test_the_old_path_names_the_distribution_when_the_plugin_is_missing(
    old: str, name: str, package: str, dist: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, f"{package}.model", None)
    module = importlib.import_module(old)
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(ImportError, match=rf"moved to the plugin {dist}, which is not installed"),
    ):
        getattr(module, name)


def test_an_unknown_name_on_an_old_path_is_an_attribute_error() -> None:
    module = importlib.import_module("plait.models.anthropic")
    with pytest.warns(DeprecationWarning), pytest.raises(AttributeError, match="'Nope'"):
        module.Nope  # noqa: B018


@pytest.mark.parametrize(
    ("model_id", "cls"),
    [
        ("anthropic:claude-sonnet-4-5", "AnthropicChatModel"),
        ("openai-responses:gpt-5", "OpenAIResponsesModel"),
    ],
)
def test_model_ids_reach_the_plugins(model_id: str, cls: str) -> None:
    model = init_chat_model(model_id, api_key="k")
    assert type(model).__name__ == cls
    assert not type(model).__module__.startswith("plait.")


def test_no_kernel_module_imports_a_plugin() -> None:
    core = Path(plait.__file__).parent
    found = []
    for path in sorted(core.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{path.name}: {n}" for n in names if n.startswith("plait_")]
    assert found == []
