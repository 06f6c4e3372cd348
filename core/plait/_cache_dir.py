"""plait's cache folder: files a process keeps for the next one, never needed to be right.

What is kept there is what the next process would otherwise work out again: the entry-point
scan (``_entrypoint_cache``) and attrs' compiled methods (``_attrs_compiled``). Reading or
writing a file never fails a user: any error (no home, a read-only or foreign folder, a
corrupt file) means the work is done again, as without the file.

The folder is ``$PLAIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/plait``, else
``~/.cache/plait``; ``PLAIT_NO_CACHE=1`` turns every file off.
"""

from __future__ import annotations

import os

__all__ = ["folder", "read_owned", "replace"]


def folder() -> str | None:
    """The folder of plait's cache, or None when it is turned off or there is no home."""
    if os.environ.get("PLAIT_NO_CACHE"):
        return None
    chosen = os.environ.get("PLAIT_CACHE_DIR")
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative path is to be ignored
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "plait")


def read_owned(path: str) -> bytes | None:
    """The bytes of ``path``, or None when it cannot be read or another user owns it (what
    these files hold decides what a process imports or runs)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        if hasattr(os, "getuid") and os.fstat(fd).st_uid != os.getuid():
            return None
        data = chunk = os.read(fd, 1 << 16)
        while chunk:
            chunk = os.read(fd, 1 << 16)
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return data


def replace(where: str, name: str, data: bytes) -> None:
    """Write ``data`` as ``where/name`` at once (a reader sees the old file or the new one,
    never half of one), making the folder private to the user if it is new. Raises
    ``OSError``; callers drop the file on any error."""
    import tempfile

    os.makedirs(where, mode=0o700, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=where)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, os.path.join(where, name))
    except BaseException:
        os.unlink(temporary)
        raise
