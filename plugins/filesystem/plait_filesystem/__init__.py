"""``filesystem``: file tools for the model over a ``plait.backends`` backend.

Tools ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob`` and ``grep`` work on
absolute virtual paths ("/notes.txt"). The default ``StateBackend`` keeps files in the
thread's ``files`` state key; writes come back as ``Command`` updates merged by path, so
several writes in one AI message all land. A tool result larger than
``tool_token_limit_before_evict`` is saved to ``/large_tool_results/<tool_call_id>`` and
replaced by a pointer the model can page through with ``read_file``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from plait.backends import (
    FILES,
    Backend,
    BackendError,
    BackendMiddleware,
    CompositeBackend,
    DiskBackend,
    FileInfo,
    FilesUpdate,
    StateBackend,
    StoreBackend,
    format_lines,
)
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.middleware import RequestMiddleware
from plait.options import FieldError, expected, non_empty_string, positive_or_none
from plait.tools import Tool
from plait.types import (
    AgentConfig,
    Command,
    ModelRequest,
    ToolCallRequest,
    ToolRuntime,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "EVICTED_DIR",
    "TOOL_DESCRIPTIONS",
    "TOOL_NAMES",
    "Backend",
    "BackendError",
    "CompositeBackend",
    "DiskBackend",
    "FilesystemMiddleware",
    "StateBackend",
    "StoreBackend",
]

EVICTED_DIR = "/large_tool_results"
"""Where a tool result too large for the context is written, for the model to read back in
part."""
CHARS_PER_TOKEN = 4
HEAD_LINES = 10
HEAD_CHARS = 1000

TOOL_NAMES = ("ls", "read_file", "write_file", "edit_file", "glob", "grep")
"""The file tools the middleware adds, in the order it adds them."""

TOOL_DESCRIPTIONS: dict[str, str] = {
    "ls": (
        "List the files and directories directly under a directory (directories end "
        "with '/'). Use it to explore before reading or editing."
    ),
    "read_file": (
        "Read a file, with line numbers (cat -n style). By default it shows the first "
        "2000 lines; for long files page with offset (0-based first line) and limit. Very "
        "long lines are cut and marked. Read a file before editing it."
    ),
    "write_file": (
        "Create a new file with the given content. It fails if the file exists: use "
        "edit_file to change an existing file."
    ),
    "edit_file": (
        "Replace old_string by new_string in a file. old_string must match the file "
        "exactly (whitespace included, without the line-number prefix read_file shows) "
        "and occur exactly once, unless replace_all is true to replace every occurrence."
    ),
    "glob": (
        "Find files whose path matches a pattern: '*' and '?' match within one name, "
        "'**/' spans directories (e.g. '**/*.py'). Relative patterns are matched against "
        "paths relative to path."
    ),
    "grep": (
        "Search files for a literal text (not a regular expression). Returns matching "
        "lines as path:line: text. Narrow with path (a directory or file) and glob (e.g. "
        "'*.md')."
    ),
}
"""Each file tool's description, as the model reads it unless ``custom_tool_descriptions``
gives its own."""

DEFAULT_SYSTEM_PROMPT = """## Files

You have a file system with the tools `ls`, `read_file`, `write_file`, `edit_file`, `glob`
and `grep`. Every path is absolute, starting with `/` (e.g. `/notes.md`).

- Explore with `ls`, `glob` and `grep` before reading; read a file before editing it.
- `write_file` creates a new file; change an existing one with `edit_file`, quoting the exact
  text to replace (without the line numbers `read_file` shows).
