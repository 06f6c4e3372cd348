"""``skills``: SKILL.md folders listed by name and description, loaded on demand with their
files, tools a skill brings offered once it is loaded, skills written into a backend while
the agent runs, and broken skills or options refused at create_agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.errors import ConfigError
from plait.testing import ai, call, tool_answers
from plait_skills import STATE_KEY, SkillsMiddleware

DATA = Path(__file__).parent / "data"
SKILLS = str(DATA / "skills")

filled: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    filled.clear()


def fill_form(form: str) -> str:
    """Fill a PDF form.

    Args:
        form: the form's file name.
    """
    filled.append(form)
    return f"filled {form}"


@plait.tool
def search(q: str) -> str:
    """Search the web.

    Args:
        q: the query.
    """
    return f"results for {q}"


def load(call_id: str, name: str, **more: Any) -> Any:
    return call("load_skill", call_id, name=name, **more)


def test_the_prompt_lists_names_and_descriptions_not_bodies(make_agent: Any) -> None:
    agent = make_agent(
        ["hi"], system_prompt="Be brief.", middleware=[SkillsMiddleware(paths=[SKILLS])]
    )
    agent.invoke("hello")
    prompt = agent.model.requests[0].system_prompt
    assert prompt.startswith("Be brief.\n\n## Skills")
    assert (
        "- `pdf-forms`: Fill in PDF forms from data the user gives. Use when asked to "
        "complete a form." in prompt
    )
    assert (
        "- `release-notes`: Write release notes from a list of merged changes. Use for "
        "changelogs." in prompt
    )
    assert "not-a-skill" not in prompt
    assert "Filling PDF forms" not in prompt  # the body waits for load_skill
    assert "load_skill" in {tool.name for tool in agent.model.requests[0].tools}


def test_load_skill_returns_the_body_and_lists_the_files(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", load("c1", "pdf-forms")),
            ai("", load("c2", "pdf-forms", file="reference/fields.md")),
            "done",
        ],
        middleware=[("skills", {"paths": [SKILLS]})],
    )
    result = agent.invoke("fill my form", thread_id="t")
    answers = tool_answers(result.messages)
    body = answers["c1"].text
    assert body.startswith("# Filling PDF forms\n\n1. Read `reference/fields.md`")
    assert "name: pdf-forms" not in body
    assert "- reference/fields.md\n- scripts/fill.py" in body
    folder = (DATA / "skills" / "pdf-forms").resolve()
    assert body.endswith(f"The skill's folder on disk (to run its scripts): {folder}")
    assert answers["c2"].text == (DATA / "skills/pdf-forms/reference/fields.md").read_text()
    assert result.state[STATE_KEY] == ["pdf-forms"]
    assert agent.get_state("t")[STATE_KEY] == ["pdf-forms"]


def test_a_file_outside_the_skill_and_an_unknown_skill_are_errors_the_model_reads(
    make_agent: Any,
) -> None:
    agent = make_agent(
        [
            ai(
                "",
                load("c1", "pdf-forms", file="../release-notes/SKILL.md"),
                load("c2", "pdf-form"),
                load("c3", "pdf-forms", file="missing.md"),
            ),
            "done",
        ],
        middleware=[SkillsMiddleware(paths=[SKILLS])],
    )
    answers = tool_answers(agent.invoke("go").messages)
    assert answers["c1"].status == "error"
    assert answers["c1"].text == (
        "Error: '../release-notes/SKILL.md' is not a file of the skill 'pdf-forms'; give a "
        "path relative to its folder, e.g. 'reference.md'"
    )
    assert answers["c2"].text == (
        "Error: there is no skill named 'pdf-form'. The skills are: pdf-forms, release-notes."
    )
    assert answers["c3"].status == "error"
    assert "missing.md" in answers["c3"].text


def test_a_missing_file_is_answered_with_the_skills_files(make_agent: Any) -> None:
    # The model gave a path relative to the skill: the answer stays in those terms.
    agent = make_agent(
        [ai("", load("c1", "pdf-forms", file="missing.md")), "done"],
        middleware=[SkillsMiddleware(paths=[SKILLS])],
    )
    answer = tool_answers(agent.invoke("go").messages)["c1"]
    assert answer.status == "error"
    assert answer.text == (
        "Error: the skill 'pdf-forms' has no file 'missing.md'; its files are: "
        "reference/fields.md, scripts/fill.py"
    )


def test_a_later_directory_replaces_a_skill_of_the_same_name(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", load("c1", "release-notes")), "done"],
        middleware=[SkillsMiddleware(paths=[SKILLS, str(DATA / "more")])],
    )
    result = agent.invoke("notes please")
    prompt = agent.model.requests[0].system_prompt
    assert "house style (replaces the shared skill)" in prompt
    assert "Use for changelogs" not in prompt
    assert tool_answers(result.messages)["c1"].text == "One line per change, newest first."


def test_a_skills_tools_are_offered_once_it_is_loaded(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", load("c1", "pdf-forms")),
            ai("", call("fill_form", "c2", form="w9.pdf")),
            "filled",
            "again",
        ],
        tools=[search],
        middleware=[
            SkillsMiddleware(
                paths=[SKILLS], skill_tools={"pdf-forms": [fill_form], "release-notes": ["search"]}
            )
        ],
    )
    agent.invoke("fill w9.pdf", thread_id="t")
    offered = [{tool.name for tool in request.tools} for request in agent.model.requests]
    assert offered[0] == {"load_skill"}
    assert offered[1] == offered[2] == {"load_skill", "fill_form"}
    assert filled == ["w9.pdf"]
    agent.invoke("more", thread_id="t")  # loaded in the thread: still offered next turn
    assert {tool.name for tool in agent.model.requests[3].tools} == {"load_skill", "fill_form"}


def test_skills_written_into_a_backend_are_listed_at_the_next_model_call(make_agent: Any) -> None:
    skill = "---\nname: haiku\ndescription: Answer in a haiku.\n---\nThree lines: 5, 7, 5."
    agent = make_agent(
        [
            ai("", call("write_file", "w1", file_path="/skills/haiku/SKILL.md", content=skill)),
            ai("", load("c1", "haiku")),
            "done",
        ],
        middleware=["filesystem", SkillsMiddleware(paths=[SKILLS], backend="state")],
    )
    result = agent.invoke("make a skill")
    prompts = [request.system_prompt for request in agent.model.requests]
    assert "`haiku`" not in prompts[0]
    assert "- `haiku`: Answer in a haiku." in prompts[1]
    assert "- `pdf-forms`" in prompts[1]
    assert tool_answers(result.messages)["c1"].text == "Three lines: 5, 7, 5."


def test_a_skill_half_written_into_a_backend_is_left_out(make_agent: Any) -> None:
    agent = make_agent(
        [
            ai("", call("write_file", "w1", file_path="/skills/x/SKILL.md", content="no front")),
            "done",
        ],
        middleware=["filesystem", SkillsMiddleware(backend="state")],
    )
    agent.invoke("go")
    assert "## Skills" not in (agent.model.requests[1].system_prompt or "")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {},
            "plugin 'skills': option 'paths': expected at least one directory of skills (or "
            "a backend), got none",
        ),
        (
            {"paths": [str(DATA / "nowhere")]},
            f"plugin 'skills': option 'paths': expected existing directories, got "
            f"'{DATA / 'nowhere'}'",
        ),
        (
            {"paths": [str(DATA / "broken")]},
            f"plugin 'skills': option 'paths': skill in {DATA / 'broken'}: "
            "/wrong-name/SKILL.md: 'name': expected the name of its folder, got 'right-name' "
            "(the folder is 'wrong-name')",
        ),
        (
            {"paths": [SKILLS], "skill_tools": {"pdf": ["search"]}},
            "plugin 'skills': option 'skill_tools': expected the name of a skill, got 'pdf' "
            "(skills: pdf-forms, release-notes)",
        ),
        (
            {"paths": [SKILLS], "skill_tools": {"pdf-forms": "search"}},
            "plugin 'skills': option \"skill_tools['pdf-forms']\": expected a list, got 'search'",
        ),
        (
            {"paths": [SKILLS], "max_file_chars": 0},
            "plugin 'skills': option 'max_file_chars': expected an int >= 1, got 0",
        ),
        (
            {"paths": [SKILLS], "backend": "state", "sources": ["skills"]},
            "plugin 'skills': option 'sources': invalid path 'skills': it must be absolute",
        ),
    ],
)
def test_bad_options_fail_at_create_agent(make_agent: Any, options: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], tools=[search], middleware=[("skills", options)])
    assert message in str(info.value)


def test_invalid_yaml_and_unknown_tool_names_fail_at_create_agent(make_agent: Any) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[SkillsMiddleware(paths=[str(DATA / "broken-yaml")])])
    assert "/notes/SKILL.md: the front matter is not valid YAML" in str(info.value)
    with pytest.raises(ConfigError) as info:
        make_agent(
            ["hi"],
            tools=[search],
            middleware=[SkillsMiddleware(paths=[SKILLS], skill_tools={"pdf-forms": ["serch"]})],
        )
    assert (
        "plugin 'skills': option 'skill_tools' names a tool the agent does not have: 'serch'"
        in str(info.value)
    )


def test_the_async_path_loads_skills_alike(make_agent: Any) -> None:
    agent = make_agent(
        [ai("", load("c1", "release-notes")), "done"], middleware=[SkillsMiddleware(paths=[SKILLS])]
    )
    result = asyncio.run(agent.ainvoke("notes"))
    assert tool_answers(result.messages)["c1"].text == (
        "Group the changes under Added, Changed and Fixed."
    )
    assert result.state[STATE_KEY] == ["release-notes"]
