"""create_agent refuses what is not middleware or not a store, naming what it got."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ScriptedChatModel


@pytest.mark.parametrize("item", [42, None, {}, object(), b"x"])
def test_an_object_implementing_no_hook_is_not_middleware(item: Any) -> None:
    with pytest.raises(ConfigError, match=r"implements no plait hook") as info:
        plait.create_agent(model=ScriptedChatModel([]), middleware=[item])
    assert f"middleware {item!r} ({type(item).__name__})" in str(info.value)


def test_an_empty_middleware_subclass_is_still_accepted() -> None:
    class Quiet(plait.Middleware):
        pass

    agent = plait.create_agent(model=ScriptedChatModel(["hi"]), middleware=[Quiet()])
    assert agent.invoke("hello").text == "hi"


@pytest.mark.parametrize("store", [{}, [], 7])
def test_a_store_that_is_not_a_store_is_refused(store: Any) -> None:
    with pytest.raises(ConfigError, match=r"is not a plait Store") as info:
        plait.create_agent(model=ScriptedChatModel([]), store=store)
    assert str(info.value).startswith(f"store {store!r}")
