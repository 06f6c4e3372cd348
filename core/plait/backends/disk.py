"""``DiskBackend``: files in a real directory, never touching anything outside it.

Every path is walked one component at a time from a descriptor of the root, each
directory opened relative to its parent with ``O_NOFOLLOW``: no name is ever resolved by
the kernel across a link, so a directory swapped for a symbolic link while an operation
runs cannot lead it outside the root. Links met on the way are read and resolved here,
against the root, and refused if they leave it.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import io
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from plait._convert import expected
from plait.backends._base import FileOps
from plait.backends.format import line_window
from plait.backends.paths import check_path
from plait.backends.protocol import BackendError, FileInfo, WriteResult
from plait.lazy import frozen
from plait.types import ToolRuntime

__all__ = ["DiskBackend"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_MAX_LINKS = 40
_RETRIES = 8


def _stamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


def _root(value: str | os.PathLike[str]) -> Path:
    root = Path(value).resolve()
    if not root.is_dir():
        raise ValueError(f"DiskBackend root: {expected('an existing directory', str(value))}")
    return root


@frozen
class DiskBackend:
    """Files under ``root`` on disk; "/" is ``root``. Paths pass the path guard, then are
    walked component by component through directory descriptors without following links;
    a link is resolved against ``root`` and refused if it leads outside."""

    root: Path = attrs.field(converter=_root)

    def bind(self, runtime: ToolRuntime | None = None) -> _DiskFiles:
        return _DiskFiles(self.root)


class _Escape(Exception):
    """A link leads outside the root."""


class _Changed(Exception):
    """A component turned into a link between reading it and opening it: walk again."""


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


@contextlib.contextmanager
def _host_errors(path: str, verb: str) -> Iterator[None]:
    """``OSError`` as a ``BackendError`` naming the virtual path, never the host's."""
    try:
        yield
    except _Escape:
        raise BackendError(
            f"Error: invalid path {path!r}: it resolves outside the backend's root "
            "(through a symbolic link)"
        ) from None
    except _Changed:
        raise BackendError(
            f"Error: cannot {verb} {path}: it kept changing while being opened"
        ) from None
    except FileNotFoundError:
        raise BackendError(f"Error: {path} not found") from None
    except NotADirectoryError:
        raise BackendError(f"Error: cannot {verb} {path}: a part of it is a file") from None
    except IsADirectoryError:
        raise BackendError(f"Error: {path} is a directory") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BackendError(
                f"Error: cannot {verb} {path}: too many levels of symbolic links"
            ) from None
        reason = error.strerror or type(error).__name__
        raise BackendError(f"Error: cannot {verb} {path}: {reason}") from None


