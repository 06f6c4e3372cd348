"""``agents_md``: the project's AGENTS.md files in every model call's system prompt.

AGENTS.md is the README for agents: build commands, conventions, pitfalls. A project may
have one at its root and more in sub-folders; the one nearest to the work applies. This
middleware reads, through a ``plait.backends`` backend (a disk directory by default, with
its sandbox: no path leaves the root, links included), the AGENTS.md of every folder from
the root down to ``directory``, and puts them in the prompt root first, nearest last, with
the rule that the nearer one wins where they disagree. They are cut to ``max_chars`` in
all, the nearest kept first. AGENTS.md files in folders below ``directory`` are listed by
path, not loaded.

The files are read at each model call, so what the agent records with the optional
``update_agents_md`` tool (or edits with the filesystem tools) is in its next call.
"""

from __future__ import annotations

import posixpath
from typing import Any

import attrs

from plait.backends import (
    FILES,
    FILES_FIELD,
    BackendError,
    FilesUpdate,
    FileSystem,
    check_path,
    resolve_backend,
)
from plait.backends import check_store as _check_store
from plait.lazy import frozen
from plait.messages import ToolCall, ToolMessage
from plait.middleware import RequestMiddleware
from plait.options import FieldError, integer, non_empty_string
from plait.tools import Tool
from plait.types import AgentConfig, Command, ModelRequest, StateField, ToolRuntime

__all__ = ["DEFAULT_TOOL_DESCRIPTION", "FILE_NAME", "TOOL_NAME", "AgentsMdMiddleware"]

FILE_NAME = "AGENTS.md"
"""The file name the middleware reads in each folder, and appends notes to."""
TOOL_NAME = "update_agents_md"
"""The name of the tool the model records a note with."""
MAX_LISTED = 50

DEFAULT_HEADER = """## Project instructions (AGENTS.md)

These AGENTS.md files hold this project's conventions and what earlier sessions learned.
Follow them. Where two disagree, the one nearer to your working folder (listed later)
wins; what the user tells you directly overrides them all."""

DEFAULT_TOOL_DESCRIPTION = """Record what you learned about this project in an AGENTS.md file.

For future sessions: a convention, a command that works, a pitfall to avoid. Write it as
one short, self-contained note. It is appended to the AGENTS.md of your working folder, or
to the one at `path` (an AGENTS.md of the project, e.g. "/docs/AGENTS.md"). Do not record
secrets, or things true only of this task."""
"""The description of that tool the model reads, unless ``tool_description`` is given."""


