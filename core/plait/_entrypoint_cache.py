"""A copy on disk of the entry-point scan, so that a process's first agent skips it.

Finding plait's entry points lists every ``sys.path`` entry and looks into each installed
distribution's metadata folder (~2 ms with a few hundred distributions installed); a
process that builds an agent and exits (a CLI call, a worker, a script) pays it at every
start. The scan's result depends only on what it reads, so it is kept on disk and used
again while all of this is as it was when it was written (the copy's *key*):

- the interpreter (``sys.executable``, ``sys.prefix``), ``sys.path`` in order, and the
  working directory when an entry is relative (``''`` is the working directory);
- each path entry's inode and modification time: installing, removing, upgrading or
  reinstalling a distribution adds or removes a metadata folder there, which changes its
  folder's time (pip moves an old folder away before it writes the new one);
- each ``entry_points.txt`` that names a plait group: its inode, time and size, as a file
  rewritten in place changes no folder (``setup.py develop`` rewrites its ``.egg-info``'s);
  checked for a plugin's folder before it is imported, for every folder before they are
  listed.

No copy is written where a change could be missed: while a stamp is under two seconds old
(a file system stamps times in steps, up to two seconds on FAT: a change in the step the
copy was made in would leave it looking current), when a path entry is a file (a zip) or
an ``.egg``, or when a finder on ``sys.meta_path`` other than the path finder finds
distributions. What the key cannot see, an entry point added in place to a distribution
that named no plait group before, ``_entrypoints.load`` heals: a name missing from a copy
read from disk, or one whose import fails, is looked for again by a scan before the error.

One JSON file per interpreter and ``sys.path`` in plait's cache folder, the ``_KEPT`` most
recently written (``_cache_dir``; ``PLAIT_NO_CACHE=1`` turns the copy off). Reading or
writing it never fails a user: any error (no home, a read-only or foreign folder, a
corrupt file) means a scan, as without a copy.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from importlib.machinery import PathFinder
from typing import Any

from plait._cache_dir import folder, read_owned, replace

FORMAT = 1
"""Changed whenever what the scan returns or the file holds changes shape."""

_RACY_NS = 2_000_000_000
"""A stamp this recent (ns) may share its time step with a change still to come."""

Point = tuple[str, str, str, str]
"""What is kept of an entry point: group, name, value and metadata folder; a scan's are
kept in the order it found them, so that read back they make the same mappings."""


_PREFIX = "entry-points-"
_KEPT = 16
"""Copies kept in the folder; writing one more removes the oldest. Each interpreter and
``sys.path`` has its own (a script's folder is on its path: two scripts, or a script and
the ``plait`` command, run in turn would otherwise each replace the other's copy and
scan at every start)."""


def _name() -> str:
    """The copy of this interpreter and path: one file each, so that two virtual
    environments, or two scripts of one, do not overwrite each other's (the key holds
    all of these, so a shared name would only cost a scan)."""
    import zlib  # imported by plait already (through tempfile, shutil)

    relative = any(isinstance(e, str) and not os.path.isabs(e) for e in sys.path)
    try:
        cwd = os.getcwd() if relative else ""
    except OSError:
        cwd = ""
    where = "\0".join([sys.executable, sys.prefix, cwd, *map(str, sys.path)])
    return f"{_PREFIX}{zlib.crc32(where.encode('utf-8', 'surrogateescape')):08x}.json"


def _prune(where: str) -> None:
    """Remove the oldest copies beyond ``_KEPT`` (by their time: each is rewritten
    whenever its path's distributions change)."""
    copies = []
    with os.scandir(where) as entries:
        for entry in entries:
            if entry.name.startswith(_PREFIX) and entry.name.endswith(".json"):
                copies.append((entry.stat().st_mtime_ns, entry.path))
    for _, path in sorted(copies, reverse=True)[_KEPT:]:
        os.unlink(path)


def key() -> dict[str, Any] | None:
    """The key of a copy made now (stamps read before the scan, so that a change during
    it shows as a different key later), or None when no copy is to be used."""
    if folder() is None:
        return None
    for finder in sys.meta_path:
        if finder is not PathFinder and getattr(finder, "find_distributions", None):
            return None
    path: list[list[Any]] = []
    relative = False
    for entry in sys.path:
        if not isinstance(entry, str):
            return None
        relative = relative or not os.path.isabs(entry)
        try:
            got = os.stat(entry or ".")
        except OSError:
            path.append([entry, -1, -1])  # absent: if it appears, its stamp differs
            continue
        if not stat.S_ISDIR(got.st_mode) or entry.lower().endswith(".egg"):
            return None
        path.append([entry, got.st_ino, got.st_mtime_ns])
    try:
        cwd = os.getcwd() if relative else None
    except OSError:
        return None
    return {
        "format": FORMAT,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "cwd": cwd,
        "path": path,
    }


def _stamp(meta: str) -> list[Any]:
    """A metadata folder and its ``entry_points.txt``'s inode, time and size."""
    got = os.stat(os.path.join(meta, "entry_points.txt"))
    return [meta, got.st_ino, got.st_mtime_ns, got.st_size]


def read(current: dict[str, Any]) -> tuple[list[Point], dict[str, list[Any]]] | None:
    """The copy's entry points if its key is ``current``, and the stamp each of their
    metadata folders had: ``unchanged`` says whether it still has it. A process checks
    the folders of the plugins it imports, and all of them before it lists them
    (``_entrypoints``): stat-ing every folder a copy names was a third of reading it."""
    where = folder()
    if where is None:
        return None
    data = read_owned(os.path.join(where, _name()))
    if data is None:
        return None
    import json  # imported for every agent already (the kernel's _calls)

    try:
        copy = json.loads(data)
        if copy["key"] != current:
            return None
        stamps = {stamped[0]: stamped for stamped in copy["dists"]}
        metas = [stamped[0] for stamped in copy["dists"]]
        points: list[Point] = []
        for group, name, value, index in copy["points"]:
            if not (isinstance(group, str) and isinstance(name, str) and isinstance(value, str)):
                return None
            points.append((group, name, value, metas[index]))
    except Exception:  # a corrupt or foreign file: any of these is a scan
        return None
    return points, stamps


def unchanged(stamped: Any) -> bool:
    """Whether a metadata folder's ``entry_points.txt`` has the stamp ``read`` gave."""
    try:
        return isinstance(stamped, list) and _stamp(stamped[0]) == stamped
    except Exception:  # a file gone, a corrupt stamp
        return False


def write(current: dict[str, Any], points: list[Point]) -> None:
    """Keep ``points``, found by a scan that began at key ``current``, unless a stamp is
    too recent to tell a later change from its own (then the next process scans)."""
    where = folder()
    if where is None:
        return
    import json

    try:
        index: dict[str, int] = {}
        for *_, meta in points:
            index.setdefault(meta, len(index))
        dists = [_stamp(meta) for meta in index]
        recent = time.time_ns() - _RACY_NS
        if any(stamped[2] > recent for stamped in (*current["path"], *dists)):
            return
        kept = [[group, name, value, index[meta]] for group, name, value, meta in points]
        text = json.dumps({"key": current, "dists": dists, "points": kept}, separators=(",", ":"))
        replace(where, _name(), text.encode("utf-8"))
        _prune(where)
    except Exception:  # a read-only or full disk, no permission: the next process scans
        return


def forget() -> None:
    """Remove this interpreter's copy (``_entrypoints.refresh``)."""
    where = folder()
    if where is None:
        return
    try:
        os.unlink(os.path.join(where, _name()))
    except OSError:
        pass
