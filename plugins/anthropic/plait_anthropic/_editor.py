"""The commands Anthropic's text-editor and memory tools share (view, create, str_replace,
insert, delete, rename), written once over a ``plait.backends`` ``FileSystem``.

Each command returns the text the model reads and the ``files`` state update to apply (or
``None``); every refusal is a ``BackendError`` whose message starts with ``Error:``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from plait.backends import (
    FILES,
    BackendError,
    BackendMiddleware,
    FilesUpdate,
    FileSystem,
    check_path,
    format_lines,
    text_size,
)
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.options import FieldError, expected, positive_or_none
from plait.types import Command, ToolRuntime

__all__ = [
    "Editor",
    "EditorMiddleware",
    "Outcome",
    "answer",
    "check_file_size",
    "check_prefixes",
    "error",
]

SNIPPET_CONTEXT = 3
"""Lines shown before and after an edit in its answer."""
WINDOW_LINES = 2000
"""The most lines one view_range may show of a file over the size limit."""

MB = 1024 * 1024


@frozen
class Outcome:
    """What a command did: the answer for the model and the state update, if any."""

    text: str
    update: FilesUpdate | None = None


# -- option validators shared by the middleware ------------------------------------------


def check_prefixes(_: Any, attribute: attrs.Attribute[Any], value: Sequence[str] | None) -> None:
    """``allowed_path_prefixes``: None, or a non-empty list of valid absolute paths."""
    if value is None:
        return
    what = "a non-empty list of absolute paths (such as ['/memories']) or None"
    if isinstance(value, str) or not value:
        raise FieldError(attribute.name, expected(what, value))
    for prefix in value:
        try:
            check_path(prefix)
        except BackendError as problem:
            detail = str(problem).removeprefix("Error: ")
            raise FieldError(attribute.name, expected(what, value, detail)) from None


def check_file_size(
    path: str, text: str, max_file_size_mb: int | None, verb: str = "would be"
) -> None:
    """Refuse a text over ``max_file_size_mb`` megabytes (UTF-8 bytes)."""
    if max_file_size_mb is None:
        return
    size = text_size(text)
    if size > max_file_size_mb * MB:
        raise BackendError(
            f"Error: {path} {verb} {size / MB:.1f} MB, over the {max_file_size_mb} MB limit"
        )


# -- answers -------------------------------------------------------------------------------


def error(runtime: ToolRuntime, name: str, problem: BackendError) -> ToolMessage:
    return ToolMessage.error(runtime.tool_call, str(problem), name=name)


def answer(runtime: ToolRuntime, name: str, outcome: Outcome) -> ToolMessage | Command:
    message = ToolMessage(outcome.text, tool_call_id=runtime.tool_call_id, name=name)
    if outcome.update is None:
        return message
    return Command(update={FILES: outcome.update, "messages": [message]})


def _merge(first: FilesUpdate | None, second: FilesUpdate | None) -> FilesUpdate | None:
    if first is None and second is None:
        return None
    return {**(first or {}), **(second or {})}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _missing(command: str, argument: str) -> BackendError:
    return BackendError(f"Error: the {command} command needs {argument}")


# -- the commands ----------------------------------------------------------------------------


@frozen(kw_only=True)
class Editor:
    """The editor commands over one bound file system, with the middleware's limits.

    ``allowed_path_prefixes`` (None: any path) confines every path; each prefix is also a
    directory that exists, even when empty. ``max_characters`` cuts what ``view`` shows.
    """

    fs: FileSystem
    allowed_path_prefixes: Sequence[str] | None = None
    max_file_size_mb: int | None = None
    max_characters: int | None = None

    def _roots(self) -> list[str]:
        return [check_path(prefix) for prefix in self.allowed_path_prefixes or ()]

    def guard(self, path: str | None, command: str, argument: str = "path") -> str:
        """The normalised ``path``, refused if invalid or outside the allowed prefixes."""
        if path is None:
            raise _missing(command, argument)
        normal = check_path(path)
        roots = self._roots()
        if not roots:
            return normal
        # a backend with links (DiskBackend) says where they lead: both must be allowed
        resolve = getattr(self.fs, "resolve", None)
        seen = [normal, resolve(normal)] if callable(resolve) else [normal]
        for where in seen:
            if not any(where == root or where.startswith(root.rstrip("/") + "/") for root in roots):
                shown = normal if where == normal else f"{normal} (a link to {where})"
                raise BackendError(
                    f"Error: access to {shown} is not allowed: paths must be under "
                    f"{' or '.join(roots)}"
                )
        return normal

    def _is_root(self, path: str) -> bool:
        return path in self._roots()

    def run(
        self,
        command: str,
        *,
        path: str | None = None,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        insert_text: str | None = None,
        view_range: Sequence[int] | None = None,
        old_path: str | None = None,
        new_path: str | None = None,
    ) -> Outcome:
        """Run one command with the tool call's arguments (those it does not use ignored)."""
        if command == "view":
            return self.view(path, view_range)
        if command == "create":
            return self.create(path, file_text)
        if command == "str_replace":
            return self.str_replace(path, old_str, new_str)
        if command == "insert":
            return self.insert(path, insert_line, insert_text)
        if command == "delete":
            return self.delete(path)
        if command == "rename":
            return self.rename(old_path, new_path)
        raise BackendError(f"Error: unknown command {command!r}")

    # -- view --------------------------------------------------------------------------

    def _oversize(self, path: str) -> int | None:
        """The size of the file at ``path`` if it is over the limit, found before reading
        it when the backend can tell (every ``plait.backends`` backend: the disk without
        reading, state and store without copying the text), else None."""
        size_of = getattr(self.fs, "size", None)
        if self.max_file_size_mb is None or not callable(size_of):
            return None
        size = size_of(path)
        return size if size is not None and size > self.max_file_size_mb * MB else None

    def _check_size_first(self, path: str, verb: str = "is") -> None:
        """Refuse a file over the limit before reading it: a 200 MB file is never loaded
        to be refused."""
        size = self._oversize(path)
        if size is not None:
            raise BackendError(
                f"Error: {path} {verb} {size / MB:.1f} MB, over the {self.max_file_size_mb} "
                "MB limit"
            )

    def view(self, path: str | None, view_range: Sequence[int] | None = None) -> Outcome:
        path = self.guard(path, "view")
        size = self._oversize(path)
        if size is not None:
            return Outcome(self._cut(self._window(path, size, view_range)))
        try:
            text = self.fs.read_text(path)
        except BackendError as read_error:
            return Outcome(self._listing(path, view_range, read_error))
        check_file_size(path, text, self.max_file_size_mb, "is")
        return Outcome(self._cut(self._numbered(path, text, view_range)))

    def _listing(
        self, path: str, view_range: Sequence[int] | None, read_error: BackendError
    ) -> str:
        try:
            entries = [info.path for info in self.fs.ls(path)]
        except BackendError:
            if self._is_root(path):
                entries = []
            elif "not found" in str(read_error):
                raise BackendError(
                    f"Error: {path} does not exist; view its parent directory to see what is there"
                ) from None
            else:
                raise read_error from None
        if view_range is not None:
            raise BackendError(
                f"Error: view_range applies to files, and {path} is a directory; view it "
                "without view_range"
            )
        if not entries:
            return f"Directory {path} is empty"
        return self._cut(f"Directory {path}:\n" + "\n".join(entries))

    def _window(self, path: str, size: int, view_range: Sequence[int] | None) -> str:
        """Lines of a file over the size limit, read through the backend's ``read`` (a
        stream on disk), never the whole text."""
        over = f"{path} is {size / MB:.1f} MB, over the {self.max_file_size_mb} MB limit"
        if view_range is None:
            raise BackendError(
                f"Error: {over}: view part of it with view_range [start, end] (up to "
                f"{WINDOW_LINES} lines)"
            )
        if len(view_range) != 2:
            raise BackendError(
                f"Error: view_range must be two line numbers [start, end], got {list(view_range)}"
            )
        start, end = view_range
        if start < 1 or end < start or end - start + 1 > WINDOW_LINES:
            raise BackendError(
                f"Error: {over}: view_range must be [start, end] with 1 <= start <= end and "
                f"at most {WINDOW_LINES} lines, got {list(view_range)}"
            )
        shown = self.fs.read(path, start - 1, end - start + 1)
        # read's closing "… more lines: read with offset=N" speaks of another tool
        head, _, last = shown.rpartition("\n")
        return head if last.startswith("... [") and "more line" in last else shown

    def _numbered(self, path: str, text: str, view_range: Sequence[int] | None) -> str:
        total = len(text.splitlines())
        if view_range is None:
            return format_lines(text, 0, max(total, 1), path=path)
        if len(view_range) != 2:
            raise BackendError(
                f"Error: view_range must be two line numbers [start, end], got {list(view_range)}"
            )
        start, end = view_range
        if total == 0:
            raise BackendError(f"Error: {path} is empty; view it without view_range")
        if not 1 <= start <= total:
            raise BackendError(
                f"Error: view_range start {start} is out of range: {path} has "
                f"{_plural(total, 'line')}, so start must be between 1 and {total}"
            )
        if end == -1:
            end = total
        if not start <= end <= total:
            raise BackendError(
                f"Error: view_range end {end} is out of range: it must be between {start} "
                f"and {total} (the last line of {path}), or -1 for the end of the file"
            )
        head = "\n".join(text.splitlines()[:end])
        return format_lines(head, start - 1, end - start + 1, path=path)

    def _cut(self, shown: str) -> str:
        limit = self.max_characters
        if limit is None or len(shown) <= limit:
            return shown
        return (
            f"{shown[:limit]}\n... [output truncated at {limit} characters: view a smaller "
            "view_range]"
        )

    # -- create, str_replace, insert -------------------------------------------------

    def _read(self, path: str) -> str:
        """The file's text; a directory is refused in this tool's words (it has no ``ls``)."""
        self._check_size_first(path)
        try:
            return self.fs.read_text(path)
        except BackendError as problem:
            if "is a directory" in str(problem):
                raise BackendError(
                    f"Error: {path} is a directory, not a file; view it to list its entries"
                ) from None
            raise

    def _replace_text(self, path: str, old: str, new: str) -> FilesUpdate | None:
        """Write ``new`` over a file whose whole text is ``old``, keeping its creation date."""
        if old:
            return self.fs.edit(path, old, new).files_update
        removed = self.fs.delete(path).files_update
        return _merge(removed, self.fs.write(path, new).files_update)

    def create(self, path: str | None, file_text: str | None) -> Outcome:
        path = self.guard(path, "create")
        if self._is_root(path):
            raise BackendError(
                f"Error: {path} is a directory; create a file inside it, e.g. {path}/notes.md"
            )
        if file_text is None:
            raise _missing("create", "file_text")
        check_file_size(path, file_text, self.max_file_size_mb)
        try:
            old = self.fs.read_text(path)
        except BackendError:
            return Outcome(f"Created {path}", self.fs.write(path, file_text).files_update)
        return Outcome(f"Overwrote {path}", self._replace_text(path, old, file_text))

    def str_replace(self, path: str | None, old_str: str | None, new_str: str | None) -> Outcome:
        path = self.guard(path, "str_replace")
        if not old_str:
            raise _missing("str_replace", "old_str (the exact text to replace)")
        new_str = new_str or ""
        text = self._read(path)
        count = text.count(old_str)
        if count == 0:
            raise BackendError(
                f"Error: No match for old_str in {path}: it must match the file exactly, "
                "whitespace and indentation included (view the file first)"
            )
        if count > 1:
            lines, start = [], text.find(old_str)
            while start != -1:
                line = text.count("\n", 0, start) + 1
                if line not in lines:
                    lines.append(line)
                start = text.find(old_str, start + len(old_str))
            where = f"line {lines[0]}" if len(lines) == 1 else f"lines {', '.join(map(str, lines))}"
            raise BackendError(
                f"Error: old_str occurs {count} times in {path} (at {where}); include more "
                "surrounding text so it matches exactly once"
            )
        result = text.replace(old_str, new_str, 1)
        check_file_size(path, result, self.max_file_size_mb)
        update = self.fs.edit(path, old_str, new_str).files_update
        first = text.count("\n", 0, text.find(old_str)) + 1
        last = first + new_str.count("\n")
        return Outcome(f"Edited {path}. {self._snippet(path, result, first, last)}", update)

    def insert(self, path: str | None, insert_line: int | None, insert_text: str | None) -> Outcome:
        path = self.guard(path, "insert")
        if insert_line is None:
            raise _missing("insert", "insert_line (0 inserts at the start)")
        if insert_text is None:
            raise _missing("insert", "insert_text")
        text = self._read(path)
        lines = text.splitlines(keepends=True)
        if not 0 <= insert_line <= len(lines):
            raise BackendError(
                f"Error: insert_line {insert_line} is out of range: {path} has "
                f"{_plural(len(lines), 'line')}, so insert_line must be between 0 and "
                f"{len(lines)} (0 inserts at the start)"
            )
        if insert_line == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        chunk = insert_text if insert_text.endswith("\n") else insert_text + "\n"
        result = "".join(lines[:insert_line]) + chunk + "".join(lines[insert_line:])
        check_file_size(path, result, self.max_file_size_mb)
        update = self._replace_text(path, text, result)
        added = len(chunk.splitlines())
        where = "at the start" if insert_line == 0 else f"after line {insert_line}"
        snippet = self._snippet(path, result, insert_line + 1, insert_line + added)
        return Outcome(f"Inserted {_plural(added, 'line')} {where} of {path}. {snippet}", update)

    def _snippet(self, path: str, text: str, first: int, last: int) -> str:
        total = len(text.splitlines())
        if total == 0:
            return f"{path} is now empty."
        start = max(1, first - SNIPPET_CONTEXT)
        end = min(total, max(last, first) + SNIPPET_CONTEXT)
        head = "\n".join(text.splitlines()[:end])
        which = f"Line {start} now reads" if start == end else f"Lines {start}-{end} now read"
        return f"{which}:\n" + format_lines(head, start - 1, end - start + 1, path=path)

    # -- delete, rename (the memory tool) ----------------------------------------------

    def delete(self, path: str | None) -> Outcome:
        path = self.guard(path, "delete")
        if self._is_root(path):
            raise BackendError(f"Error: {path} itself cannot be deleted; delete what is in it")
        return Outcome(f"Deleted {path}", self.fs.delete(path).files_update)

    def rename(self, old_path: str | None, new_path: str | None) -> Outcome:
        old = self.guard(old_path, "rename", "old_path")
        new = self.guard(new_path, "rename", "new_path")
        if self._is_root(old) or self._is_root(new):
            root = old if self._is_root(old) else new
            raise BackendError(f"Error: {root} itself cannot be renamed or replaced")
        return Outcome(f"Renamed {old} to {new}", self.fs.rename(old, new).files_update)


