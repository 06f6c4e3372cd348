"""``agents_md``: AGENTS.md files from the project root down to the working folder in the
system prompt (nearest last and winning, cut to a budget keeping the nearest), nested ones
listed, the update tool appending notes within the backend's sandbox, and bad options
refused at create_agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from plait.errors import ConfigError
from plait.testing import ai, call, tool_answers
from plait_agents_md import DEFAULT_TOOL_DESCRIPTION, AgentsMdMiddleware

ROOT = "Use uv. Run the tests with `pytest -q`."
API = "Keep every handler async."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "packages" / "api").mkdir(parents=True)
    (root / "packages" / "web").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "AGENTS.md").write_text(ROOT + "\n")
    (root / "packages" / "api" / "AGENTS.md").write_text(API + "\n")
    (root / "packages" / "web" / "AGENTS.md").write_text("Use TypeScript.\n")
    (root / "docs" / "AGENTS.md").write_text("Write in British English.\n")
    return root


def middleware(project: Path, **options: Any) -> AgentsMdMiddleware:
    return AgentsMdMiddleware(backend=f"disk:{project}", **options)


def test_root_to_working_folder_nearest_last(make_agent: Any, project: Path) -> None:
    agent = make_agent(
        ["hi"],
        system_prompt="Be brief.",
        middleware=[middleware(project, directory="/packages/api")],
    )
    agent.invoke("hello")
    prompt = agent.model.requests[0].system_prompt
    assert prompt.startswith("Be brief.\n\n## Project instructions (AGENTS.md)")
    assert "the one nearer to your working folder (listed later)\nwins" in prompt
    assert prompt.endswith(f"### /AGENTS.md\n\n{ROOT}\n\n### /packages/api/AGENTS.md\n\n{API}")
    assert "TypeScript" not in prompt  # a sibling folder's file does not apply


def test_files_below_the_working_folder_are_listed_not_loaded(
    make_agent: Any, project: Path
) -> None:
    agent = make_agent(["hi"], middleware=[middleware(project)])
    agent.invoke("hello")
    prompt = agent.model.requests[0].system_prompt
    assert f"### /AGENTS.md\n\n{ROOT}" in prompt
    assert API not in prompt
    assert prompt.endswith(
        "read the one nearest to a file before changing it:\n"
        "- /docs/AGENTS.md\n- /packages/api/AGENTS.md\n- /packages/web/AGENTS.md"
    )
    quiet = make_agent(["hi"], middleware=[middleware(project, nested=False)])
    quiet.invoke("hello")
    assert "/docs/AGENTS.md" not in quiet.model.requests[0].system_prompt


def test_the_budget_keeps_the_nearest_file_first(make_agent: Any, project: Path) -> None:
    budget = len(API) + 10
    agent = make_agent(
        ["hi"], middleware=[middleware(project, directory="/packages/api", max_chars=budget)]
    )
    agent.invoke("hello")
    prompt = agent.model.requests[0].system_prompt
    assert f"### /packages/api/AGENTS.md\n\n{API}" in prompt
    assert (
        f"### /AGENTS.md\n\n{ROOT[:10]}\n\n[cut: /AGENTS.md has {len(ROOT)} characters; shown: 10]"
        in prompt
    )
    tight = make_agent(
        ["hi"], middleware=[middleware(project, directory="/packages/api", max_chars=len(API))]
    )
    tight.invoke("hello")
    assert "### /AGENTS.md" not in tight.model.requests[0].system_prompt


def test_no_agents_md_adds_nothing(make_agent: Any, tmp_path: Path) -> None:
    agent = make_agent(["hi"], system_prompt="Be brief.", middleware=[middleware(tmp_path)])
    agent.invoke("hello")
    assert agent.model.requests[0].system_prompt == "Be brief."
    assert not agent.model.requests[0].tools


def test_the_agent_records_what_it_learned_and_sees_it_next_call(
    make_agent: Any, project: Path
) -> None:
    note = "The API tests need `--runslow` for the database cases."
    agent = make_agent(
        [ai("", call("update_agents_md", "u1", note=note)), "noted"],
        middleware=[middleware(project, directory="/packages/api", update_tool=True)],
    )
    result = agent.invoke("remember that")
    assert tool_answers(result.messages)["u1"].text == "Recorded in /packages/api/AGENTS.md."
    assert (project / "packages/api/AGENTS.md").read_text() == f"{API}\n\n{note}\n"
    assert f"{API}\n\n{note}" in agent.model.requests[1].system_prompt
    tool = {t.name: t for t in agent.model.requests[0].tools}["update_agents_md"]
    assert tool.description == DEFAULT_TOOL_DESCRIPTION


def test_updates_stay_inside_the_project(make_agent: Any, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "AGENTS.md").write_text("secret\n")
    (project / "linked").symlink_to(outside)
    agent = make_agent(
        [
            ai(
                "",
                call("update_agents_md", "u1", note="x", path="/../outside/AGENTS.md"),
                call("update_agents_md", "u2", note="x", path="/linked/AGENTS.md"),
                call("update_agents_md", "u3", note="x", path="/README.md"),
                call("update_agents_md", "u4", note="First note.", path="/docs/new/AGENTS.md"),
            ),
            "done",
        ],
        middleware=[middleware(project, directory="/linked", update_tool=True)],
    )
    answers = tool_answers(agent.invoke("go").messages)
    assert answers["u1"].status == "error"
    assert "'..' segments are not allowed" in answers["u1"].text
    assert answers["u2"].text == (
        "Error: invalid path '/linked/AGENTS.md': it resolves outside the backend's root "
        "(through a symbolic link)"
    )
    assert (outside / "AGENTS.md").read_text() == "secret\n"
    assert answers["u3"].text == (
        "Error: /README.md is not an AGENTS.md file; give the path of one, e.g. '/AGENTS.md' "
        "or '/docs/AGENTS.md'"
    )
    assert not (project / "README.md").exists()
    assert answers["u4"].text == "Recorded in /docs/new/AGENTS.md."
    assert (project / "docs/new/AGENTS.md").read_text() == "First note.\n"
    # the linked folder's AGENTS.md, outside the root, is never loaded
    assert "secret" not in agent.model.requests[0].system_prompt


def test_agents_md_in_thread_state_with_the_filesystem_plugin(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", call("write_file", "w1", file_path="/AGENTS.md", content="Be kind.")),
            ai("", call("update_agents_md", "u1", note="Prefer tables.")),
            "done",
        ],
        middleware=["filesystem", AgentsMdMiddleware(backend="state", update_tool=True)],
    )
    result = agent.invoke("go", thread_id="t")
    prompts = [request.system_prompt or "" for request in agent.model.requests]
    assert "AGENTS.md" not in prompts[0]
    assert "### /AGENTS.md\n\nBe kind." in prompts[1]
    assert prompts[2].endswith("### /AGENTS.md\n\nBe kind.\n\nPrefer tables.")
    assert result.state["files"]["/AGENTS.md"]["content"] == "Be kind.\n\nPrefer tables.\n"


def test_the_async_path_reads_and_records_alike(make_agent: Any, project: Path) -> None:
    agent = make_agent(
        [ai("", call("update_agents_md", "u1", note="Async note.")), "ok"],
        middleware=[middleware(project, update_tool=True)],
    )
    asyncio.run(agent.ainvoke("go"))
    assert (project / "AGENTS.md").read_text() == f"{ROOT}\n\nAsync note.\n"
    assert f"{ROOT}\n\nAsync note." in agent.model.requests[1].system_prompt


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"directory": "packages"},
            "plugin 'agents_md': option 'directory': invalid path 'packages': it must be absolute",
        ),
        (
            {"max_chars": 0},
            "plugin 'agents_md': option 'max_chars': expected an int >= 1, got 0",
        ),
        (
            {"backend": "disk"},
            "plugin 'agents_md': option 'backend': expected a Backend (an object with "
            "bind(runtime)) or one of",
        ),
        (
            {"backend": "store"},
            "plugin 'agents_md': option 'backend': a StoreBackend needs the agent's store",
        ),
        (
            {"update_tool": "yes"},
            "plugin 'agents_md': option 'update_tool': expected a bool, got 'yes'",
        ),
    ],
)
def test_bad_options_fail_at_create_agent(make_agent: Any, options: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("agents_md", options)])
    assert message in str(info.value)
