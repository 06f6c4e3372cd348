"""plait.lazy: a package's names imported on first use, then kept."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from plait.lazy import define, frozen, lazy_exports


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


# --- frozen and define: attrs' classes, their __repr__, __eq__ and __hash__ made on first use


def _twins(decorate: Any, attrs_decorate: Any) -> tuple[type, type]:
    """One class, made by ``decorate`` (plait.lazy's) and by ``attrs_decorate`` (attrs')."""

    def make(deco: Any) -> type:
        @deco
        class Order:
            item: str
            qty: int = 1
            notes: list[str] = attrs.field(factory=list, eq=False)
            code: str = attrs.field(default="x", repr=lambda v: f"<{v}>")
            price: float = attrs.field(default=1.0, eq=str)
            seen: dict[str, int] = attrs.field(factory=dict, init=False, repr=False, eq=False)

        return Order

    return make(decorate), make(attrs_decorate)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (frozen, attrs.frozen),
        (frozen(kw_only=True), attrs.frozen(kw_only=True)),
        (define, attrs.define),
        (frozen(eq=False), attrs.frozen(eq=False)),
        (define(repr=False), attrs.define(repr=False)),
    ],
    ids=["frozen", "frozen-kw-only", "define", "frozen-eq-false", "define-repr-false"],
)
def test_frozen_and_define_give_the_methods_attrs_gives(ours: Any, theirs: Any) -> None:
    lazy_class, attrs_class = _twins(ours, theirs)
    kw = {"item": "tea", "qty": 2, "notes": ["a"], "code": "c", "price": 2.0}
    other = {**kw, "notes": ["b"], "price": 2.00}  # equal: notes not compared, price by str
    differs = {**kw, "qty": 3}
    for made in (lazy_class, attrs_class):
        assert attrs.has(made)
    a, b, c = lazy_class(**kw), lazy_class(**other), lazy_class(**differs)
    x, y, z = attrs_class(**kw), attrs_class(**other), attrs_class(**differs)
    if attrs_class.__repr__ is object.__repr__:
        assert lazy_class.__repr__ is object.__repr__
    else:
        assert repr(a) == repr(x)
    assert (a == b, a != b, a == c, a != c) == (x == y, x != y, x == z, x != z)
    assert (a == x) is False  # another class, as for attrs
    hashable = attrs_class.__hash__ is not None
    assert (lazy_class.__hash__ is not None) == hashable
    if hashable:
        assert (hash(a) == hash(b)) == (hash(x) == hash(y))
        assert ({a: 1}.get(b) == 1) == (x == y)
    else:
        with pytest.raises(TypeError, match="unhashable"):
            hash(a)


def test_a_subclass_without_fields_reads_its_own_name_and_class() -> None:
    @frozen
    class Base:
        name: str

    class Child(Base):
        __slots__ = ()

    assert repr(Child("x")) == "Child(name='x')"
    assert Child("x") == Child("x")
    assert Child("x") != Base("x")
    assert len({Child("x"), Child("x"), Base("x")}) == 2


def test_a_class_writing_its_own_methods_keeps_them() -> None:
    @frozen
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("x")) == "<x>"
    assert Named("x") == Named("x")


def test_a_class_whose_instances_have_a_dict_is_made_without_slots() -> None:
    import plait

    @frozen(kw_only=True)
    class Shout(plait.Middleware):
        suffix: str = "!"

    @frozen
    class Alone:
        x: int = 0

    @frozen(slots=True)
    class Asked(plait.Middleware):
        x: int = 0

    shout = Shout(suffix="?")
    assert "__slots__" not in vars(Shout)  # plait.Middleware gives instances a __dict__
    assert vars(shout) == {"suffix": "?"}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        shout.suffix = "."  # type: ignore[misc]
    # made in place, it still has the argument check every attrs-made middleware has
    with pytest.raises(plait.ConfigError, match="Shout: unknown option 'suffx'"):
        Shout(suffx="?")  # type: ignore[call-arg]
    assert vars(Alone)["__slots__"] == ("x", "__weakref__")
    assert not hasattr(Alone(), "__dict__")
    assert "__slots__" in vars(Asked)  # slots= given: attrs' way
