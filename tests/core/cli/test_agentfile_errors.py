"""Every mistake in an agent file names the file, the table and the key, with what was
expected there."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from plait.agentfile import AgentFileError, read_agent_file
from plait.errors import ConfigError, StoreError


def _error(write: Callable[[str, str], Path], text: str) -> str:
    path = write("agent.toml", text)
    with pytest.raises(AgentFileError) as info:
        read_agent_file(path)
    assert isinstance(info.value, ConfigError)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


AGENT = '[agent]\nmodel = "scripted:x"\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("model = 3\n", "[agent] model: expected a string, got 3"),
        (
            'model = "scripted:x"\nmodle = "y"\n',
            "[agent]: unknown key 'modle' (did you mean 'model'?) (expected one of: model, "
            "name, model_settings, "
            "system_prompt, tools, checkpointer, store, response_format, recursion_limit, "
            "tool_timeout, output_retries)",
        ),
        (
            'model = "scripted:x"\ntools = "mod:fn"\n',
            "[agent] tools: expected a list, got 'mod:fn'",
        ),
        (
            'model = "scripted:x"\ntools = ["a:b", 7]\n',
            "[agent] tools[1]: expected a string, got 7",
        ),
        (
            'model = "scripted:x"\nrecursion_limit = true\n',
            "[agent] recursion_limit: expected an int, got True",
        ),
        (
            'model = "scripted:x"\nrecursion_limit = 0\n',
            "[agent] recursion_limit: expected an int >= 1, got 0",
        ),
        (
            'model = "scripted:x"\nsystem_prompt = ["a"]\n',
            "[agent] system_prompt: expected a string or None, got ['a']",
        ),
        (
            'model = "scripted:x"\nmodel_settings = "fast"\n',
            "[agent] model_settings: expected a mapping, got 'fast'",
        ),
        ('system_prompt = "hi"\n', "[agent] model: this key is required"),
    ],
)
def test_agent_table_errors(write, body: str, expected: str) -> None:
    assert _error(write, "[agent]\n" + body) == expected


def test_missing_agent_table(write) -> None:
    assert _error(write, 'model = "x"\n') == (
        "top level: an [agent] table with at least 'model' is required"
    )


def test_unknown_top_level_table(write) -> None:
    assert _error(write, AGENT + "[agnet]\nx = 1\n") == (
        "top level: unknown key 'agnet' (did you mean 'agent'?) (expected one of: agent, "
        "middleware)"
    )


def test_middleware_inside_the_agent_table_points_to_middleware_tables(write) -> None:
    message = _error(write, AGENT + 'middleware = ["pii"]\n')
    assert message.startswith("[agent]: unknown key 'middleware' (expected one of: model,")
    assert message.endswith(
        "; middleware is not an [agent] key: give each its own table after [agent], "
        '[[middleware]] with use = "NAME" and its options'
    )


def test_tool_made_with_plait_tool_is_accepted(write) -> None:
    write(
        "tagged_tools.py",
        "import plait\n\n@plait.tool\ndef ping(host: str) -> str:\n"
        '    """Ping a host.\n\n    Args:\n        host: the host.\n    """\n'
        '    return "pong " + host\n',
    )
    path = write("agent.toml", AGENT + 'tools = ["tagged_tools:ping"]\n')
    spec = read_agent_file(path)
    agent = spec.build()
    assert [t.name for t in agent.tools] == ["ping"]


def test_invalid_toml_gives_the_line(write) -> None:
    assert _error(write, "[agent\n").startswith("not valid TOML: ")
    assert "line 1" in _error(write, "[agent\n")


def test_missing_file() -> None:
    with pytest.raises(AgentFileError, match=r"^nowhere\.toml: no such file$"):
        read_agent_file("nowhere.toml")


def test_unknown_model_provider_lists_installed_ones(write) -> None:
    message = _error(write, '[agent]\nmodel = "nosuch:m"\n')
    assert message.startswith("[agent] model: unknown model provider 'nosuch'; installed: ")
    assert "scripted" in message


def test_settings_the_provider_does_not_take(write) -> None:
    message = _error(write, AGENT + "model_settings = { respones = [] }\n")
    assert message.startswith("[agent] model_settings: not accepted by 'scripted': ")
    assert "respones" in message


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("3", "[agent] model_settings.responses[0]: expected a string or a mapping"),
        ("{ text = 1 }", "[agent] model_settings.responses[0].text: expected a string"),
        (
            "{ tool_calls = [{ args = {} }] }",
            "[agent] model_settings.responses[0].tool_calls[0].name: this key is required",
        ),
        (
            '{ tool_calls = [{ name = "f", arg = {} }] }',
            "[agent] model_settings.responses[0].tool_calls[0]: unknown key 'arg'",
        ),
        (
            '{ text = "a", function = "m:f" }',
            "[agent] model_settings.responses[0]: give either function or text/tool_calls",
        ),
        (
            '{ function = "nosuchmodule:f" }',
            "[agent] model_settings.responses[0].function: cannot import 'nosuchmodule:f'",
        ),
    ],
)
def test_scripted_response_errors(write, response: str, expected: str) -> None:
    body = f'[agent]\nmodel = "scripted:x"\nmodel_settings = {{ responses = ["ok", {response}] }}\n'
    message = _error(write, body.replace('"ok", ', ""))
    assert message.startswith(expected)


def test_unimportable_tool_module(write, tmp_path: Path) -> None:
    message = _error(write, AGENT + 'tools = ["nosuch_tools_mod:get"]\n')
    assert message == (
        "[agent] tools[0]: cannot import 'nosuch_tools_mod:get': no module named "
        f"'nosuch_tools_mod' (looked beside the agent file, in {tmp_path}, and on sys.path)"
    )


def test_tool_module_without_the_function(write) -> None:
    write("tools_without.py", "def other():\n    pass\n")
    message = _error(write, AGENT + 'tools = ["tools_without:get"]\n')
    assert message == (
        "[agent] tools[0]: cannot import 'tools_without:get': module 'tools_without' has no "
        "attribute 'get'"
    )


def test_tool_module_that_fails_to_import(write) -> None:
    write("tools_broken.py", "raise RuntimeError('missing API key')\n")
    message = _error(write, AGENT + 'tools = ["tools_broken:get"]\n')
    assert message == (
        "[agent] tools[0]: cannot import 'tools_broken:get': importing 'tools_broken' "
        "raised RuntimeError: missing API key"
    )


def test_tool_spec_without_colon(write) -> None:
    message = _error(write, AGENT + 'tools = ["just_a_name"]\n')
    assert message == "[agent] tools[0]: expected a 'module:attr' string, got 'just_a_name'"


def test_tool_that_is_not_callable(write) -> None:
    write("tools_const.py", "VALUE = 3\n")
    message = _error(write, AGENT + 'tools = ["tools_const:VALUE"]\n')
    assert message == "[agent] tools[0]: 'tools_const:VALUE' is not a function or a plait.Tool"


def test_response_format_must_import(write) -> None:
    message = _error(write, AGENT + 'response_format = "nosuch_fmt:Answer"\n')
    assert message.startswith("[agent] response_format: cannot import 'nosuch_fmt:Answer'")


def test_middleware_table_without_use(write) -> None:
    message = _error(write, AGENT + "[[middleware]]\nrun_limit = 1\n")
    assert message == (
        "[[middleware]] #1: expected a 'use' key naming the middleware, got {'run_limit': 1}"
    )


def test_middleware_use_must_be_a_string(write) -> None:
    message = _error(write, AGENT + "[[middleware]]\nuse = 3\n")
    assert message == "[[middleware]] #1: expected a string in 'use', got 3"


def test_unknown_middleware_lists_the_installed_names(write) -> None:
    installed = sorted(ep.name for ep in entry_points(group="plait.middleware"))
    message = _error(write, AGENT + '[[middleware]]\nuse = "nosuch"\n')
    assert message == (
        "[[middleware]] #1 (use = \"nosuch\"): unknown middleware 'nosuch'; installed: "
        + (", ".join(installed) or "none")
    )


def test_unknown_middleware_suggests_a_close_name(write) -> None:
    installed = sorted(ep.name for ep in entry_points(group="plait.middleware"))
    message = _error(write, AGENT + '[[middleware]]\nuse = "tool_retri"\n')
    assert message == (
        "[[middleware]] #1 (use = \"tool_retri\"): unknown middleware 'tool_retri'; installed: "
        + (", ".join(installed) or "none")
        + "; did you mean 'tool_retry'?"
    )


def test_missing_builtin_middleware_names_its_distribution(
    write, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait import _entrypoints

    real = _entrypoints._installed
    monkeypatch.setattr(  # no middleware installed
        _entrypoints,
        "_installed",
        lambda checked=True: {
            group: points
            for group, points in real(checked=checked).items()
            if group != "plait.middleware"
        },
    )
    message = _error(write, AGENT + '[[middleware]]\nuse = "human_in_the_loop"\n')
    assert message == (
        '[[middleware]] #1 (use = "human_in_the_loop"): unknown middleware '
        "'human_in_the_loop'; installed: none; it is a built-in plugin of the distribution "
        "plait-human-in-the-loop: install it with `pip install ./plugins/human_in_the_loop` "
        "from a checkout of plait (or `pip install . ./plugins/*` for every built-in plugin)"
    )


def test_builtin_table_matches_the_plugins_entry_points() -> None:
    import tomllib

    from plait import _entrypoints

    plugins = Path(__file__).resolve().parents[3] / "plugins"
    found: dict[str, dict[str, str]] = {}
    for project in sorted(plugins.glob("*/pyproject.toml")):
        data = tomllib.loads(project.read_text(encoding="utf-8"))["project"]
        assert data["name"] == "plait-" + project.parent.name.replace("_", "-")
        for group, names in data.get("entry-points", {}).items():
            for name in names:
                found.setdefault(group, {})[name] = project.parent.name
    assert found == _entrypoints.BUILTIN, "a new built-in plugin goes in _entrypoints.BUILTIN"


def _installed(name: str) -> bool:
    return any(ep.name == name for ep in entry_points(group="plait.middleware"))


@pytest.mark.skipif(not _installed("hello"), reason="needs the plait-hello test plugin")
def test_middleware_option_errors_name_the_table_and_the_option(write) -> None:
    message = _error(
        write,
        AGENT + '[[middleware]]\nuse = "hello"\n[[middleware]]\nuse = "hello"\ngreeting = 3\n',
    )
    assert message == (
        "[[middleware]] #2 (use = \"hello\"): plugin 'hello': option 'greeting': "
        "expected a string, got 3"
    )


def test_repeat_must_be_positive(write) -> None:
    body = AGENT + '[[agent.model_settings.responses]]\ntext = "a"\nrepeat = 0\n'
    assert _error(write, body) == (
        "[agent] model_settings.responses[0].repeat: expected an int >= 1, got 0"
    )


def test_a_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    data = b'[agent]\nmodel = "scripted:x"\nsystem_prompt = "caf\xe9"\n'
    path.write_bytes(data)
    with pytest.raises(AgentFileError) as info:
        read_agent_file(path)
    offset = data.index(b"\xe9")
    assert str(info.value) == f"{path}: not UTF-8 text: byte 0xe9 at offset {offset}"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:", "malformed SQLite URL 'sqlite:'"),
        ("sqlite:////no/such/dir/x.db", "cannot open SQLite database '/no/such/dir/x.db'"),
        ("nosuch://x", "checkpointer URL 'nosuch://x': unknown checkpointer 'nosuch'"),
    ],
)
def test_a_bad_checkpointer_url_names_the_file_and_the_key(write, url: str, expected: str) -> None:
    path = write("agent.toml", AGENT + f'checkpointer = "{url}"\n')
    with pytest.raises(AgentFileError) as info:
        read_agent_file(path).build()
    assert str(info.value).startswith(f"{path}: [agent] checkpointer: {expected}")
    if not url.startswith("nosuch"):
        assert isinstance(info.value, StoreError)  # still the documented class


def test_a_bad_store_url_given_as_an_override_names_the_file_only(write) -> None:
    path = write("agent.toml", AGENT)
    with pytest.raises(AgentFileError) as info:
        read_agent_file(path).build(store="sqlite:")
    assert str(info.value).startswith(f"{path}: malformed SQLite URL 'sqlite:'")


@pytest.mark.parametrize("depth", [3000, 600])
def test_an_agent_file_nested_too_deeply_is_one_line_naming_the_file(
    plait_cli, write: Callable[[str, str], Path], depth: int
) -> None:
    write(
        "deep.toml",
        f'[agent]\nmodel = "scripted:x"\nmodel_settings = {{ a = {"[" * depth}{"]" * depth} }}\n',
    )
    done = plait_cli("run", "deep.toml", "hi")
    assert done.returncode == 1
    assert done.stderr == (
        "plait: error: deep.toml: nested too deeply to read: expected tables and arrays "
        "nested at most a few hundred levels deep, got deeper (Python's recursion limit)\n"
    )
