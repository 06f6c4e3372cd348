"""``skills`` with ``shell_tool``: a skill's scripts run through the agent's own shell tool
(``anthropic_bash``'s ``bash``), in its bubblewrap sandbox when it has one, and their
output reaches the model as that tool's message; refused at create_agent without a shell
or when the sandbox does not show the skills.

The sandboxed tests skip where bwrap cannot make a sandbox, except under
``PLAIT_REQUIRE_SANDBOX=1`` (CI), where that is a failure."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shell_support import reachable, requires_sandbox, workspace

from plait.errors import ConfigError
from plait.messages import ToolMessage
from plait.testing import ai, call, tool_answers
from plait_skills import SkillsMiddleware

DATA = Path(__file__).parent / "data"
SKILLS = (DATA / "skills").resolve()
sandboxed = requires_sandbox()


@pytest.fixture
def tmp_path(tmp_path: Path) -> Iterator[Path]:
    yield from reachable(tmp_path)


def _how_to_run(folder: Path) -> str:
    return (
        f"The skill's folder on disk is {folder}; the paths in its instructions are relative "
        "to it. Run its scripts with the `bash` tool by their full path, e.g. "
        f"`python3 {folder}/scripts/fill.py`."
    )


def _sent_to_model(agent: Any, call_id: str) -> ToolMessage:
    """The tool message the model was sent for ``call_id`` at its last call."""
    (message,) = [
        m
        for m in agent.model.requests[-1].messages
        if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    ]
    return message


def test_a_skills_script_runs_through_the_agents_bash_tool(
    make_agent: Any, make_bash: Any, tmp_path: Path
) -> None:
    folder = SKILLS / "pdf-forms"
    agent = make_agent(
        [
            ai("", call("load_skill", "c1", name="pdf-forms")),
            ai("", call("bash", "c2", command=f"python3 {folder}/scripts/fill.py tax.pdf me")),
            "done",
        ],
        middleware=[
            make_bash(workspace_root=str(tmp_path)),
            SkillsMiddleware(paths=[str(SKILLS)], shell_tool="bash"),
        ],
    )
    result = agent.invoke("fill my tax form")
    answers = tool_answers(result.messages)
    assert answers["c1"].text.endswith(
        "Files of this skill (load one with load_skill(name, file)):\n"
        "- reference/fields.md\n- scripts/fill.py\n\n" + _how_to_run(folder)
    )
    ran = _sent_to_model(agent, "c2")
    assert (ran.name, ran.status, ran.text) == ("bash", "success", "filled tax.pdf with me")


@sandboxed
def test_in_the_sandbox_a_skills_script_runs_and_cannot_change_its_skill(
    make_agent: Any, make_bash: Any, tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    shutil.copytree(SKILLS, skills)
    folder = skills / "pdf-forms"
    agent = make_agent(
        [
            ai("", call("load_skill", "c1", name="pdf-forms")),
            ai("", call("bash", "c2", command=f"python3 {folder}/scripts/fill.py tax.pdf me")),
            ai("", call("bash", "c3", command=f"echo tampered > {folder}/scripts/fill.py")),
            "done",
        ],
        middleware=[
            make_bash(
                workspace_root=str(workspace(tmp_path)),
                sandbox="bubblewrap",
                sandbox_read_only=[str(skills)],
            ),
            SkillsMiddleware(paths=[str(skills)], shell_tool="bash"),
        ],
    )
    result = agent.invoke("fill my tax form")
    assert tool_answers(result.messages)["c1"].text.endswith(_how_to_run(folder))
    ran = _sent_to_model(agent, "c2")
    assert (ran.name, ran.status, ran.text) == ("bash", "success", "filled tax.pdf with me")
    refused = _sent_to_model(agent, "c3")
    assert "Read-only file system" in refused.text
    assert refused.text.endswith("[exit code 1]")
    assert (folder / "scripts" / "fill.py").read_text() == (
        SKILLS / "pdf-forms" / "scripts" / "fill.py"
    ).read_text()


@sandboxed
def test_skills_the_sandbox_does_not_show_are_refused_at_create_agent(
    make_agent: Any, make_bash: Any, tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    shutil.copytree(SKILLS, skills)
    bash = make_bash(workspace_root=str(workspace(tmp_path)), sandbox="bubblewrap")
    with pytest.raises(ConfigError) as caught:
        make_agent(middleware=[bash, SkillsMiddleware(paths=[str(skills)], shell_tool="bash")])
    assert str(caught.value) == (
        f"plugin 'skills': option 'shell_tool': expected skills the shell can see, got "
        f"'{skills.resolve()}' (the 'bash' tool's sandbox does not show it: add it to its "
        "read-only directories, anthropic_bash's sandbox_read_only)"
    )


def test_scripts_without_a_shell_tool_are_refused_at_create_agent(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        make_agent(middleware=[SkillsMiddleware(paths=[str(SKILLS)], shell_tool="bash")])
    assert str(caught.value) == (
        "plugin 'skills': option 'shell_tool': expected the name of the agent's shell tool "
        "(anthropic_bash's 'bash'), got 'bash'; the agent's tools are: load_skill"
    )


def test_a_skill_in_a_disk_backend_is_run_from_its_folder(
    make_agent: Any, make_bash: Any, tmp_path: Path
) -> None:
    shutil.copytree(SKILLS, tmp_path / "skills")
    folder = tmp_path.resolve() / "skills" / "pdf-forms"
    agent = make_agent(
        [ai("", call("load_skill", "c1", name="pdf-forms")), "done"],
        middleware=[
            make_bash(workspace_root=str(tmp_path)),
            SkillsMiddleware(backend=f"disk:{tmp_path}", shell_tool="bash"),
        ],
    )
    result = agent.invoke("fill my tax form")
    assert tool_answers(result.messages)["c1"].text.endswith(_how_to_run(folder))


def test_a_skill_in_thread_state_says_its_scripts_cannot_run(
    make_agent: Any, make_bash: Any, tmp_path: Path
) -> None:
    skill = "---\nname: haiku\ndescription: Answer in a haiku.\n---\nRun scripts/count.py."
    script = "/skills/haiku/scripts/count.py"
    agent = make_agent(
        [
            ai("", call("write_file", "w1", file_path="/skills/haiku/SKILL.md", content=skill)),
            ai("", call("write_file", "w2", file_path=script, content="")),
            ai("", call("load_skill", "c1", name="haiku")),
            "done",
        ],
        middleware=[
            "filesystem",
            make_bash(workspace_root=str(tmp_path)),
            SkillsMiddleware(backend="state", shell_tool="bash"),
        ],
    )
    result = agent.invoke("make a skill")
    assert tool_answers(result.messages)["c1"].text == (
        "Run scripts/count.py.\n\nFiles of this skill (load one with load_skill(name, file)):\n"
        "- scripts/count.py\n\nThis skill is not in a folder on disk, so the `bash` tool "
        "cannot run its scripts; read them with load_skill(name, file)."
    )


def test_the_async_path_runs_a_skills_script_alike(
    make_agent: Any, make_bash: Any, tmp_path: Path
) -> None:
    folder = SKILLS / "pdf-forms"
    agent = make_agent(
        [
            ai("", call("load_skill", "c1", name="pdf-forms")),
            ai("", call("bash", "c2", command=f"python3 {folder}/scripts/fill.py a.pdf b")),
            "done",
        ],
        middleware=[
            make_bash(workspace_root=str(tmp_path)),
            SkillsMiddleware(paths=[str(SKILLS)], shell_tool="bash"),
        ],
    )
    asyncio.run(agent.ainvoke("fill"))
    assert _sent_to_model(agent, "c2").text == "filled a.pdf with b"
