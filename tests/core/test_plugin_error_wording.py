"""The kernel words a plugin's errors: a plugin raises ``ConfigError``/``FieldError`` with
the problem only, and whatever the kernel calls of it — its options, its build-time hooks,
its hooks during a run — comes out as ``plugin 'x': option 'y': problem``, once, ``x``
being the name the agent enabled it under.

The plugin here is a third-party distribution (a ``.dist-info`` on ``sys.path``, as pip
would install it) exposing one class under two entry-point names.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plait import _entrypoints
from plait.errors import ConfigError, FieldError
from plait.testing import ai, call, tool_answers

PLUGIN = """
import attrs
import plait
from plait.errors import ConfigError, FieldError
from plait.options import check_tool_names, expected


def _positive(_, attribute, value):
    if not isinstance(value, int) or value < 1:
        raise FieldError(attribute.name, expected("an int >= 1", value))


@attrs.frozen
class AcmeGuard(plait.Middleware):
    limit: int = attrs.field(default=1, validator=_positive)
    words: list[str] = attrs.Factory(list)
    tools: list[str] = attrs.Factory(list)
    refuse: str = ""

    def __attrs_post_init__(self):
        if len(self.words) > self.limit:
            raise ConfigError(
                expected(f"at most limit ({self.limit}) words", self.words), option="words"
            )

    def validate_agent(self, agent_config):
        check_tool_names(self.tools, agent_config, option="tools")
        if self.refuse == "build":
            raise ConfigError("needs an agent with a checkpointer")

    def before_model(self, state, runtime):
        if self.refuse == "before_model":
            raise ConfigError("no policy loaded for this run")

    def wrap_model_call(self, request, handler):
        if self.refuse == "wrap_model_call":
            raise FieldError("refuse", "this model is not allowed")
        return handler(request)

    def wrap_tool_call(self, request, handler):
        return handler(request)
"""


@pytest.fixture
def acme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``acme-guard`` installed: ``AcmeGuard`` as the entry points ``acme_guard`` and
    ``guard`` (the same class enabled under another name)."""
    (tmp_path / "acme_guard.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / "acme_guard-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-guard\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[plait.middleware]\nacme_guard = acme_guard:AcmeGuard\nguard = acme_guard:AcmeGuard\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "acme_guard", raising=False)
    _entrypoints.refresh()
    yield
    _entrypoints.refresh()


