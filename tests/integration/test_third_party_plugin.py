"""A plugin distribution installed from tests/integration/plait-hello is enabled by name."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from typing import Any

import pytest

from plait.errors import ConfigError


def test_the_plugin_is_installed_as_an_entry_point() -> None:
    names = {ep.name for ep in entry_points(group="plait.middleware")}
    assert "hello" in names


def test_enabled_by_name_with_options_its_hooks_run(make_agent: Any) -> None:
    agent = make_agent(
        ["hi"], middleware=[("hello", {"greeting": "Bonjour"})], system_prompt="Be brief."
    )
    result = agent.invoke("salut")

    assert agent.model.requests[0].system_prompt == "Bonjour! Be brief."
    assert result.state["hello_calls"] == 1


def test_enabled_by_bare_name_uses_defaults(make_agent: Any) -> None:
    agent = make_agent(["hi"], middleware=["hello"])
    agent.invoke("x")
    assert agent.model.requests[0].system_prompt == "Hello!"


def test_a_wrong_option_names_plugin_option_and_expectation(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("hello", {"greeting": 3})])
    text = str(info.value)
    assert "hello" in text and "greeting" in text and "str" in text


def test_an_unknown_option_lists_the_valid_ones(make_agent: Any) -> None:
    with pytest.raises(ConfigError, match="greeting"):
        make_agent(["hi"], middleware=[("hello", {"greting": "typo"})])


def test_importing_plait_loads_no_plugin_and_no_http_client() -> None:
    code = (
        "import sys, plait; plait.create_agent; "
        "bad = [m for m in sys.modules if m.startswith(('plait_', 'httpx'))]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_disabled_plugin_is_reported_as_disabled() -> None:
    code = (
        "import plait\n"
        "try:\n"
        "    plait.create_agent(plait.ScriptedChatModel(['x']), middleware=['hello'])\n"
        "except plait.ConfigError as e:\n"
        "    print(e)\n"
    )
    env = {"PLAIT_DISABLE_PLUGINS": "hello", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "disabled by PLAIT_DISABLE_PLUGINS" in out.stdout
