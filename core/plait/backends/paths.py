"""The path guard every backend applies before touching a path."""

from __future__ import annotations

import re

from plait.backends.format import text_size
from plait.backends.protocol import BackendError

__all__ = ["MAX_COMPONENT_BYTES", "MAX_PATH_BYTES", "check_path", "is_under"]

MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 4096
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile("[\x00-\x1f]")
"""A control character: searched in C, as every file a search reads has its path checked."""


def _refuse(path: object, rule: str) -> BackendError:
    return BackendError(f"Error: invalid path {path!r}: {rule}")


def check_path(path: str) -> str:
    """The normalised form of ``path`` ("/a/b", "/" for the root), or ``BackendError``
    naming the path and the rule it breaks.

    Paths are absolute POSIX paths inside the backend: no ``..`` segment (even one that
    would stay inside: a path means one thing), no NUL, no backslash or drive letter,
    each component at most 255 bytes and the whole at most 4096.
    """
    if not isinstance(path, str):
        raise _refuse(path, "a path must be a string")
    if "\x00" in path:
        raise _refuse(path, "it contains a NUL character")
    if "\\" in path:
        raise _refuse(path, "use '/' as the separator, not '\\'")
    if _DRIVE.match(path) or _DRIVE.match(path.lstrip("/")):
        raise _refuse(path, "drive letters are not allowed; paths start at '/'")
    if not path.startswith("/"):
        raise _refuse(path, "it must be absolute, starting with '/' (e.g. '/notes.txt')")
    if text_size(path) > MAX_PATH_BYTES:
        raise _refuse(path[:64] + "...", f"it is longer than {MAX_PATH_BYTES} bytes")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    for part in parts:
        if part == "..":
            raise _refuse(path, "'..' segments are not allowed")
        if text_size(part) > MAX_COMPONENT_BYTES:
            raise _refuse(path[:64] + "...", f"a name is longer than {MAX_COMPONENT_BYTES} bytes")
        if _CONTROL.search(part):
            raise _refuse(path, "it contains a control character")
    return "/" + "/".join(parts)


def is_under(path: str, directory: str) -> bool:
    """Whether normalised ``path`` is ``directory`` or inside it."""
    if directory == "/":
        return True
    return path == directory or path.startswith(directory.rstrip("/") + "/")