def _directory(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    try:
        check_path(value)
    except BackendError as error:
        raise FieldError(attribute.name, str(error).removeprefix("Error: ")) from None


def _chain(directory: str) -> list[str]:
    """The AGENTS.md paths from the root down to ``directory``, root first."""
    parts = [part for part in directory.split("/") if part]
    folders = ["/" + "/".join(parts[:n]) for n in range(len(parts) + 1)]
    return [posixpath.join(folder, FILE_NAME) for folder in folders]


def _runtime(request: ModelRequest) -> ToolRuntime | None:
    """A backend binds to a tool call's runtime; a model call has the same state and
    runtime, and no call of its own."""
    if request.runtime is None:
        return None
    return ToolRuntime(
        tool_call=ToolCall(TOOL_NAME, {}, id="agents_md"),
        state=request.state,
        runtime=request.runtime,
    )


@frozen(kw_only=True)
class AgentsMdMiddleware(RequestMiddleware):
    """Puts the AGENTS.md files from the project root down to ``directory`` in the system
    prompt (nearest wins); with ``update_tool``, lets the agent append what it learned."""

    backend: Any = attrs.field(default="disk:.", converter=resolve_backend)
    """Where the project is: a ``plait.backends`` backend or "disk:/path" (the default,
    the current directory, read with the disk backend's sandbox), "state", "store[:NS]"."""
    directory: str = attrs.field(default="/", validator=_directory)
    """The working folder, as a path in the backend: AGENTS.md files are read from the
    root down to it."""
    max_chars: int = attrs.field(default=32_000, validator=integer(minimum=1))
    """The most characters of AGENTS.md text in the prompt, all files together; the
    nearest files are kept first and a cut file says so."""
    nested: bool = True
    """List (not load) the AGENTS.md files of folders below ``directory``."""
    update_tool: bool = False
    """Give the agent the ``update_agents_md`` tool."""
    header: str = attrs.field(default=DEFAULT_HEADER, validator=non_empty_string())
    """The text opening the section, before the files."""
    tool_description: str = attrs.field(
        default=DEFAULT_TOOL_DESCRIPTION, validator=non_empty_string()
    )
    """The ``update_agents_md`` description the model reads."""

    def state_fields(self) -> dict[str, StateField]:
        return {FILES: FILES_FIELD}  # where a StateBackend keeps the files

    def validate_agent(self, agent_config: AgentConfig) -> None:
        _check_store(self.backend, agent_config)

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        if not self.update_tool:
            return []
        return [
            Tool.from_function(self._update(), name=TOOL_NAME, description=self.tool_description)
        ]

    # -- reading ----------------------------------------------------------------------------

    def _read(self, files: FileSystem) -> list[tuple[str, str]]:
        """``(path, text)`` of each AGENTS.md from the root down to ``directory`` that
        exists, root first, cut to ``max_chars`` in all with the nearest kept first."""
        found: list[tuple[str, str]] = []
        for path in _chain(check_path(self.directory)):
            try:
                found.append((path, files.read_text(path)))
            except BackendError:
                continue
        budget = self.max_chars
        kept: list[tuple[str, str]] = []
        for path, text in reversed(found):
            text = text.strip()
            if len(text) > budget:
                shown = text[:budget]
                text = f"{shown}\n\n[cut: {path} has {len(text)} characters; shown: {len(shown)}]"
                budget = 0
            else:
                budget -= len(text)
            if text.strip():
                kept.append((path, text))
            if budget == 0:
                break
        return kept[::-1]

    def _below(self, files: FileSystem) -> list[str]:
        directory = check_path(self.directory)
        try:
            found = files.glob(f"**/{FILE_NAME}", directory)
        except BackendError:
            return []
        own = posixpath.join(directory, FILE_NAME)
        return sorted(info.path for info in found if info.path != own)[:MAX_LISTED]

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        runtime = _runtime(request)
        if runtime is None:
            return request
        files = self.backend.bind(runtime)
        loaded = self._read(files)
        below = self._below(files) if self.nested else []
        if not loaded and not below:
            return request
        parts = [self.header]
        parts += [f"### {path}\n\n{text}" for path, text in loaded]
        if below:
            listing = "\n".join(f"- {path}" for path in below)
            parts.append(
                "More AGENTS.md files apply to work inside their own folders; read the one "
                f"nearest to a file before changing it:\n{listing}"
            )
        return request.with_prompt_section("\n\n".join(parts))

    # -- recording --------------------------------------------------------------------------

    def _target(self, path: str | None) -> str:
        if path is None:
            return posixpath.join(check_path(self.directory), FILE_NAME)
        path = check_path(path)
        if posixpath.basename(path) != FILE_NAME:
            raise BackendError(
                f"Error: {path} is not an AGENTS.md file; give the path of one, e.g. "
                f"'/{FILE_NAME}' or '/docs/{FILE_NAME}'"
            )
        return path

    def _update(self) -> Any:
        backend = self.backend
        target = self._target

        def update_agents_md(
            note: str, runtime: ToolRuntime, path: str | None = None
        ) -> ToolMessage | Command:
            """Append a note to an AGENTS.md file.

            Args:
                note: what you learned, as one short self-contained note.
                path: the AGENTS.md to add it to; leave it out for the nearest one.
            """
            note = note.strip()
            if not note:
                return ToolMessage.error(
                    runtime.tool_call, "Error: the note is empty", name=TOOL_NAME
                )
            files = backend.bind(runtime)
            update: FilesUpdate | None
            try:
                where = target(path)
                try:
                    text = files.read_text(where)
                except BackendError:
                    text = None
                if text is None:
                    update = files.write(where, f"{note}\n").files_update
                elif not text.strip():
                    gone = files.delete(where).files_update
                    written = files.write(where, f"{note}\n").files_update
                    update = None if gone is None else {**gone, **(written or {})}
                else:
                    joined = text if text.endswith("\n") else text + "\n"
                    update = files.edit(where, text, f"{joined}\n{note}\n").files_update
            except BackendError as error:
                return ToolMessage.error(runtime.tool_call, str(error), name=TOOL_NAME)
            message = ToolMessage(
                f"Recorded in {where}.", tool_call_id=runtime.tool_call_id, name=TOOL_NAME
            )
            if update is None:
                return message
            return Command(update={FILES: update, "messages": [message]})

        return update_agents_md
