"""Every file operation written once over four primitives (load, save, remove, list)."""

from __future__ import annotations

import abc
import datetime
from collections.abc import Iterable
from typing import Any

from plait.backends._glob import glob_matcher
from plait.backends.format import format_lines, text_size
from plait.backends.paths import check_path, is_under
from plait.backends.protocol import (
    BackendError,
    EditResult,
    FileInfo,
    FilesUpdate,
    GrepMatch,
    WriteResult,
)

__all__ = ["FileOps", "file_data", "now"]


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def file_data(content: str, created_at: str | None = None) -> dict[str, Any]:
    """The JSON-able record a file is kept as: its text and two ISO timestamps."""
    stamp = now()
    return {"content": content, "created_at": created_at or stamp, "modified_at": stamp}


def _relative(path: str, base: str) -> str:
    return path[len(base) :].lstrip("/") if base != "/" else path[1:]


class FileOps(abc.ABC):
    """The ``FileSystem`` methods over ``_load``/``_save``/``_remove``/``_paths``.

    Directories are implied by the files under them. ``_update`` collects the changes a
    state-keeping backend must hand back; others leave it ``None``.
    """

    _update: FilesUpdate | None = None

    # -- primitives ----------------------------------------------------------------------

    @abc.abstractmethod
    def _load(self, path: str) -> dict[str, Any] | None:
        """Implemented by each backend."""

    @abc.abstractmethod
    def _save(self, path: str, data: dict[str, Any]) -> None:
        """Implemented by each backend."""

    @abc.abstractmethod
    def _remove(self, path: str) -> None:
        """Implemented by each backend."""

    @abc.abstractmethod
    def _paths(self, under: str) -> Iterable[str]:
        """Implemented by each backend."""

    # -- helpers -------------------------------------------------------------------------

    def _take_update(self) -> FilesUpdate | None:
        if self._update is None:
            return None
        update, self._update = self._update, {}
        return update

    def _text(self, path: str) -> str:
        data = self._load(path)
        if data is None:
            if self._is_dir(path):
                raise BackendError(f"Error: {path} is a directory; use ls to list it")
            raise BackendError(f"Error: file {path} not found")
        content = data["content"]
        return content if isinstance(content, str) else "\n".join(content)

    def _is_dir(self, path: str) -> bool:
        if path == "/":
            return True
        return any(p != path and is_under(p, path) for p in self._paths(path))

    def _files(self, under: str) -> list[str]:
        return sorted(p for p in self._paths(under) if is_under(p, under))

    # -- the FileSystem protocol --------------------------------------------------------

    def ls(self, path: str = "/") -> list[FileInfo]:
        path = check_path(path)
        if self._load(path) is not None:
            raise BackendError(f"Error: {path} is a file, not a directory; read it with read_file")
        entries: dict[str, FileInfo] = {}
        for file in self._files(path):
            rest = _relative(file, path)
            name, _, below = rest.partition("/")
            prefix = path.rstrip("/") + "/" + name
            if below:
                entries.setdefault(prefix + "/", FileInfo(prefix + "/", is_dir=True))
            else:
                data = self._load(file) or {}
                content = data.get("content", "")
                size = text_size(content) if isinstance(content, str) else None
                entries[prefix] = FileInfo(prefix, size=size, modified_at=data.get("modified_at"))
        if not entries and path != "/":
            raise BackendError(f"Error: directory {path} not found")
        return [entries[key] for key in sorted(entries)]

    def read(self, path: str, offset: int = 0, limit: int = 2000) -> str:
        path = check_path(path)
        return format_lines(self._text(path), offset, limit, path=path)

    def size(self, path: str) -> int | None:
        """The size in UTF-8 bytes of the file at ``path``, or ``None`` if there is no
        file: a tool refuses a huge file before copying, encoding or splitting it."""
        data = self._load(check_path(path))
        if data is None:
            return None
        content = data.get("content", "")
        if isinstance(content, str):
            return text_size(content)
        lines = [str(line) for line in content]
        return sum(text_size(line) for line in lines) + max(len(lines) - 1, 0)

    def read_text(self, path: str) -> str:
        return self._text(check_path(path))

    def write(self, path: str, content: str) -> WriteResult:
        path = check_path(path)
        if path == "/":
            raise BackendError("Error: cannot write to '/': give a file path like /notes.txt")
        if self._load(path) is not None:
            raise BackendError(
                f"Error: file {path} already exists; use edit_file to change it "
                "(or write to a new path)"
            )
        if self._is_dir(path):
            raise BackendError(f"Error: {path} is a directory")
        self._save(path, file_data(content))
        return WriteResult(path, self._take_update())

    def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> EditResult:
        path = check_path(path)
        text = self._text(path)
        if not old:
            raise BackendError("Error: old_string is empty; give the exact text to replace")
        count = text.count(old)
        if count == 0:
            raise BackendError(
                f"Error: old_string not found in {path}; it must match the file exactly, "
                "including whitespace and indentation (read the file first)"
            )
        if count > 1 and not replace_all:
            raise BackendError(
                f"Error: old_string occurs {count} times in {path}; add surrounding lines "
                "to make it unique, or set replace_all to replace every occurrence"
            )
        data = self._load(path) or {}
        self._save(path, file_data(text.replace(old, new), data.get("created_at")))
        return EditResult(path, count, self._take_update())

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        path = check_path(path)
        matches = glob_matcher(pattern)
        base = None if pattern.startswith("/") else path
        found = []
        for file in self._files(path):
            subject = file if base is None else _relative(file, base)
            if matches(subject):
                found.append(FileInfo(file))
        return found

    def grep(self, pattern: str, path: str = "/", glob: str | None = None) -> list[GrepMatch]:
        path = check_path(path)
        if not pattern:
            raise BackendError("Error: pattern is empty; give the text to search for")
        if self._load(path) is not None:
            files = [path]
        else:
            files = self._files(path)
        included = glob_matcher(glob) if glob else None
        matches = []
        for file in files:
            if included is not None:
                rel = _relative(file, path)
                if not (included(rel) or included(file.rsplit("/", 1)[-1])):
                    continue
            try:
                text = self._text(file)
            except BackendError:
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if pattern in line:
                    matches.append(GrepMatch(file, number, line))
        return matches

    def delete(self, path: str) -> WriteResult:
        path = check_path(path)
        if path == "/":
            raise BackendError("Error: cannot delete '/'")
        if self._load(path) is not None:
            self._remove(path)
        else:
            files = [p for p in self._files(path) if p != path]
            if not files:
                raise BackendError(f"Error: {path} not found")
            for file in files:
                self._remove(file)
        return WriteResult(path, self._take_update())

    def rename(self, old: str, new: str) -> WriteResult:
        old, new = check_path(old), check_path(new)
        if "/" in (old, new):
            raise BackendError("Error: cannot rename '/' or rename onto it")
        if self._load(new) is not None or self._is_dir(new):
            raise BackendError(f"Error: {new} already exists")
        data = self._load(old)
        if data is not None:
            self._save(new, data)
            self._remove(old)
        else:
            if is_under(new, old):
                raise BackendError(f"Error: cannot move {old} into itself")
            files = [p for p in self._files(old) if p != old]
            if not files:
                raise BackendError(f"Error: {old} not found")
            for file in files:
                moved = self._load(file)
                if moved is not None:
                    self._save(new + file[len(old) :], moved)
                    self._remove(file)
        return WriteResult(new, self._take_update())
