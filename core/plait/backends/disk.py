"""``DiskBackend``: files in a real directory, never touching anything outside it."""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from plait.backends._base import FileOps
from plait.backends.paths import check_path
from plait.backends.protocol import BackendError, FileInfo, WriteResult
from plait.types import ToolRuntime

__all__ = ["DiskBackend"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _stamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


def _root(value: str | os.PathLike[str]) -> Path:
    root = Path(value).resolve()
    if not root.is_dir():
        raise ValueError(f"DiskBackend root {str(value)!r} is not an existing directory")
    return root


@attrs.frozen
class DiskBackend:
    """Files under ``root`` on disk; "/" is ``root``. Every path passes the path guard,
    then is resolved (symlinks included) and refused if it lands outside ``root``; the
    last component is opened with ``O_NOFOLLOW``."""

    root: Path = attrs.field(converter=_root)

    def bind(self, runtime: ToolRuntime | None = None) -> _DiskFiles:
        return _DiskFiles(self.root)


class _DiskFiles(FileOps):
    def __init__(self, root: Path) -> None:
        self._root = root

    def _real(self, path: str) -> Path:
        """The location of virtual ``path`` under root (links not followed), refused if it
        resolves outside root."""
        self._resolved(path)
        path = check_path(path)
        return self._root / path[1:] if path != "/" else self._root

    def _resolved(self, path: str) -> Path:
        """Virtual ``path`` with every symlink resolved, refused if outside root: what
        reads and writes open (with ``O_NOFOLLOW``, so a link swapped in is refused)."""
        path = check_path(path)
        real = self._root / path[1:] if path != "/" else self._root
        resolved = Path(os.path.realpath(real))
        if resolved != self._root and self._root not in resolved.parents:
            raise BackendError(
                f"Error: invalid path {path!r}: it resolves outside the backend's root "
                "(through a symbolic link)"
            )
        return resolved

    def _virtual(self, real: Path) -> str:
        return "/" + real.relative_to(self._root).as_posix() if real != self._root else "/"

    def _load(self, path: str) -> dict[str, Any] | None:
        real = self._resolved(path)
        if not real.is_file():
            return None
        try:
            fd = os.open(real, os.O_RDONLY | _NOFOLLOW)
        except OSError as error:
            raise BackendError(f"Error: cannot read {path}: {error.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read()
        stat = real.stat()
        return {
            "content": raw.decode("utf-8", errors="replace"),
            "created_at": _stamp(stat.st_ctime),
            "modified_at": _stamp(stat.st_mtime),
        }

    def _make_parents(self, real: Path) -> None:
        """Create the missing parents of ``real`` one at a time, re-checking each against
        root (a link swapped in between two levels is refused)."""
        missing = []
        parent = real.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            self._real(self._virtual(directory))
            directory.mkdir()

    def _save(self, path: str, data: dict[str, Any]) -> None:
        self._make_parents(self._real(path))
        target = self._resolved(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW
        try:
            fd = os.open(target, flags, 0o644)
        except OSError as error:
            raise BackendError(f"Error: cannot write {path}: {error.strerror}") from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(str(data["content"]).encode())

    def _remove(self, path: str) -> None:
        self._real(path).unlink()

    def _paths(self, under: str) -> Iterable[str]:
        real = self._real(under)
        if not real.is_dir():
            return []
        found = []
        for directory, dirs, files in os.walk(real, followlinks=False):
            base = Path(directory)
            for name in files:
                file = base / name
                if file.is_symlink():
                    try:
                        self._real(self._virtual(file))
                    except BackendError:
                        continue
                found.append(self._virtual(file))
            dirs[:] = [d for d in dirs if not (base / d).is_symlink()]
        return found

    def _is_dir(self, path: str) -> bool:
        return self._real(path).is_dir()

    def ls(self, path: str = "/") -> list[FileInfo]:
        real = self._real(path)
        if real.is_file():
            raise BackendError(f"Error: {check_path(path)} is a file, not a directory")
        if not real.is_dir():
            raise BackendError(f"Error: directory {check_path(path)} not found")
        entries = []
        for entry in sorted(real.iterdir()):
            virtual = self._virtual(entry)
            try:
                self._real(virtual)
            except BackendError:
                continue
            if entry.is_dir():
                entries.append(FileInfo(virtual + "/", is_dir=True))
            else:
                stat = entry.stat()
                entries.append(
                    FileInfo(virtual, size=stat.st_size, modified_at=_stamp(stat.st_mtime))
                )
        return entries

    def delete(self, path: str) -> WriteResult:
        norm = check_path(path)
        real = self._real(norm)
        if norm == "/":
            raise BackendError("Error: cannot delete '/'")
        if real.is_dir() and not real.is_symlink():
            shutil.rmtree(real)
        elif real.exists() or real.is_symlink():
            real.unlink()
        else:
            raise BackendError(f"Error: {norm} not found")
        return WriteResult(norm)

    def rename(self, old: str, new: str) -> WriteResult:
        old_norm, new_norm = check_path(old), check_path(new)
        source, target = self._real(old_norm), self._real(new_norm)
        if "/" in (old_norm, new_norm):
            raise BackendError("Error: cannot rename '/' or rename onto it")
        if not source.exists():
            raise BackendError(f"Error: {old_norm} not found")
        if target.exists() or target.is_symlink():
            raise BackendError(f"Error: {new_norm} already exists")
        if new_norm.startswith(old_norm + "/"):
            raise BackendError(f"Error: cannot move {old_norm} into itself")
        self._make_parents(target)
        os.rename(source, target)
        return WriteResult(new_norm)