def _error(make: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as raised:
        make(*args, **kwargs)
    return str(raised.value)


def _search(query: str) -> str:
    """Search the web."""
    return "found"


def test_a_validators_field_error_names_the_plugin_and_option(acme: None, make_agent: Any) -> None:
    assert _error(make_agent, middleware=[("acme_guard", {"limit": 0})]) == (
        "plugin 'acme_guard': option 'limit': expected an int >= 1, got 0"
    )


def test_a_cross_option_check_names_its_option_once(acme: None, make_agent: Any) -> None:
    options = {"limit": 1, "words": ["a", "b"]}
    assert _error(make_agent, middleware=[("acme_guard", options)]) == (
        "plugin 'acme_guard': option 'words': expected at most limit (1) words, got ['a', 'b']"
    )


def test_the_name_is_the_one_the_agent_enabled_it_under(acme: None, make_agent: Any) -> None:
    assert _error(make_agent, middleware=[("guard", {"limit": 0})]) == (
        "plugin 'guard': option 'limit': expected an int >= 1, got 0"
    )
    assert _error(make_agent, middleware=[("guard", {"refuse": "build"})]) == (
        "plugin 'guard': needs an agent with a checkpointer"
    )


def test_a_build_time_hooks_errors_are_named(acme: None, make_agent: Any) -> None:
    guard = ("acme_guard", {"tools": ["serch"]})
    assert _error(make_agent, tools=[_search], middleware=[guard]) == (
        "plugin 'acme_guard': option 'tools' names a tool the agent does not have: "
        "'serch' (did you mean '_search'?); the agent's tools are: _search"
    )


def test_an_instance_passed_directly_is_named_by_its_entry_point(
    acme: None, make_agent: Any
) -> None:
    from acme_guard import AcmeGuard  # type: ignore[import-not-found]

    # the first of the class's entry-point names, in name order
    assert _error(make_agent, middleware=[AcmeGuard(refuse="build")]) == (
        "plugin 'acme_guard': needs an agent with a checkpointer"
    )
    # two instances: each named once, as the plugin (not 'AcmeGuard#2')
    assert _error(make_agent, middleware=[AcmeGuard(), AcmeGuard(refuse="build")]) == (
        "plugin 'acme_guard': needs an agent with a checkpointer"
    )


def test_a_direct_constructor_call_gets_the_problem_alone(acme: None) -> None:
    """No kernel is involved in ``AcmeGuard(limit=0)``: the error is the plugin's own."""
    from acme_guard import AcmeGuard

    with pytest.raises(FieldError) as raised:
        AcmeGuard(limit=0)
    assert str(raised.value) == "limit: expected an int >= 1, got 0"


def test_a_node_hooks_error_during_a_run_is_named(acme: None, make_agent: Any) -> None:
    agent = make_agent(["hi"], middleware=[("guard", {"refuse": "before_model"})])
    with pytest.raises(ConfigError) as raised:
        agent.invoke("hello")
    assert str(raised.value) == "plugin 'guard': no policy loaded for this run"
    assert raised.value.plugin == "guard"
    assert raised.value.problem == "no policy loaded for this run"


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_wrap_hooks_error_is_named_by_the_layer_that_raised_it(
    acme: None, make_agent: Any, path: str
) -> None:
    # the refusing layer is inside the other: the outer one only passes the error on
    agent = make_agent(
        ["hi"],
        middleware=[("acme_guard", {}), ("guard", {"refuse": "wrap_model_call"})],
    )
    with pytest.raises(ConfigError) as raised:
        if path == "sync":
            agent.invoke("hello")
        else:
            import asyncio

            asyncio.run(agent.ainvoke("hello"))
    assert str(raised.value) == "plugin 'guard': option 'refuse': this model is not allowed"


def test_an_error_from_inside_the_handler_is_not_the_wrap_hooks(
    acme: None, make_agent: Any
) -> None:
    """A tool's own ConfigError passes through the plugin's wrap_tool_call unnamed: the
    model reads the tool's text, not a plugin's."""

    def lookup(key: str) -> str:
        """Look a key up."""
        raise ConfigError(f"no table holds {key!r}")

    agent = make_agent(
        [ai("", call("lookup", id="c1", key="k")), "done"],
        tools=[lookup],
        middleware=[("acme_guard", {})],
    )
    result = agent.invoke("go")
    answer = tool_answers(result.messages)["c1"]
    assert answer.status == "error"
    assert "no table holds 'k'" in str(answer.content)
    assert "plugin" not in str(answer.content)


FRONT_DOORS = {
    # plait_dbos's Worker, submit() and its `plait worker/submit/workers` commands: the
    # plugin's own public API, called by the user or the CLI, never inside an agent's
    # build or run, so no kernel call is there to name the plugin.
    "dbos/plait_dbos/_config.py",
    "dbos/plait_dbos/_database.py",
    "dbos/plait_dbos/_submit.py",
    "dbos/plait_dbos/_worker.py",
    "dbos/plait_dbos/cli.py",
}


def test_no_built_in_plugin_writes_its_own_name_into_an_error() -> None:
    """Built-in plugins say the problem only; ``plugin 'x':`` is the kernel's to add, for
    everything it calls of a plugin (options, hooks at build and run time)."""
    root = Path(__file__).resolve().parents[2] / "plugins"
    hand_written = re.compile(r"plugin ('[a-z_]+'|\{PLUGIN!r\}|\{[a-z_.]*plugin!r\}):")
    found = []
    for path in sorted(root.glob("*/plait_*/**/*.py")):
        if path.relative_to(root).as_posix() in FRONT_DOORS:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if hand_written.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert found == []
    assert all((root / name).is_file() for name in FRONT_DOORS)  # none renamed away
