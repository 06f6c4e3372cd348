"""plait.lazy: a package's names imported on first use, then kept."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from plait.lazy import lazy_exports


@pytest.fixture
def package() -> Iterator[types.ModuleType]:
    module = types.ModuleType("acme_lazy")
    module.__getattr__ = lazy_exports(  # type: ignore[attr-defined]
        "acme_lazy", {"dedent": "textwrap", "Fraction": "fractions"}
    )
    sys.modules["acme_lazy"] = module
    yield module
    del sys.modules["acme_lazy"]


def test_a_name_is_imported_on_first_use_and_kept(package: types.ModuleType) -> None:
    import textwrap

    assert "dedent" not in vars(package)
    assert package.dedent is textwrap.dedent
    assert vars(package)["dedent"] is textwrap.dedent  # later uses are plain lookups


def test_another_name_is_an_attribute_error_naming_the_module(package: types.ModuleType) -> None:
    with pytest.raises(AttributeError, match="module 'acme_lazy' has no attribute 'indent'"):
        package.indent  # noqa: B018
    assert not hasattr(package, "indent")


def test_the_built_in_plugins_export_their_names_lazily() -> None:
    import plait_dbos
    import plait_mcp
    import plait_serve

    assert plait_dbos.Worker.__module__ == "plait_dbos._worker"
    assert plait_mcp.MCPMiddleware.__module__ == "plait_mcp.middleware"
    assert plait_serve.app.__module__ == "plait_serve._app"
    with pytest.raises(AttributeError, match="module 'plait_serve' has no attribute 'nope'"):
        plait_serve.nope  # noqa: B018
