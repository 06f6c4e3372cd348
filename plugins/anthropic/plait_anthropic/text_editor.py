"""``anthropic_text_editor``: Anthropic's text-editor tool (``text_editor_20250728``) over a
``plait.backends`` backend.

One tool, ``str_replace_based_edit_tool``, with the commands ``view``, ``create``,
``str_replace`` and ``insert``. An Anthropic model is sent the tool by its type (Claude knows
its schema); every other provider gets an ordinary function tool with the same arguments.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.options import positive_or_none
from plait.tools import Tool
from plait.types import AgentConfig, Command, ToolRuntime
from plait_anthropic._editor import EditorMiddleware

__all__ = ["TOOL_DESCRIPTION", "TOOL_NAME", "TOOL_TYPE", "AnthropicTextEditorMiddleware"]

TOOL_NAME = "str_replace_based_edit_tool"
"""The tool's name, as Anthropic's text-editor tool has it."""
TOOL_TYPE = "text_editor_20250728"
"""The version of Anthropic's text-editor tool an Anthropic model is sent (other models get
a described tool)."""

TOOL_DESCRIPTION = """View, create and edit text files. Paths are absolute ("/src/app.py").

Commands (the `command` argument):
- `view`: show a file with numbered lines, or list a directory. `view_range` [start, end]
  shows lines start to end (numbered from 1; end -1 means to the end of the file).
- `create`: write `file_text` to `path`, creating the file or replacing its content.
- `str_replace`: replace `old_str` by `new_str` in `path`. `old_str` must match the file
  exactly (whitespace included, without the line numbers `view` shows) and occur exactly
  once: include surrounding lines to make it unique.
- `insert`: insert `insert_text` after line `insert_line` of `path` (0 inserts at the start).

View a file before editing it."""

Command_ = Literal["view", "create", "str_replace", "insert"]


@frozen(kw_only=True)
class AnthropicTextEditorMiddleware(EditorMiddleware):
    """Gives the agent Anthropic's text-editor tool over ``backend``."""

    tool_name: ClassVar[str] = TOOL_NAME

    max_characters: int | None = attrs.field(default=None, validator=positive_or_none)
    """``view`` output is cut to this many characters (also sent to Anthropic); None: whole."""

    def view_limit(self) -> int | None:
        return self.max_characters

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        respond = self.respond

        def str_replace_based_edit_tool(
            command: Command_,
            path: str,
            runtime: ToolRuntime,
            file_text: str | None = None,
            old_str: str | None = None,
            new_str: str | None = None,
            insert_line: int | None = None,
            insert_text: str | None = None,
            view_range: list[int] | None = None,
        ) -> ToolMessage | Command:
            """Run one editor command.

            Args:
                command: what to do: view, create, str_replace or insert.
                path: the absolute path of the file (or, for view, directory).
                file_text: create: the whole content of the file.
                old_str: str_replace: the exact text to replace (it must occur once).
                new_str: str_replace: the text to put instead (empty deletes old_str).
                insert_line: insert: the line after which to insert (0: at the start).
                insert_text: insert: the text to insert.
                view_range: view: [start, end] line numbers from 1; end -1 is the last line.
            """
            if command == "insert" and insert_text is None:
                # Anthropic's documentation once named the inserted text new_str.
                insert_text = new_str
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
            )

        anthropic: dict[str, Any] = {"type": TOOL_TYPE}
        if self.max_characters is not None:
            anthropic["max_characters"] = self.max_characters
        return [
            Tool.from_function(
                str_replace_based_edit_tool,
                name=TOOL_NAME,
                description=TOOL_DESCRIPTION,
                provider_options={"anthropic": anthropic},
            )
        ]
