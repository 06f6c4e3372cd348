"""A middleware class whose hooks are plain methods, marked without options, is read
without registering it with pluggy: what is read is what pluggy finds, and anything else
is still registered with pluggy, which accepts it or refuses it in its words."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs
import pytest

import plait
from plait import _registry, hookspecs
from plait.testing import HookRecorder


def test_each_spec_is_read_with_the_arguments_pluggy_reads() -> None:
    pm = _registry._checker()
    assert _registry._spec_args() == {
        name: tuple(getattr(pm.hook, name).spec.argnames) for name in hookspecs.ALL_HOOKS
    }


@attrs.frozen
class Everything(plait.Middleware):
    """One of each kind of hook a middleware writes, some taking fewer arguments."""

    word: str = "x"

    def state_fields(self) -> dict[str, Any]:
        return {}

    def before_agent(self, state: Any) -> None:
        return None

    @plait.can_jump_to("end")
    def before_model(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    def transform_model_stream(self, chunks: Any, request: Any) -> Any:
        return chunks

    def after_agent(self) -> None:
        return None

    def _helper(self) -> None:
        return None


class Subclassed(Everything):
    def after_model(self, state: Any) -> None:
        return None


def builtins() -> list[tuple[str, object]]:
    from plait_model_call_limit import ModelCallLimitMiddleware
    from plait_model_retry import ModelRetryMiddleware
    from plait_pii import PIIMiddleware
    from plait_tool_call_limit import ToolCallLimitMiddleware
    from plait_tool_retry import ToolRetryMiddleware

    return [
        ("model_call_limit", ModelCallLimitMiddleware(run_limit=3)),
        ("tool_call_limit", ToolCallLimitMiddleware(run_limit=3)),
        ("model_retry", ModelRetryMiddleware()),
        ("tool_retry", ToolRetryMiddleware()),
        ("pii", PIIMiddleware("email")),
    ]


@pytest.mark.parametrize(
    ("name", "middleware"),
    [
        *builtins(),
        ("recorder", HookRecorder()),
        ("everything", Everything()),
        ("subclassed", Subclassed()),
    ],
)
def test_plain_methods_are_read_as_pluggy_finds_them(name: str, middleware: object) -> None:
    read = _registry._plain_hooks(middleware)
    assert read is not None
    assert facts(read) == facts(_registry._validated(name, middleware))
    assert read  # each of these has hooks


def facts(found: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return [(f.attr, f.hook, f.opts, f.argnames) for f in found]


def wrapped(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def call(*args: Any) -> Any:
        return func(*args)

    return call


class Static:
    @staticmethod
    @plait.hookimpl
    def before_model(state: Any) -> None:
        return None


class First:
    @plait.hookimpl(tryfirst=True)
    def before_model(self, state: Any) -> None:
        return None


class Renamed:
    @plait.hookimpl(specname="before_model")
    def check(self, state: Any) -> None:
        return None


class Misspelt:
    @plait.hookimpl
    def before_modle(self, state: Any) -> None:
        return None


class TooMany:
    @plait.hookimpl
    def before_model(self, state: Any, request: Any) -> None:
        return None


class Wrapped:
    @plait.hookimpl
    @wrapped
    def before_model(self, state: Any) -> None:
        return None


@pytest.mark.parametrize("cls", [Static, First, Renamed, Misspelt, TooMany, Wrapped])
def test_anything_else_is_left_to_pluggy(cls: type) -> None:
    assert _registry._plain_hooks(cls()) is None


def test_a_hook_left_to_pluggy_is_still_read_or_refused_in_its_words(make_agent: Any) -> None:
    agent = make_agent(["ok"], middleware=[Renamed(), Static()])
    assert agent.invoke("hi").messages[-1].text == "ok"
    with pytest.raises(
        plait.ConfigError,
        match=r"(?s)middleware 'TooMany': .*Argument\(s\) \{'request'\} are declared",
    ):
        make_agent(["ok"], middleware=[TooMany()])


def test_a_hook_the_instance_holds_is_read_and_an_option_function_is_not_a_hook(
    make_agent: Any,
) -> None:
    from plait_tool_retry import ToolRetryMiddleware

    calls: list[str] = []

    class Holder(plait.Middleware):
        pass

    @plait.hookimpl
    def before_model(state: Any) -> None:
        calls.append("before_model")

    held = Holder()
    held.before_model = before_model  # type: ignore[attr-defined]
    assert _registry._own_hooks(held)
    agent = make_agent(["ok"], middleware=[held])
    assert agent.invoke("hi").messages[-1].text == "ok"
    assert calls == ["before_model"]

    # a function given as an option is held by the instance, and is no hook
    retrying = ToolRetryMiddleware(retry_on=lambda exc: True)
    assert "retry_on" in vars(retrying)
    assert not _registry._own_hooks(retrying)
