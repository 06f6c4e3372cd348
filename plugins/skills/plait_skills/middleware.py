"""``skills``: Agent Skills folders the model sees by name and loads on demand.

Progressive disclosure: every model call's system prompt lists each skill's name and
description only; the ``load_skill`` tool returns a skill's instructions (the body of its
``SKILL.md``) with the list of its other files, and one of those files when asked. Skills
in directories on disk (``paths``) are read once, at ``create_agent``, so a broken
``SKILL.md`` fails there; skills in a backend (``backend`` + ``sources``: thread state, the
store) are read at each model call, since the agent may write them while it runs.

A skill can bring tools (``skill_tools``): they are offered to the model only once it has
loaded that skill in the thread (the ``skills_loaded`` state key), so a long catalogue of
skills does not flood every call with tool schemas.

A skill's scripts run through the agent's own shell tool (``shell_tool``, e.g.
``anthropic_bash``'s ``bash``), never a shell of this plugin's: ``load_skill`` gives the
skill's folder on disk and says to run the scripts there with that tool, so the shell's
sandbox, command lists and every guard on that tool (``human_in_the_loop``,
``tool_call_limit``) apply to them as to any command. ``create_agent`` checks that the tool
exists and that its shell sees the skills' folders (a middleware owning a shell answers
``shell_sees(path)``; ``anthropic_bash`` does).
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from plait.backends import BackendError, DiskBackend, check_path, resolve_backend
from plait.errors import ConfigError
from plait.lazy import frozen
from plait.messages import ToolCall, ToolMessage
from plait.middleware import RequestMiddleware
from plait.options import FieldError, check_tool_names, expected, integer, non_empty_string
from plait.tools import Tool
from plait.types import AgentConfig, Command, ModelRequest, StateField, ToolRuntime
from plait_skills.skill import SKILL_FILE, Skill, SkillError, discover, parse_skill

__all__ = ["DEFAULT_SYSTEM_PROMPT", "STATE_KEY", "TOOL_NAME", "SkillsMiddleware"]

TOOL_NAME = "load_skill"
"""The name of the tool the model loads a skill with."""
STATE_KEY = "skills_loaded"
"""The state key listing the skills loaded on the thread."""

DEFAULT_SYSTEM_PROMPT = """## Skills

You have skills: folders of instructions, and sometimes scripts and reference files, for
particular kinds of work. Only their names and what they are for are listed here:

{skills}

When a request matches a skill, call `load_skill` with its name before you start, and
follow the instructions it returns. They may point to other files of the skill: load one
with `load_skill(name, file)`. Load a skill only when the task needs it."""
"""The system-prompt section listing the skills (``{skills}``), unless ``system_prompt`` is
given."""

DEFAULT_TOOL_DESCRIPTION = """Load a skill: its instructions, and the list of its files.

