"""The ``Backend`` protocol: where file tools keep files, and the results they get back."""

from __future__ import annotations

from typing import Any, Protocol, TypeAlias, runtime_checkable

from plait.errors import PlaitError
from plait.lazy import frozen
from plait.types import ToolRuntime

__all__ = [
    "Backend",
    "BackendError",
    "EditResult",
    "FileInfo",
    "FileSystem",
    "FilesUpdate",
    "GrepMatch",
    "WriteResult",
]

FilesUpdate: TypeAlias = "dict[str, dict[str, Any] | None]"
"""A change to the ``files`` state key: path → file data, ``None`` deleting the path."""


class BackendError(PlaitError):
    """A file operation refused or failed; the message is written for the model to read."""


@frozen
class FileInfo:
    """One entry of ``ls``: ``path`` is absolute; directories end with ``/``."""

    path: str
    is_dir: bool = False
    size: int | None = None
    modified_at: str | None = None


@frozen
class GrepMatch:
    """One matching line: the file, its 1-based line number and the line's text."""

    path: str
    line: int
    text: str


@frozen
class WriteResult:
    """What a write, delete or rename did: the ``path`` it touched and, for a backend
    keeping files in thread state, the ``files_update`` the tool must return in a
    ``Command(update={"files": ...})`` (``None`` for backends that wrote elsewhere)."""

    path: str
    files_update: FilesUpdate | None = None


@frozen
class EditResult:
    """What ``edit`` did: the ``path``, how many occurrences it replaced, and the state
    update as for ``WriteResult``."""

    path: str
    count: int
    files_update: FilesUpdate | None = None


@runtime_checkable
class FileSystem(Protocol):
    """A backend bound to one tool call: every path is absolute and virtual ("/a.txt").

    Every method raises ``BackendError`` with a message the model can act on.
    """

    def ls(self, path: str = "/") -> list[FileInfo]:
        """Files and directories directly under ``path``, sorted by path."""
        ...

    def read(self, path: str, offset: int = 0, limit: int = 2000) -> str:
        """``limit`` lines from 0-based line ``offset``, numbered like ``cat -n``."""
        ...

    def read_text(self, path: str) -> str:
        """The whole file as text, without line numbers."""
        ...

    def write(self, path: str, content: str) -> WriteResult:
        """Create a new file; an existing file is an error (edit it instead)."""
        ...

    def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> EditResult:
        """Replace the exact text ``old`` by ``new``: it must occur once, unless
        ``replace_all``; no occurrence is an error."""
        ...

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        """Files under ``path`` matching ``pattern`` (``*``, ``?``, ``[...]``, ``**``),
        relative to ``path`` unless the pattern is absolute."""
        ...

    def grep(self, pattern: str, path: str = "/", glob: str | None = None) -> list[GrepMatch]:
        """Lines containing the literal text ``pattern`` in files under ``path``
        (whose name, or path relative to ``path``, matches ``glob`` if given)."""
        ...

    def delete(self, path: str) -> WriteResult:
        """Delete a file, or a directory with everything under it."""
        ...

    def rename(self, old: str, new: str) -> WriteResult:
        """Move a file or directory; ``new`` must not exist."""
        ...


@runtime_checkable
class Backend(Protocol):
    """Where files live. A backend is a value given to middleware; each tool call binds
    it to the call's ``ToolRuntime`` (thread state, store) to get a ``FileSystem``."""

    def bind(self, runtime: ToolRuntime) -> FileSystem:
        """The file system as this tool call sees it."""
        ...
