"""End to end: one agent file with the Anthropic plugin's tools and prompt caching, run by
the real ``plait`` command in a subprocess, against a local server speaking first the
Messages API, then (``--model openai:...``) Chat Completions. On Anthropic the tools go
out as the provider's own tool types, cache-marked; on OpenAI as function tools with
schemas and no marks — and the files the model edits are really edited both times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from replay_server import ReplayServer, claude_message, claude_tool_use, openai_completion

AGENT = """
[agent]
model = "anthropic:claude-sonnet-4-5"
system_prompt = "You keep the project's notes."

[[middleware]]
use = "anthropic_text_editor"
backend = "disk:work"

[[middleware]]
use = "anthropic_bash"
workspace_root = "work"

[[middleware]]
use = "anthropic_prompt_caching"
ttl = "1h"
"""

CREATE = {"command": "create", "path": "/notes.md", "file_text": "first note\n"}
CAT = {"command": "cat notes.md"}


def run_plait(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("PLAIT_", "ANTHROPIC_", "OPENAI_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "plait.cli", "run", "agent.toml", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=tmp_path,
        env={**clean, **env, "PYTHONIOENCODING": "utf-8"},
        timeout=120,
        input="",
    )


def test_the_same_agent_file_on_anthropic_then_openai(tmp_path: Path) -> None:
    (tmp_path / "agent.toml").write_text(AGENT, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    server = ReplayServer()
    try:
        editor_call = claude_tool_use("toolu_1", "str_replace_based_edit_tool", CREATE)
        server.json(claude_message(editor_call))
        server.json(claude_message(claude_tool_use("toolu_2", "bash", CAT)))
        server.json(claude_message("Noted."))
        done = run_plait(
            tmp_path,
            "Write a first note.",
            env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.url},
        )
        assert done.returncode == 0, done.stderr
        assert "Noted." in done.stdout
        assert (work / "notes.md").read_text(encoding="utf-8") == "first note\n"
        first, _, last = (r.body for r in server.requests)
        hour = {"type": "ephemeral", "ttl": "1h"}
        assert first["tools"] == [
            {"name": "str_replace_based_edit_tool", "type": "text_editor_20250728"},
            {"name": "bash", "type": "bash_20250124", "cache_control": hour},
        ]
        assert first["system"][-1]["cache_control"] == hour
        [result] = last["messages"][-1]["content"]
        assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_2"
        assert "first note" in json.dumps(result["content"])
        assert result["cache_control"] == hour

        count = len(server.requests)
        edit = {
            "command": "str_replace",
            "path": "/notes.md",
            "old_str": "first",
            "new_str": "second",
        }
        server.json(openai_completion(None, ("call_1", "str_replace_based_edit_tool", edit)))
        server.json(openai_completion("Changed."))
        done = run_plait(
            tmp_path,
            "--model",
            "openai:gpt-4.1",
            "Make it the second note.",
            env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.url + "/v1"},
        )
        assert done.returncode == 0, done.stderr
        assert "Changed." in done.stdout
        assert "prompt caching needs an Anthropic model" in done.stderr
        assert (work / "notes.md").read_text(encoding="utf-8") == "second note\n"
        body = server.requests[count].body
        assert "cache_control" not in json.dumps(body)
        functions = {t["function"]["name"]: t["function"] for t in body["tools"]}
        assert set(functions) == {"str_replace_based_edit_tool", "bash"}
        editor = functions["str_replace_based_edit_tool"]["parameters"]
        assert editor["properties"]["command"]["enum"] == [
            "view",
            "create",
            "str_replace",
            "insert",
        ]
        assert {"command", "path"} <= set(editor["required"])
        assert "command" in functions["bash"]["parameters"]["properties"]
    finally:
        server.close()