Give the skill's `name` from the list in your instructions. To read one of the skill's
other files (a reference, a template, a script), give its path relative to the skill's
folder as `file`, e.g. "reference/forms.md"."""
"""The description of ``load_skill`` the model reads, unless ``tool_description`` is given."""

ToolLike = str | Tool | Callable[..., Any]


def _paths(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _check_paths(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not all(isinstance(p, str) and p for p in value):
        raise FieldError(attribute.name, expected("a list of directory paths", value))
    for path in value:
        if not os.path.isdir(path):
            raise FieldError(attribute.name, expected("existing directories", path))


def _check_sources(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not all(isinstance(p, str) for p in value):
        raise FieldError(attribute.name, expected("a list of absolute paths", value))
    for path in value:
        try:
            check_path(path)
        except BackendError as error:
            raise FieldError(attribute.name, str(error).removeprefix("Error: ")) from None


def _backend(value: Any) -> Any:
    return None if value is None else resolve_backend(value, ("skills",))


def _skill_tools(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    return {
        name: tuple(tools) if isinstance(tools, list) else tools for name, tools in value.items()
    }


def _check_skill_tools(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    wanted = "a mapping of skill names to lists of tool names, plait.Tool objects or functions"
    if not isinstance(value, Mapping) or not all(
        isinstance(name, str)
        and isinstance(tools, tuple)
        and all(isinstance(t, Tool) or (isinstance(t, str) and t) or callable(t) for t in tools)
        for name, tools in value.items()
    ):
        raise FieldError(attribute.name, expected(wanted, value))


def _optional_name(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise FieldError(attribute.name, expected("a tool name or None", value))


def _runtime(request: ModelRequest) -> ToolRuntime | None:
    """A backend binds to a tool call's runtime; a model call has the same state and
    runtime, and no call of its own."""
    if request.runtime is None:
        return None
    return ToolRuntime(
        tool_call=ToolCall(TOOL_NAME, {}, id="skills"), state=request.state, runtime=request.runtime
    )


@frozen(kw_only=True)
class SkillsMiddleware(RequestMiddleware):
    """Lists the skills found under ``paths`` (and ``sources`` of ``backend``) in the
    system prompt and gives the model a ``load_skill`` tool to read one when it needs it."""

    paths: tuple[str, ...] = attrs.field(default=(), converter=_paths, validator=_check_paths)
    """Directories on disk whose sub-folders with a ``SKILL.md`` are skills. A skill of a
    later directory replaces one of the same name in an earlier one."""
    backend: Any = attrs.field(default=None, converter=_backend)
    """A ``plait.backends`` backend (or "state", "store[:NS]", "disk:/path") holding more
    skills under ``sources``; read at each model call. ``None``: none."""
    sources: tuple[str, ...] = attrs.field(
        default=("/skills",), converter=_paths, validator=_check_sources
    )
    """The directories of ``backend`` whose sub-folders are skills (later ones win)."""
    skill_tools: dict[str, tuple[ToolLike, ...]] = attrs.field(
        factory=dict, converter=_skill_tools, validator=_check_skill_tools
    )
    """Tools a skill brings, by skill name: names of the agent's tools, ``plait.Tool``
    objects or functions. They are offered only after the skill is loaded in the thread."""
    system_prompt: str = attrs.field(default=DEFAULT_SYSTEM_PROMPT, validator=non_empty_string())
    """The section listing the skills; ``{skills}`` is replaced with the list."""
    tool_description: str = attrs.field(
        default=DEFAULT_TOOL_DESCRIPTION, validator=non_empty_string()
    )
    """The ``load_skill`` description the model reads."""
    max_file_chars: int = attrs.field(default=50_000, validator=integer(minimum=1))
    """A skill file longer than this is cut, with a note saying so."""
    shell_tool: str | None = attrs.field(default=None, validator=_optional_name)
    """The agent's shell tool that runs a skill's scripts (``anthropic_bash``'s "bash");
    ``load_skill`` then tells the model to run them with it, from the skill's folder.
    None: scripts are files the model can read, and nothing runs them."""

    _static: dict[str, Skill] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    _hidden: dict[str, frozenset[str]] = attrs.field(init=False, factory=dict, eq=False, repr=False)

    def state_fields(self) -> dict[str, StateField]:
        return {STATE_KEY: StateField(default=[], scope="thread")}

    # -- build time -------------------------------------------------------------------------

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        if not self.paths and self.backend is None:
            raise ConfigError(
                "expected at least one directory of skills (or a backend), got none",
                option="paths",
            )
        for path in self.paths:
            disk = DiskBackend(path)
            try:
                found = discover(disk.bind(), disk, "/", disk_root=str(disk.root), strict=True)
            except SkillError as error:
                raise ConfigError(f"skill in {path}: {error}", option="paths") from None
            self._static.update(found)
        added: list[Tool] = []
        for skill, tools in self.skill_tools.items():
            if self.backend is None and skill not in self._static:
                known = ", ".join(sorted(self._static)) or "none"
                raise ConfigError(
                    f"{expected('the name of a skill', skill)} (skills: {known})",
                    option="skill_tools",
                )
            names: set[str] = set()
            for item in tools:
                if isinstance(item, str):
                    check_tool_names([item], agent_config, option="skill_tools")
                    names.add(item)
                else:
                    tool = item if isinstance(item, Tool) else Tool.from_function(item)
                    added.append(tool)
                    names.add(tool.name)
            self._hidden[skill] = frozenset(names)
        return [
            *added,
            Tool.from_function(
                self._load_tool(), name=TOOL_NAME, description=self.tool_description
            ),
        ]

    def validate_agent(self, agent_config: AgentConfig) -> None:
        if self.shell_tool is None:
            return
        tools = sorted(tool.name for tool in agent_config.tools)
        if self.shell_tool not in tools:
            wanted = "the name of the agent's shell tool (anthropic_bash's 'bash')"
            raise ConfigError(
                f"{expected(wanted, self.shell_tool)}; the agent's tools are: {', '.join(tools)}",
                option="shell_tool",
            )
        # Skill folders are shown to the model by their real path (a disk backend's root
        # is resolved), so that is the path the shell must find.
        roots = [os.path.realpath(path) for path in self.paths]
        if isinstance(self.backend, DiskBackend):
            roots.append(str(self.backend.root))
        for other in agent_config.middleware:
            sees = getattr(other, "shell_sees", None)
            if not callable(sees):
                continue
            for root in roots:
                if not sees(root):
                    raise ConfigError(
                        f"{expected('skills the shell can see', root)} (the "
                        f"{self.shell_tool!r} tool's sandbox does not show it: add it to "
                        "its read-only directories, anthropic_bash's sandbox_read_only)",
                        option="shell_tool",
                    )

    # -- the catalogue ----------------------------------------------------------------------

    def _catalogue(self, runtime: ToolRuntime | None) -> dict[str, Skill]:
        skills = dict(self._static)
        if self.backend is not None and runtime is not None:
            files = self.backend.bind(runtime)
            root = str(self.backend.root) if isinstance(self.backend, DiskBackend) else None
            for source in self.sources:
                skills.update(discover(files, self.backend, source, disk_root=root, strict=False))
        return skills

    def _load_tool(self) -> Callable[..., Any]:
        catalogue = self._catalogue
        limit = self.max_file_chars
        shell = self.shell_tool

        def load_skill(
            name: str, runtime: ToolRuntime, file: str | None = None
        ) -> ToolMessage | Command:
            """Load a skill's instructions, or one of its files.

            Args:
                name: the skill's name, as listed in your instructions.
                file: a file of the skill, relative to its folder; leave it out to load
                    the skill's instructions.
            """
            skills = catalogue(runtime)
            skill = skills.get(name)
            if skill is None:
                known = ", ".join(sorted(skills)) or "none"
                return ToolMessage.error(
                    runtime.tool_call,
                    f"Error: there is no skill named {name!r}. The skills are: {known}.",
                    name=TOOL_NAME,
                )
            files = skill.backend.bind(runtime)
            try:
                if file is not None:
                    return ToolMessage(
                        _cut(_read_file(files, skill, file), limit),
                        tool_call_id=runtime.tool_call_id,
                        name=TOOL_NAME,
                    )
                _, body = parse_skill(files.read_text(f"{skill.folder}/{SKILL_FILE}"), skill.folder)
                listing = _files(files, skill.folder)
            except (BackendError, SkillError) as error:
                return ToolMessage.error(runtime.tool_call, str(error), name=TOOL_NAME)
            text = _cut(body.strip(), limit)
            if listing:
                text += "\n\nFiles of this skill (load one with load_skill(name, file)):\n"
                text += "\n".join(f"- {path}" for path in listing)
            if listing and shell is not None:
                text += _how_to_run(skill, listing, shell)
            elif listing and skill.disk_folder is not None:
                text += f"\n\nThe skill's folder on disk (to run its scripts): {skill.disk_folder}"
            message = ToolMessage(text, tool_call_id=runtime.tool_call_id, name=TOOL_NAME)
            loaded = list(runtime.state.get(STATE_KEY) or [])
            if name in loaded:
                return message
            return Command(update={STATE_KEY: [*loaded, name], "messages": [message]})

        return load_skill

    # -- the prompt -------------------------------------------------------------------------

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        skills = self._catalogue(_runtime(request))
        loaded = set(request.state.get(STATE_KEY) or ())
        hidden = set().union(
            *(names for skill, names in self._hidden.items() if skill not in loaded)
        )
        if hidden:
            request = request.override(tools=[t for t in request.tools if t.name not in hidden])
        if not skills:
            return request
        listing = "\n".join(f"- `{s.name}`: {s.description}" for s in skills.values())
        return request.with_prompt_section(
            self.system_prompt.replace("{skills}", listing), when_tools={TOOL_NAME}
        )


def _inside(skill: Skill, file: str) -> str:
    """``file`` (relative to the skill's folder) as a backend path, refused if it leaves
    the folder: a skill's files are what the skill offers, not the whole backend."""
    joined = posixpath.normpath(posixpath.join(skill.folder, file.lstrip("/")))
    if not (joined + "/").startswith(skill.folder.rstrip("/") + "/") or joined == skill.folder:
        raise BackendError(
            f"Error: {file!r} is not a file of the skill {skill.name!r}; give a path "
            "relative to its folder, e.g. 'reference.md'"
        )
    return joined


def _read_file(files: Any, skill: Skill, file: str) -> str:
    """The text of the skill's ``file``. A file the skill does not have is answered in the
    skill's own terms (its files, relative to its folder), not with the backend's path."""
    path = _inside(skill, file)
    try:
        text: str = files.read_text(path)
    except BackendError:
        listing = _files(files, skill.folder)
        if path.removeprefix(skill.folder.rstrip("/") + "/") in listing:
            raise
        known = ", ".join(listing) or "none besides SKILL.md"
        raise BackendError(
            f"Error: the skill {skill.name!r} has no file {file!r}; its files are: {known}"
        ) from None
    return text


def _files(files: Any, folder: str) -> list[str]:
    found = files.glob("**/*", folder)
    prefix = folder.rstrip("/") + "/"
    return sorted(
        info.path.removeprefix(prefix)
        for info in found
        if not info.is_dir and info.path != prefix + SKILL_FILE
    )


INTERPRETERS = {".py": "python3 ", ".sh": "bash ", ".js": "node ", ".rb": "ruby "}
"""How the example command in ``load_skill``'s answer starts a script, by its suffix (a
skill's files are rarely executable: the Agent Skills format does not keep file modes)."""


def _how_to_run(skill: Skill, listing: list[str], shell: str) -> str:
    """What ``load_skill`` says about running the skill's scripts with ``shell``."""
    if skill.disk_folder is None:
        return (
            f"\n\nThis skill is not in a folder on disk, so the `{shell}` tool cannot run "
            "its scripts; read them with load_skill(name, file)."
        )
    text = (
        f"\n\nThe skill's folder on disk is {skill.disk_folder}; the paths in its "
        "instructions are relative to it."
    )
    script = next((f for f in listing if f.startswith("scripts/")), None) or next(
        (f for f in listing if posixpath.splitext(f)[1] in INTERPRETERS), None
    )
    if script is None:
        return text
    path = shlex.quote(posixpath.join(skill.disk_folder, script))
    command = INTERPRETERS.get(posixpath.splitext(script)[1], "") + path
    return f"{text} Run its scripts with the `{shell}` tool by their full path, e.g. `{command}`."


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n[cut: the file has {len(text)} characters; shown: {limit}]"
