"""``anthropic_file_search``: ``glob_search`` and ``grep_search`` over a ``plait.backends``
backend — typically the files the text-editor or memory tool keeps.

``grep_search`` takes a Python regular expression (like LangChain's), matched line by line
over the text of the files ``glob`` finds, with caps on file size and count and a time
limit on the matching (``_pattern``). Both are plain function tools on every provider,
and search only where the agent's other file tools on the same backend may go
(``_Scope``): beside ``anthropic_memory`` alone, ``/memories``; or where
``allowed_path_prefixes`` says.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from plait.backends import (
    BackendError,
    BackendMiddleware,
    FileSystem,
    check_path,
    text_lines,
    text_size,
)
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.options import number, positive_or_none
from plait.tools import Tool
from plait.types import AgentConfig, ToolRuntime
from plait_anthropic._editor import MB, Editor, check_prefixes, error
from plait_anthropic._pattern import PatternTimeout, SearchPattern

__all__ = ["TOOL_DESCRIPTIONS", "TOOL_NAMES", "AnthropicFileSearchMiddleware"]

TOOL_NAMES = ("glob_search", "grep_search")
"""The search tools the middleware adds."""

TOOL_DESCRIPTIONS: dict[str, str] = {
    "glob_search": (
        "Find files by path pattern: '*' and '?' match within one name, '**/' spans "
        "directories (e.g. '**/*.py', 'src/**/*.ts'). Relative patterns are matched against "
        "paths relative to path. Returns the matching paths, one a line, sorted."
    ),
    "grep_search": (
        "Search file contents with a regular expression (Python syntax, e.g. 'def \\w+' or "
        "'error|warning'), line by line. Narrow with path (a directory or file) and include (a "
        "file-name pattern such as '*.py' or '*.{ts,tsx}'). output_mode: "
        "'files_with_matches' (the default) lists matching files, 'content' shows "
        "path:line: text for each matching line, 'count' shows path:number of matching lines."
    ),
}
"""Each search tool's description, as the model reads it."""

OutputMode = Literal["files_with_matches", "content", "count"]


MAX_INCLUDE_PATTERNS = 256
"""The most patterns one ``include`` may stand for: each ``{a,b}`` group doubles them."""