class _DiskFiles(FileOps):
    def __init__(self, root: Path) -> None:
        self._root = root
        self._prefix = str(root).rstrip("/") + "/"

    # -- the walk ------------------------------------------------------------------------

    def _open_root(self) -> int:
        return os.open(self._root, _DIR_FLAGS)

    def _link_target(self, done: list[str], target: str) -> list[str]:
        """The components (from root) a link in directory ``done`` pointing at ``target``
        stands for; ``_Escape`` if it leaves the root."""
        if target.startswith("/"):
            if target.rstrip("/") == str(self._root):
                base: list[str] = []
            elif target.startswith(self._prefix):
                base = []
                target = target[len(self._prefix) :]
            else:
                raise _Escape
        else:
            base = list(done)
        for part in target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not base:
                    raise _Escape
                base.pop()
            else:
                base.append(part)
        return base

    def _walk(
        self, path: str, *, follow_last: bool, create: bool = False
    ) -> tuple[int, str, list[str]]:
        """``(descriptor of the parent directory, last name, the parent's components
        from root with links resolved)`` of ``path``; the caller closes the descriptor.
        ``""`` as the name means the descriptor is the root. Links inside root are
        followed (the last one only if ``follow_last``)."""
        parts = _split(check_path(path))
        hops = 0
        while True:
            fd = self._open_root()
            done: list[str] = []
            try:
                if not parts:
                    return fd, "", done
                restart = False
                for index, name in enumerate(parts):
                    last = index == len(parts) - 1
                    if last and not follow_last:
                        return fd, name, done
                    try:
                        target = os.readlink(name, dir_fd=fd)
                    except OSError as error:
                        if error.errno not in (errno.EINVAL, errno.ENOENT):
                            raise
                        target = None
                    if target is not None:
                        hops += 1
                        if hops > _MAX_LINKS:
                            raise OSError(errno.ELOOP, "too many levels of symbolic links")
                        parts = self._link_target(done, target) + parts[index + 1 :]
                        restart = True
                        break
                    if last:
                        return fd, name, done
                    try:
                        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(name, 0o755, dir_fd=fd)
                        restart = True
                        break
                    except OSError as error:
                        if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                            raise
                        if not stat.S_ISLNK(
                            os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                        ):
                            raise
                        hops += 1  # swapped for a link since it was read: walk again
                        if hops > _MAX_LINKS:
                            raise _Changed from None
                        restart = True
                        break
                    os.close(fd)
                    fd = child
                    done.append(name)
                if not restart:  # pragma: no cover - every path returns or restarts
                    return fd, parts[-1], done
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            if not parts:
                return self._open_root(), "", []

    @contextlib.contextmanager
    def _at(
        self, path: str, verb: str, *, follow_last: bool = True, create: bool = False
    ) -> Iterator[tuple[int, str]]:
        with _host_errors(check_path(path), verb):
            fd, name, _ = self._walk(path, follow_last=follow_last, create=create)
            try:
                yield fd, name
            finally:
                os.close(fd)

    def _open(self, path: str, flags: int, verb: str, mode: int = 0o644) -> int:
        """A descriptor of the file at ``path`` (links inside root followed), opened with
        ``flags`` and ``O_NOFOLLOW``: a link swapped in after the walk is walked again."""
        with _host_errors(check_path(path), verb):
            for _ in range(_RETRIES):
                fd, name, _ = self._walk(path, follow_last=True, create=bool(flags & os.O_CREAT))
                try:
                    if not name:
                        raise IsADirectoryError
                    return os.open(name, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=fd)
                except OSError as error:
                    if error.errno != errno.ELOOP:
                        raise
                finally:
                    os.close(fd)
            raise _Changed

    def _confine(self, path: str, verb: str) -> None:
        """Refuse ``path`` if a link on it (the last one included) leads outside root."""
        with _host_errors(check_path(path), verb):
            try:
                fd, _, _ = self._walk(path, follow_last=True)
            except FileNotFoundError:  # a missing directory holds no link
                return
            os.close(fd)

    def resolve(self, path: str) -> str:
        """The virtual path ``path`` stands for once every link on it is followed (a
        prefix check on ``path`` alone would let ``/memories/link -> ../private`` by)."""
        norm = check_path(path)
        with _host_errors(norm, "read"):
            try:
                fd, name, done = self._walk(norm, follow_last=True)
            except FileNotFoundError:  # a missing directory is no link: resolve its parent
                parent, _, name = norm.rpartition("/")
                return self.resolve(parent or "/").rstrip("/") + "/" + name
            os.close(fd)
        return "/" + "/".join([*done, name] if name else done)

    def size(self, path: str) -> int | None:
        """The size in bytes of the file at ``path`` (links inside root followed), or
        ``None`` if it is not a file: lets a tool refuse a huge file before reading it."""
        status = self._stat(check_path(path))
        return status.st_size if status is not None and stat.S_ISREG(status.st_mode) else None

    def _lstat(self, path: str) -> os.stat_result | None:
        """The status of ``path`` itself (a link is not followed), or ``None``."""
        with self._at(path, "read", follow_last=False) as (fd, name):
            try:
                return os.stat(name or ".", dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None

    def _stat(self, path: str) -> os.stat_result | None:
        """The status of what ``path`` names (links inside root followed), or ``None``."""
        try:
            with self._at(path, "read") as (fd, name):
                return os.stat(name or ".", dir_fd=fd, follow_symlinks=False)
        except BackendError:
            return None

    def _file_fd(self, path: str) -> int | None:
        """A read descriptor of the regular file at ``path``, or ``None`` if there is none.

        Anything else there (a named pipe, a device, a socket) is refused before it is
        opened: opening a FIFO for reading waits for a writer, forever, and opening a
        device can act on it. The open itself is non-blocking and checked again with
        ``fstat``, for what is swapped in between."""
        status = self._stat(path)
        if status is not None:
            if stat.S_ISDIR(status.st_mode):
                return None
            _refuse_special(path, status.st_mode)
        try:
            fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK, "read")
        except BackendError as error:
            if str(error).endswith(" not found") or "is a directory" in str(error):
                return None
            if "a part of it is a file" in str(error):
                return None
            raise
        return _regular(fd, path)

    # -- the primitives ------------------------------------------------------------------

    def _load(self, path: str) -> dict[str, Any] | None:
        fd = self._file_fd(path)
        if fd is None:
            return None
        with _host_errors(path, "read"), os.fdopen(fd, "rb") as handle:
            raw = handle.read()
            status = os.fstat(handle.fileno())
        return {
            "content": raw.decode("utf-8", errors="replace"),
            "created_at": _stamp(status.st_ctime),
            "modified_at": _stamp(status.st_mtime),
        }

    def _save(self, path: str, data: dict[str, Any]) -> None:
        status = self._stat(path)
        if status is not None:
            _refuse_special(path, status.st_mode)
        # Non-blocking: a FIFO swapped in would otherwise wait for a reader.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK
        fd = _regular(self._open(path, flags, "write"), path)
        if fd is None:  # pragma: no cover - opening a directory for writing fails first
            raise BackendError(f"Error: {path} is a directory")
        with _host_errors(path, "write"), os.fdopen(fd, "wb") as handle:
            handle.write(str(data["content"]).encode())

    def _remove(self, path: str) -> None:
        self._confine(path, "delete")
        with self._at(path, "delete", follow_last=False) as (fd, name):
            os.unlink(name, dir_fd=fd)

    def _paths(self, under: str) -> Iterable[str]:
        under = check_path(under)
        with _host_errors(under, "list"):
            try:
                fd, name, _ = self._walk(under, follow_last=True)
            except (FileNotFoundError, NotADirectoryError):
                return []  # nothing is under a path that is not there, as on every backend
            try:
                return self._walk_files(under, fd, name)
            finally:
                os.close(fd)

    def _walk_files(self, under: str, fd: int, name: str) -> list[str]:
        """The files under ``under`` (the entry ``name`` of the directory ``fd``)."""
        try:
            top = os.open(name or ".", _DIR_FLAGS, dir_fd=fd)
        except NotADirectoryError:
            # a file is the one file under itself, as for every other backend (FileOps
            # keeps the paths is_under ``under``, and is_under(path, path) holds)
            return [under] if self._is_file(under) else []
        except FileNotFoundError:
            return []
        except OSError as error:
            if error.errno == errno.ELOOP:
                return []
            raise
        found: list[str] = []
        try:
            base = under.rstrip("/")
            for directory, _dirs, files, dir_fd in os.fwalk(".", dir_fd=top):
                prefix = base + directory[1:]
                for file in files:
                    virtual = f"{prefix}/{file}"
                    mode = os.stat(file, dir_fd=dir_fd, follow_symlinks=False).st_mode
                    if stat.S_ISLNK(mode) and not self._is_file(virtual):
                        continue
                    found.append(virtual)
        finally:
            os.close(top)
        return found

    def _is_file(self, path: str) -> bool:
        status = self._stat(path)
        return status is not None and stat.S_ISREG(status.st_mode)

    def _is_dir(self, path: str) -> bool:
        status = self._stat(path)
        return status is not None and stat.S_ISDIR(status.st_mode)

    # -- operations done on disk directly ------------------------------------------------

    def read(self, path: str, offset: int = 0, limit: int = 2000) -> str:
        """Lines ``offset`` to ``offset + limit`` read as a stream: memory stays bounded by
        the lines shown (and one line), whatever the file's size."""
        path = check_path(path)
        fd = self._file_fd(path)
        if fd is None:
            if self._is_dir(path):
                raise BackendError(f"Error: {path} is a directory; use ls to list it")
            raise BackendError(f"Error: file {path} not found")
        with _host_errors(path, "read"), os.fdopen(fd, "rb") as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            return line_window(_lines(text), offset, limit, path=path)

    def ls(self, path: str = "/") -> list[FileInfo]:
        norm = check_path(path)
        if self._is_file(norm):
            raise BackendError(f"Error: {norm} is a file, not a directory")
        if not self._is_dir(norm):
            raise BackendError(f"Error: directory {norm} not found")
        base = norm.rstrip("/")
        entries = []
        with self._at(norm, "list") as (fd, name):
            top = os.open(name or ".", _DIR_FLAGS, dir_fd=fd)
            try:
                names = sorted(os.listdir(top))
            finally:
                os.close(top)
        for entry in names:
            virtual = f"{base}/{entry}"
            status = self._stat(virtual)
            if status is None:  # a link leading outside, or gone meanwhile
                continue
            if stat.S_ISDIR(status.st_mode):
                entries.append(FileInfo(virtual + "/", is_dir=True))
            else:
                entries.append(
                    FileInfo(virtual, size=status.st_size, modified_at=_stamp(status.st_mtime))
                )
        return entries

    def delete(self, path: str) -> WriteResult:
        norm = check_path(path)
        if norm == "/":
            raise BackendError("Error: cannot delete '/'")
        self._confine(norm, "delete")
        with self._at(norm, "delete", follow_last=False) as (fd, name):
            try:
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            except FileNotFoundError:
                raise BackendError(f"Error: {norm} not found") from None
            if stat.S_ISDIR(mode):
                shutil.rmtree(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        return WriteResult(norm)

    def rename(self, old: str, new: str) -> WriteResult:
        old_norm, new_norm = check_path(old), check_path(new)
        if "/" in (old_norm, new_norm):
            raise BackendError("Error: cannot rename '/' or rename onto it")
        if new_norm.startswith(old_norm + "/"):
            raise BackendError(f"Error: cannot move {old_norm} into itself")
        self._confine(old_norm, "rename")
        self._confine(new_norm, "rename")
        if self._lstat(old_norm) is None:
            raise BackendError(f"Error: {old_norm} not found")
        with self._at(old_norm, "rename", follow_last=False) as (src_fd, src):
            with self._at(new_norm, "rename", follow_last=False, create=True) as (dst_fd, dst):
                try:
                    os.stat(dst, dir_fd=dst_fd, follow_symlinks=False)
                except FileNotFoundError:
                    pass
                else:
                    raise BackendError(f"Error: {new_norm} already exists")
                os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return WriteResult(new_norm)


_SPECIAL = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _refuse_special(path: str, mode: int) -> None:
    """Refuse what is neither a regular file nor a directory, naming what it is."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = _SPECIAL.get(stat.S_IFMT(mode), "a special file")
    raise BackendError(
        f"Error: {path} is {kind}, not a regular file: it cannot be read, written or edited"
    )


def _regular(fd: int, path: str) -> int | None:
    """``fd`` made blocking again if it is a regular file; else closed, and ``None`` for a
    directory, refused for anything else."""
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            return fd
        _refuse_special(path, mode)
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def _lines(text: io.TextIOWrapper) -> Iterator[str]:
    """The file's lines as ``str.splitlines`` would cut them, read one at a time."""
    for chunk in text:
        yield from chunk.splitlines()
