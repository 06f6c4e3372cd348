"""``plait plugins``: installed middleware, providers, checkpointers and stores."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from plait.options import describe_options
from plait_env import outside_env


def _middleware_eps():
    return sorted(entry_points(group="plait.middleware"), key=lambda ep: ep.name)


def test_json_lists_the_kernels_own_entry_points(plait_cli) -> None:
    done = plait_cli("plugins", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {
        "middleware",
        "models",
        "checkpointers",
        "stores",
        "commands",
        "tool_adapters",
    }
    models = {row["name"]: row for row in data["models"]}
    assert models["scripted"]["distribution"] == "plait"
    assert models["scripted"]["value"] == "plait.models.scripted:ScriptedChatModel.from_id"
    assert models["scripted"]["version"]
    assert {"memory", "sqlite"} <= {row["name"] for row in data["checkpointers"]}
    assert {"memory", "sqlite"} <= {row["name"] for row in data["stores"]}


def test_middleware_options_come_from_the_attrs_class(plait_cli) -> None:
    eps = _middleware_eps()
    if not eps:
        pytest.skip("no middleware plugin is installed")
    done = plait_cli("plugins", "--json")
    rows = {row["name"]: row for row in json.loads(done.stdout)["middleware"]}
    for ep in eps:
        row = rows[ep.name]
        assert row["distribution"] == ep.dist.name
        assert row["version"] == ep.dist.version
        expected = [
            {"name": o.name, "type": o.type, "default": o.default, "required": o.required}
            for o in describe_options(ep.load())
        ]
        got = [{k: o[k] for k in ("name", "type", "default", "required")} for o in row["options"]]
        assert got == expected, ep.name


def test_text_table_shows_each_group_and_options(plait_cli) -> None:
    done = plait_cli("plugins", "--verbose")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for title in ("Middleware", "Model providers", "Checkpointers", "Stores"):
        assert f"\n{title}\n" in f"\n{out}"
    assert "NAME" in out and "DISTRIBUTION" in out and "VERSION" in out
    scripted = next(line for line in out.splitlines() if line.strip().startswith("scripted"))
    assert scripted.split()[:2] == ["scripted", "plait"]
    eps = _middleware_eps()
    if eps:
        ep = eps[0]
        options = describe_options(ep.load())
        assert any(line.split()[:2] == [ep.name, ep.dist.name] for line in out.splitlines())
        for option in options:
            default = "(required)" if option.required else f"= {option.default}"
            assert f"      {option.name}: {option.type} {default}" in out


def test_disabled_plugins_are_marked(plait_cli) -> None:
    done = plait_cli("plugins", "--json", env={"PLAIT_DISABLE_PLUGINS": "sqlite"})
    rows = {row["name"]: row for row in json.loads(done.stdout)["checkpointers"]}
    assert rows["sqlite"]["disabled"] is True
    assert rows["memory"]["disabled"] is False


def test_the_plain_listing_reads_metadata_and_imports_no_plugin(tmp_path) -> None:
    code = (
        "import sys, plait.cli\n"
        "plait.cli.main(['plugins'])\n"
        "print('IMPORTED', sorted(m for m in sys.modules if m.startswith('plait_')))\n"
    )
    env = outside_env()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "IMPORTED []"
    out = done.stdout
    for ep in _middleware_eps():
        assert any(line.split()[:2] == [ep.name, ep.dist.name] for line in out.splitlines())
        for option in describe_options(ep.load()):
            assert f"      {option.name}: {option.type}" not in out
    assert "Each middleware's options: plait plugins --verbose\n" in out


def test_help_lists_plugin_commands_and_imports_no_third_party_package(tmp_path) -> None:
    """``plait --help`` loads each ``plait.commands`` entry point for its line of help, and
    nothing those commands only need when they run (pydantic-evals, DBOS, Starlette, the
    MCP SDK): beyond the standard library, only plait and the commands' own modules."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import plait.cli\n"
        "try:\n"
        "    plait.cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('IMPORTED', sorted(set(sys.modules) - before))\n"
    )
    env = outside_env()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    *help_lines, imported_line = done.stdout.splitlines()
    help_text = "\n".join(help_lines)
    commands = sorted(entry_points(group="plait.commands"), key=lambda ep: ep.name)
    for ep in commands:
        assert f"\n    {ep.name} " in help_text or f"\n    {ep.name}\n" in help_text, ep.name
    allowed = {"plait"} | {ep.module.split(".")[0] for ep in commands}
    imported = imported_line.removeprefix("IMPORTED ").strip("[]").replace("'", "").split(", ")
    third_party = sorted(
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] not in allowed
    )
    assert third_party == []
