"""``anthropic_memory``: Anthropic's memory tool (``memory_20250818``) over a
``plait.backends`` backend, confined to ``/memories``.

One tool, ``memory``, with the commands ``view``, ``create``, ``str_replace``, ``insert``,
``delete`` and ``rename``, and a system-prompt section asking the model to read its memory
before it starts and to keep its progress there. An Anthropic model is sent the tool by its
type; every other provider gets an ordinary function tool with the same arguments.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from plait.backends import (
    StateBackend,
    resolve_backend,
)
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.middleware import RequestMiddleware
from plait.options import FieldError, expected
from plait.tools import Tool
from plait.types import (
    AgentConfig,
    Command,
    ModelRequest,
    ToolRuntime,
)
from plait_anthropic._editor import EditorMiddleware, check_prefixes

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "MEMORY_BETA",
    "MEMORY_DIR",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "TOOL_TYPE",
    "AnthropicMemoryMiddleware",
]

TOOL_NAME = "memory"
"""The tool's name, as Anthropic's memory tool has it."""
TOOL_TYPE = "memory_20250818"
"""The version of Anthropic's memory tool an Anthropic model is sent (other models get a
described tool)."""
MEMORY_DIR = "/memories"
"""The folder the model keeps its memory in (the default ``allowed_path_prefixes``)."""
MEMORY_BETA = "context-management-2025-06-27"
"""The Anthropic beta the memory tool is released under (sent as ``anthropic-beta``)."""

_DESCRIPTION = """Your memory: files under {where} that you keep between conversations.
Paths are absolute and must be under {where} ("{example}").

Commands (the `command` argument):
- `view`: list a directory, or show a file with numbered lines (`view_range` [start, end],
  numbered from 1; end -1 means to the end).
- `create`: write `file_text` to `path`, creating the file or replacing its content.
- `str_replace`: replace `old_str` (which must occur exactly once) by `new_str` in `path`.
- `insert`: insert `insert_text` after line `insert_line` of `path` (0: at the start).
- `delete`: delete the file or directory `path`.
- `rename`: move `old_path` to `new_path` (which must not exist)."""


def _description(prefixes: list[str]) -> str:
    roots = [prefix.rstrip("/") or "/" for prefix in prefixes]
    example = roots[0].rstrip("/") + "/notes.md"
    return _DESCRIPTION.format(where=" or ".join(roots), example=example)


TOOL_DESCRIPTION = _description([MEMORY_DIR])
"""The description non-Anthropic models read, for the default ``allowed_path_prefixes``."""

DEFAULT_SYSTEM_PROMPT = """## Memory

You have a memory directory, /memories, that you keep with the `memory` tool. It may hold
what you learned and did in earlier conversations.

- Before anything else, view /memories and read what is relevant to the task.
- Your context may be cleared at any moment: as you work, record your progress, findings and
  next steps in memory files, so a fresh start can pick up where you left off.
- Keep it tidy: short files named by topic, updated rather than duplicated; delete what is no
  longer true.
- Keep secrets and personal data out of memory unless the user asks you to remember them."""


def _check_betas(_: Any, attribute: attrs.Attribute[Any], value: list[str]) -> None:
    if isinstance(value, str) or not all(isinstance(name, str) and name for name in value):
        raise FieldError(
            attribute.name, expected(f"a list of beta names such as [{MEMORY_BETA!r}]", value)
        )


Command_ = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


@frozen(kw_only=True)
class AnthropicMemoryMiddleware(EditorMiddleware, RequestMiddleware):
    """Gives the agent Anthropic's memory tool over ``backend`` and a system-prompt section
    asking it to use its memory."""

    tool_name: ClassVar[str] = TOOL_NAME

    backend: Any = attrs.field(factory=StateBackend, converter=resolve_backend)
    """Where memories live: a ``plait.backends`` backend, or "state", "store[:NS]", "disk:/path"."""
    allowed_path_prefixes: list[str] = attrs.field(
        factory=lambda: [MEMORY_DIR], validator=check_prefixes
    )
    """Only paths under one of these directories may be used (each always exists)."""
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    """The section added to the system prompt of calls offering the tool; None or "" for none."""
    anthropic_betas: list[str] = attrs.field(factory=lambda: [MEMORY_BETA], validator=_check_betas)
    """Anthropic beta names sent with calls offering the tool (other providers ignore them)."""

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        respond = self.respond
        assert self.allowed_path_prefixes is not None

        def memory(
            command: Command_,
            runtime: ToolRuntime,
            path: str | None = None,
            file_text: str | None = None,
            old_str: str | None = None,
            new_str: str | None = None,
            insert_line: int | None = None,
            insert_text: str | None = None,
            view_range: list[int] | None = None,
            old_path: str | None = None,
            new_path: str | None = None,
        ) -> ToolMessage | Command:
            """Run one memory command.

            Args:
                command: what to do: view, create, str_replace, insert, delete or rename.
                path: the file or directory under /memories (every command but rename).
                file_text: create: the whole content of the file.
                old_str: str_replace: the exact text to replace (it must occur once).
                new_str: str_replace: the text to put instead (empty deletes old_str).
                insert_line: insert: the line after which to insert (0: at the start).
                insert_text: insert: the text to insert.
                view_range: view: [start, end] line numbers from 1; end -1 is the last line.
                old_path: rename: the file or directory to move.
                new_path: rename: where to move it (it must not exist).
            """
            return respond(
                runtime,
                command,
                path=path,
                file_text=file_text,
                old_str=old_str,
                new_str=new_str,
                insert_line=insert_line,
                insert_text=insert_text,
                view_range=view_range,
                old_path=old_path,
                new_path=new_path,
            )

        return [
            Tool.from_function(
                memory,
                name=TOOL_NAME,
                description=_description(self.allowed_path_prefixes),
                provider_options={"anthropic": {"type": TOOL_TYPE}},
            )
        ]

    # -- the prompt --------------------------------------------------------------------

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        """The prompt section and, on a call offering the tool, the Anthropic betas."""
        request = request.with_prompt_section(self.system_prompt, when_tools=(TOOL_NAME,))
        if not self.anthropic_betas or not any(t.name == TOOL_NAME for t in request.tools):
            return request
        options = dict(request.provider_options)
        anthropic = dict(options.get("anthropic") or {})
        betas = list(anthropic.get("betas") or [])
        betas.extend(name for name in self.anthropic_betas if name not in betas)
        options["anthropic"] = {**anthropic, "betas": betas}
        return request.override(provider_options=options)