# -- the middleware ------------------------------------------------------------------------


@frozen(kw_only=True)
class EditorMiddleware(BackendMiddleware):
    """What the text-editor and memory middleware share on top of a backend: the limits on
    paths and sizes, and one command run as a tool call."""

    tool_name: ClassVar[str]

    allowed_path_prefixes: list[str] | None = attrs.field(default=None, validator=check_prefixes)
    """Only paths under one of these directories may be used; None: any path."""
    max_file_size_mb: int | None = attrs.field(default=10, validator=positive_or_none)
    """A file over this many megabytes is not viewed or written; None: no limit."""

    def view_limit(self) -> int | None:
        """How many characters ``view`` shows at most (None: all)."""
        return None

    def respond(
        self, runtime: ToolRuntime, command: str, **arguments: Any
    ) -> ToolMessage | Command:
        """Run ``command`` with the tool call's ``arguments``; a refusal is an error message."""
        editor = Editor(
            fs=self.bind(runtime),
            allowed_path_prefixes=self.allowed_path_prefixes,
            max_file_size_mb=self.max_file_size_mb,
            max_characters=self.view_limit(),
        )
        try:
            outcome = editor.run(command, **arguments)
        except BackendError as problem:
            return error(runtime, self.tool_name, problem)
        return answer(runtime, self.tool_name, outcome)