def _expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``['*.ts', '*.tsx']`` (nested and repeated groups too); more than
    ``MAX_INCLUDE_PATTERNS`` is refused as it grows, before it fills memory."""
    start = pattern.find("{")
    end = pattern.find("}", start + 1)
    if start == -1 or end == -1:
        return [pattern]
    head, body, tail = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    out: list[str] = []
    for part in body.split(","):
        out.extend(_expand_braces(head + part + tail))
        if len(out) > MAX_INCLUDE_PATTERNS:
            raise OverflowError
    return out


def _included(fs: FileSystem, files: list[str], include: str, path: str) -> list[str]:
    """The ``files`` whose name (or, for a pattern with '/', relative path) matches."""
    try:
        alternatives = _expand_braces(include)
    except OverflowError:
        raise BackendError(
            f"Error: include {include!r} stands for more than {MAX_INCLUDE_PATTERNS} "
            "patterns; use fewer {...} alternatives"
        ) from None
    keep: set[str] = set()
    for alternative in alternatives:
        if "/" in alternative:
            keep.update(info.path for info in fs.glob(alternative, path))
        else:
            keep.update(f for f in files if fnmatch.fnmatchcase(f.rsplit("/", 1)[-1], alternative))
    return [f for f in files if f in keep]


_BINARY = "\x00"
"""A NUL marks a file as binary, as it does for grep and git: such a file is skipped."""


def _searched(fs: FileSystem, path: str) -> list[str]:
    """The files ``grep_search`` reads: ``path`` itself when it is a file, else every
    file under it."""
    size_of = getattr(fs, "size", None)
    if callable(size_of) and size_of(path) is not None:
        return [check_path(path)]
    files = [info.path for info in fs.glob("**/*", path)]
    if files or callable(size_of):
        return files
    try:  # a backend that cannot tell a file's size: is it one?
        fs.read_text(path)
    except BackendError:
        return []
    return [check_path(path)]


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


@frozen
class _Scope:
    """Where one search may look: under ``roots`` (None: anywhere on the backend)."""

    fs: FileSystem
    roots: Sequence[str] | None

    def starts(self, path: str, tool: str) -> list[str]:
        """The paths to search for ``path``: itself when it is in scope, else the roots
        inside it; a path neither in scope nor above it is refused as the editor refuses
        it (a link on it leading out of scope too)."""
        path = check_path(path)
        if self.roots is None:
            return [path]
        inside = [root for root in self.roots if _under(root, [path]) and root != path]
        if inside and not _under(path, self.roots):
            return inside
        return [Editor(fs=self.fs, allowed_path_prefixes=self.roots).guard(path, tool)]

    def allows(self, file: str) -> bool:
        """Whether ``file`` is in scope, and so is where it leads on a backend with links."""
        if self.roots is None:
            return True
        resolve = getattr(self.fs, "resolve", None)
        seen = [file, resolve(file)] if callable(resolve) else [file]
        return all(_under(where, self.roots) for where in seen)


def _inherited(me: object, backend: Any, agent_config: AgentConfig) -> list[str] | None:
    """The union of the ``allowed_path_prefixes`` of the agent's other file tools on
    ``backend`` (``anthropic_memory``, ``anthropic_text_editor``, ``filesystem``); None
    (the whole backend) if one of them may go anywhere, or there are none: a search never
    reads what the tools beside it may not."""
    roots: list[str] = []
    for other in agent_config.middleware:
        if other is me or isinstance(other, AnthropicFileSearchMiddleware):
            continue
        if not isinstance(other, BackendMiddleware) or other.backend != backend:
            continue
        prefixes = getattr(other, "allowed_path_prefixes", None)
        if prefixes is None:
            return None
        roots.extend(check_path(prefix) for prefix in prefixes if check_path(prefix) not in roots)
    return roots or None


@frozen(kw_only=True)
class AnthropicFileSearchMiddleware(BackendMiddleware):
    """Gives the agent ``glob_search`` and ``grep_search`` over ``backend``."""

    max_file_size_mb: int | None = attrs.field(default=10, validator=positive_or_none)
    """``grep_search`` skips files over this many megabytes (and says so); None: no limit."""
    max_files: int | None = attrs.field(default=10000, validator=positive_or_none)
    """``grep_search`` reads at most this many files per call (and says so); None: all."""
    allowed_path_prefixes: list[str] | None = attrs.field(default=None, validator=check_prefixes)
    """Only files under these directories are searched. None: where the agent's other file
    tools on the same backend may go (beside ``anthropic_memory`` alone: ``/memories``),
    the whole backend if one of them may go anywhere or there is none; ``["/"]``: the
    whole backend."""
    timeout: float = attrs.field(default=10.0, validator=number(above=0))
    """Seconds ``grep_search``'s pattern may run over all the lines of one search; a pattern
    that takes longer (such as ``(a+)+$``, which backtracks without end) is stopped and the
    tool answers so."""

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        bind = self.bind
        max_bytes = None if self.max_file_size_mb is None else self.max_file_size_mb * MB
        max_files = self.max_files
        limit_mb = self.max_file_size_mb
        seconds = self.timeout
        if self.allowed_path_prefixes is not None:
            roots: list[str] | None = [check_path(p) for p in self.allowed_path_prefixes]
        else:
            roots = _inherited(self, self.backend, agent_config)

        def glob_search(pattern: str, runtime: ToolRuntime, path: str = "/") -> ToolMessage | str:
            """Find files by path pattern.

            Args:
                pattern: a glob pattern such as "**/*.py" or "/docs/*.md".
                path: the directory to search under.
            """
            try:
                fs = bind(runtime)
                scope = _Scope(fs, roots)
                scope.starts(path, "glob_search")  # refuses a path out of scope
                found = [info for info in fs.glob(pattern, path) if scope.allows(info.path)]
            except BackendError as problem:
                return error(runtime, "glob_search", problem)
            if not found:
                return f"No files match {pattern!r} under {path}"
            return "\n".join(info.path for info in found)

        def grep_search(
            pattern: str,
            runtime: ToolRuntime,
            path: str = "/",
            include: str | None = None,
            output_mode: OutputMode = "files_with_matches",
        ) -> ToolMessage | str:
            """Search file contents with a regular expression.

            Args:
                pattern: a Python regular expression, matched against each line.
                path: the directory (or file) to search.
                include: only search files whose name matches this pattern, e.g. "*.py".
                output_mode: files_with_matches, content or count.
            """
            try:
                regex = SearchPattern(pattern, seconds)
                fs = bind(runtime)
                scope = _Scope(fs, roots)
                # sorted and once each: roots may nest (["/a", "/a/b"]) or come in any order
                files = sorted(
                    {
                        file
                        for start in scope.starts(path, "grep_search")
                        for file in _searched(fs, start)
                        if scope.allows(file)
                    }
                )
                if include:
                    files = _included(fs, files, include, path)
            except BackendError as problem:
                return error(runtime, "grep_search", problem)
            notes = []
            if max_files is not None and len(files) > max_files:
                notes.append(
                    f"(searched the first {max_files} of {len(files)} files: narrow path or "
                    "include to search the rest)"
                )
                files = files[:max_files]
            hits: dict[str, list[tuple[int, str]]] = {}
            too_big = 0
            size_of = getattr(fs, "size", None)
            for file in files:
                try:
                    # a file over the limit is skipped before it is read, when the backend
                    # can tell its size (every plait.backends backend can)
                    size = size_of(file) if callable(size_of) else None
                    if max_bytes is not None and size is not None and size > max_bytes:
                        too_big += 1
                        continue
                    text = fs.read_text(file)
                except BackendError:
                    continue
                if _BINARY in text:  # what grep calls a binary file: not text to show
                    continue
                if max_bytes is not None and size is None and text_size(text) > max_bytes:
                    too_big += 1
                    continue
                try:
                    found = regex.matching_lines(text_lines(text))
                except PatternTimeout as stop:
                    return error(
                        runtime,
                        "grep_search",
                        BackendError(
                            f"Error: the pattern {pattern!r} took longer than {seconds:g} s "
                            f"(stopped on {file} line {stop.line}); try a simpler pattern"
                        ),
                    )
                except BackendError as problem:  # the regex package refuses what re took
                    return error(runtime, "grep_search", problem)
                if found:
                    hits[file] = found
            if too_big:
                notes.append(
                    f"({too_big} file{'' if too_big == 1 else 's'} over {limit_mb} MB not searched)"
                )
            if not hits:
                shown = f"No matches for {pattern!r} under {path}"
            elif output_mode == "content":
                shown = "\n".join(
                    f"{file}:{n}: {line}" for file, found in hits.items() for n, line in found
                )
            elif output_mode == "count":
                shown = "\n".join(f"{file}:{len(found)}" for file, found in hits.items())
            else:
                shown = "\n".join(hits)
            return "\n".join([shown, *notes])

        return [
            Tool.from_function(f, name=f.__name__, description=TOOL_DESCRIPTIONS[f.__name__])
            for f in (glob_search, grep_search)
        ]