- Read long files in pages with `read_file`'s `offset` and `limit`.
- Keep notes, drafts and large intermediate results in files rather than in your replies."""
"""The system-prompt section that tells the model about its files, unless ``system_prompt``
is given."""


def _check_descriptions(_: Any, attribute: attrs.Attribute[Any], value: Mapping[str, Any]) -> None:
    unknown = sorted(set(value) - set(TOOL_NAMES))
    if unknown:
        keys = "unknown key" + ("s " if len(unknown) > 1 else " ") + ", ".join(map(repr, unknown))
        raise FieldError(attribute.name, f"{keys} (valid: {', '.join(TOOL_NAMES)})")
    for name, text in value.items():
        if non_empty_string().problem(text) is not None:
            detail = f"the description of {name!r} is not a non-empty string"
            raise FieldError(
                attribute.name,
                expected("a mapping of tool names to non-empty strings", value, detail),
            )


def _error(runtime: ToolRuntime, name: str, error: BackendError) -> ToolMessage:
    return ToolMessage.error(runtime.tool_call, str(error), name=name)


def _answer(
    runtime: ToolRuntime, name: str, text: str, update: FilesUpdate | None
) -> ToolMessage | Command:
    message = ToolMessage(text, tool_call_id=runtime.tool_call_id, name=name)
    if update is None:
        return message
    return Command(update={FILES: update, "messages": [message]})


def _listing(infos: list[FileInfo], empty: str) -> str:
    return "\n".join(info.path for info in infos) if infos else empty


@frozen(kw_only=True)
class FilesystemMiddleware(BackendMiddleware, RequestMiddleware):
    """Gives the agent file tools over ``backend`` and a system-prompt section on them;
    evicts oversized tool results to files."""

    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    """The section added to the system prompt of calls offering the tools; None or "" for none."""
    custom_tool_descriptions: dict[str, str] = attrs.field(
        factory=dict, validator=_check_descriptions
    )
    """Replacement descriptions by tool name."""
    tool_token_limit_before_evict: int | None = attrs.field(
        default=20000, validator=positive_or_none
    )
    """A tool result above this many tokens (4 characters each) is saved to a file; None: never."""

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        bind = self.bind

        def ls(path: str, runtime: ToolRuntime) -> ToolMessage | str:
            """List a directory.

            Args:
                path: the absolute directory path, e.g. "/" or "/docs".
            """
            try:
                return _listing(bind(runtime).ls(path), f"{path} is empty")
            except BackendError as error:
                return _error(runtime, "ls", error)

        def read_file(
            file_path: str, runtime: ToolRuntime, offset: int = 0, limit: int = 2000
        ) -> ToolMessage | str:
            """Read a file with line numbers.

            Args:
                file_path: the absolute file path, e.g. "/notes.md".
                offset: the 0-based line to start from.
                limit: how many lines to show at most.
            """
            try:
                return bind(runtime).read(file_path, offset, limit)
            except BackendError as error:
                return _error(runtime, "read_file", error)

        def write_file(file_path: str, content: str, runtime: ToolRuntime) -> ToolMessage | Command:
            """Create a new file.

            Args:
                file_path: the absolute path of the new file, e.g. "/notes.md".
                content: the whole text of the file.
            """
            try:
                result = bind(runtime).write(file_path, content)
            except BackendError as error:
                return _error(runtime, "write_file", error)
            return _answer(runtime, "write_file", f"Wrote {result.path}", result.files_update)

        def edit_file(
            file_path: str,
            old_string: str,
            new_string: str,
            runtime: ToolRuntime,
            replace_all: bool = False,
        ) -> ToolMessage | Command:
            """Replace exact text in a file.

            Args:
                file_path: the absolute file path.
                old_string: the exact text to replace.
                new_string: the text to put instead.
                replace_all: replace every occurrence instead of requiring exactly one.
            """
            try:
                result = bind(runtime).edit(file_path, old_string, new_string, replace_all)
            except BackendError as error:
                return _error(runtime, "edit_file", error)
            times = "1 occurrence" if result.count == 1 else f"{result.count} occurrences"
            text = f"Replaced {times} in {result.path}"
            return _answer(runtime, "edit_file", text, result.files_update)

        def glob(pattern: str, runtime: ToolRuntime, path: str = "/") -> ToolMessage | str:
            """Find files by path pattern.

            Args:
                pattern: a glob pattern such as "**/*.md" or "/docs/*.txt".
                path: the directory to search under.
            """
            try:
                found = bind(runtime).glob(pattern, path)
            except BackendError as error:
                return _error(runtime, "glob", error)
            return _listing(found, f"No files match {pattern!r} under {path}")

        def grep(
            pattern: str, runtime: ToolRuntime, path: str = "/", glob: str | None = None
        ) -> ToolMessage | str:
            """Search files for a literal text.

            Args:
                pattern: the text to find (literal, not a regular expression).
                path: the directory or file to search.
                glob: only search files whose name or relative path matches this pattern.
            """
            try:
                hits = bind(runtime).grep(pattern, path, glob)
            except BackendError as error:
                return _error(runtime, "grep", error)
            if not hits:
                return f"No matches for {pattern!r} under {path}"
            return "\n".join(f"{hit.path}:{hit.line}: {hit.text}" for hit in hits)

        functions: list[Callable[..., Any]] = [ls, read_file, write_file, edit_file, glob, grep]
        descriptions = {**TOOL_DESCRIPTIONS, **self.custom_tool_descriptions}
        return [
            Tool.from_function(f, name=f.__name__, description=descriptions[f.__name__])
            for f in functions
        ]

    # -- the prompt --------------------------------------------------------------------

    def rewrite_request(self, request: ModelRequest) -> ModelRequest:
        return request.with_prompt_section(self.system_prompt, when_tools=TOOL_NAMES)

    # -- large results -------------------------------------------------------------------

    def _too_large(self, request: ToolCallRequest, message: Any) -> bool:
        limit = self.tool_token_limit_before_evict
        return (
            limit is not None
            and isinstance(message, ToolMessage)
            and message.tool_call_id == request.tool_call.id
            and isinstance(message.content, str)
            and len(message.content) > limit * CHARS_PER_TOKEN
            and request.tool_call.name not in ("read_file", "write_file", "edit_file")
        )

    def _evict(
        self, request: ToolCallRequest, result: ToolMessage | Command
    ) -> ToolMessage | Command:
        """Save an oversized answer to a file and answer with a pointer instead; a
        ``Command`` answering the call keeps its other updates."""
        if isinstance(result, ToolMessage):
            if not self._too_large(request, result):
                return result
            pointer, update = self._save(request, result)
            if update is None:
                return pointer
            return Command(update={FILES: update, "messages": [pointer]})
        messages = list((result.update or {}).get("messages") or [])
        big = [n for n, m in enumerate(messages) if self._too_large(request, m)]
        if not big:
            return result
        messages[big[0]], update = self._save(request, messages[big[0]])
        changes: dict[str, Any] = {**(result.update or {}), "messages": messages}
        if update is not None:
            changes[FILES] = {**(changes.get(FILES) or {}), **update}
        return attrs.evolve(result, update=changes)

    def _save(
        self, request: ToolCallRequest, result: ToolMessage
    ) -> tuple[ToolMessage, FilesUpdate | None]:
        content = result.content
        assert isinstance(content, str)
        safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in result.tool_call_id)
        path = f"{EVICTED_DIR}/{safe_id.lstrip('.') or 'result'}"
        runtime = ToolRuntime(
            tool_call=request.tool_call, state=request.state, runtime=request.runtime
        )
        try:
            written = self.backend.bind(runtime).write(path, content)
        except BackendError:
            return result, None
        head = format_lines(content, 0, HEAD_LINES, path=path, max_line_length=HEAD_CHARS // 4)
        total = len(content.splitlines())
        text = (
            f"The result of {request.tool_call.name} was too large to show "
            f"({len(content)} characters, {total} lines, about "
            f"{len(content) // CHARS_PER_TOKEN} tokens), so it was saved to {path}. "
            f"Read it in pages with read_file(file_path={path!r}, offset=0, limit=100), or "
            f"search it with grep(pattern, path={path!r}). Its first lines:\n{head}"
        )
        return attrs.evolve(result, content=text), written.files_update

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command],
    ) -> ToolMessage | Command:
        return self._evict(request, handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        return self._evict(request, await handler(request))
