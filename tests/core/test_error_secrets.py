"""A refused value is shown in its error ("expected ..., got ...") without the credentials
it holds: errors are printed, logged and pasted into issues. An agent file's model table
with its key, an MCP server's ``Authorization`` header given as a string, an ``env``
table's token were echoed whole."""

from __future__ import annotations

from pathlib import Path

import pytest

import plait
from plait.agentfile import load_agent
from plait.errors import ConfigError, PlaitError
from plait.testing import ScriptedChatModel

KEY = "sk-proj-LEAKCHECK0123456789abcdefgh"
BARE = "plaintoken0123456789LEAK"


def test_an_agent_file_error_does_not_echo_the_key_it_holds(tmp_path: Path) -> None:
    agent = tmp_path / "agent.toml"
    agent.write_text(
        f'[agent]\nmodel = {{id = "openai:gpt-4o", api_key = "{BARE}", max_tokens = 9}}\n',
        encoding="utf-8",
    )
    with pytest.raises(PlaitError) as caught:
        load_agent(agent)
    text = str(caught.value)
    assert "model: expected a string, got {" in text
    assert BARE not in text and "'api_key': '***'" in text
    assert "'max_tokens': 9" in text and "'id': 'openai:gpt-4o'" in text


def test_a_plugin_option_error_does_not_echo_a_credential() -> None:
    header = {"name": "s", "url": "http://h/mcp", "headers": f"Authorization: Bearer {BARE}"}
    with pytest.raises(ConfigError) as caught:
        plait.create_agent(ScriptedChatModel(["x"]), middleware=[("mcp", {"servers": [header]})])
    assert BARE not in str(caught.value)
    assert "expected a mapping, got 'Authorization: Bearer ***'" in str(caught.value)
    as_table = {"servers": {"s": {"url": "http://h/mcp", "env": {"GITHUB_TOKEN": BARE}}}}
    with pytest.raises(ConfigError) as caught:
        plait.create_agent(ScriptedChatModel(["x"]), middleware=[("mcp", as_table)])
    assert BARE not in str(caught.value)
    assert "'env': {'GITHUB_TOKEN': '***'}" in str(caught.value)


def test_a_key_shaped_value_is_hidden_where_a_provider_would_hide_it() -> None:
    import plait.models.openai  # declares OpenAI's key shapes

    with pytest.raises(ConfigError) as caught:
        plait.create_agent(
            ScriptedChatModel(["x"]), middleware=[("model_call_limit", {"run_limit": KEY})]
        )
    assert KEY not in str(caught.value) and "[REDACTED]" in str(caught.value)
