"""The ``bubblewrap`` sandbox of the ``anthropic_bash`` middleware: the ``bwrap`` command
line that runs a session's bash in its own namespaces.

Inside, the system directories (``/usr``, ``/etc``, ``/bin``, ``/lib``...) are mounted read-only,
``/proc`` is the sandbox's own and read-only (no ``/proc/sys`` setting can be written), there
is no ``/sys``, ``/tmp`` is a private tmpfs, the workspace is the only host directory that can
be written, there is no network (a new network namespace with only loopback), the process
sees only its own processes (a new PID namespace, torn down with the shell), runs in a new
session, holds no capability and cannot make user namespaces.

The kernel checks some permissions against the *real* user id, whatever namespace the
process is in: a sandbox started by root is still root to ``/proc/sys`` (``core_pattern``
makes the kernel run a program as root), to files it makes set-user-id, to root's files.
So when this process is root, bwrap itself is started as an unprivileged user — the
workspace's owner, or nobody (65534) when root owns the workspace. That user must be able
to reach the workspace and the ``sandbox_read_only`` directories by their paths: bwrap
binds by path (even ``--bind-fd`` re-resolves the path), so ``/root/...`` is out of reach.

The command lists become mounts:

- an allow-list empties every bin directory (``/usr/bin``, ``/usr/sbin``, ``/usr/local/bin``...
  and the read-only directories of ``PATH``) and puts back only the allowed programs (with
  the symlinks leading to them) and bash, which runs the session;
- a deny-list mounts ``/dev/null`` over every file in those directories that is, or is
  linked to, a file named like a denied command, and over every file of the read-only
  directories that is a hard link to one or holds the same bytes (``/usr/lib/git-core/git``
  for ``git``), so it cannot run (or be copied) under any name or path that reaches it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence

from plait.lazy import frozen
from plait_anthropic._shell import Launch

__all__ = [
    "BIN_DIRECTORIES",
    "NOBODY",
    "SYSTEM_DIRECTORIES",
    "Bubblewrap",
    "SandboxUnavailable",
    "sandbox_user",
]

SYSTEM_DIRECTORIES = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
"""Top-level directories mounted read-only (or recreated as the symlinks they are)."""
BIN_DIRECTORIES = (
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
)
"""Where programs live, besides the directories of ``PATH``."""
_NAMESPACES = (
    "--unshare-all",  # network, IPC, PID, UTS, cgroup
    "--unshare-user",
    "--disable-userns",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",  # no controlling terminal to push input into (TIOCSTI)
)
NOBODY = 65534
"""The uid and gid a root agent's sandbox runs as when root owns the workspace."""
PROBE_TIMEOUT = 20.0


class SandboxUnavailable(Exception):
    """bwrap is missing or cannot make the sandbox here (the message says why)."""


def sandbox_user(workspace: str | None) -> tuple[int, int] | None:
    """The uid and gid bwrap is started as: None (this process's) unless this process is
    root; then the owner of ``workspace`` (its group too), or nobody for what root owns
    and for temporary workspaces (None), which are then made nobody's."""
    if os.geteuid() != 0:
        return None
    if workspace is None:
        return (NOBODY, NOBODY)
    info = os.stat(workspace)
    return (info.st_uid or NOBODY, info.st_gid or NOBODY)


def _within(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


@frozen
class Bubblewrap:
    """The ``bwrap`` command line for one set of options; ``argv(workspace)`` is a
    session's."""

    program: str
    """The ``bwrap`` executable."""
    mounts: tuple[str, ...]
    """The arguments before the ``read_only`` binds: namespaces, system, /proc, /dev, /tmp."""
    bash: str
    """The bash executable inside the sandbox."""
    masked: tuple[str, ...] = ()
    """Files covered by ``/dev/null`` (deny-list), for inspection."""
    exposed: tuple[str, ...] = ()
    """Programs put back in the emptied bin directories (allow-list), for inspection."""
    read_only: tuple[str, ...] = ()
    """More host directories shown read-only."""
    masks: tuple[str, ...] = ()
    """The arguments after the ``read_only`` binds: the command lists' mounts."""
    user: tuple[int, int] | None = None
    """The uid and gid bwrap runs as (see :func:`sandbox_user`); None: this process's."""

    def launch(self, workspace: str) -> Launch:
        """How to start bash in the sandbox with ``workspace`` writable."""
        shown = [arg for path in self.read_only for arg in ("--ro-bind", path, path)]
        argv = (
            self.program,
            *self.mounts,
            *shown,
            *self.masks,
            *("--bind", workspace, workspace, "--chdir", workspace),
            *("--", self.bash, "--noprofile", "--norc"),
        )
        return Launch(argv, self.user)

    def shows(self, path: str, workspace: str | None) -> bool:
        """Whether the sandbox shows the host's ``path`` (absolute) at that same path: in a
        system directory, a ``read_only`` one or ``workspace``. Mounts are made at the
        paths as given, so a path is compared as written, not resolved."""
        tops = ["/" + name for name in SYSTEM_DIRECTORIES if os.path.lexists("/" + name)]
        shown = [*tops, *self.read_only, *([workspace] if workspace else [])]
        return _within(os.path.normpath(path), [os.path.normpath(p) for p in shown])

    def run(self, workspace: str, command: str) -> subprocess.CompletedProcess[bytes]:
        """Run ``command`` with bash in the sandbox once, in ``workspace``."""
        launch = self.launch(workspace)
        return subprocess.run(
            [*launch.argv, "-c", command],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            env={"PATH": os.defpath},
            **launch.popen_options(),
        )

    def writable(self, workspace: str) -> bool:
        """Whether the sandbox's user can write ``workspace``."""
        return self.run(workspace, 'test -w "$PWD" -a -x "$PWD"').returncode == 0

    @classmethod
    def build(
        cls,
        *,
        path: str,
        allowed: Sequence[str] | None = None,
        denied: Sequence[str] | None = None,
        read_only: Sequence[str] = (),
        user: tuple[int, int] | None = None,
    ) -> Bubblewrap:
        """The sandbox for a shell whose ``PATH`` is ``path``, run as ``user`` (see
        :func:`sandbox_user`), checked by starting it once.

        :raises SandboxUnavailable: no ``bwrap``, namespaces refused, bash not inside.
        """
        program = shutil.which("bwrap", path=path) or shutil.which("bwrap")
        if program is None:
            raise SandboxUnavailable(
                "the bwrap program (bubblewrap) is not installed: install it (e.g. "
                "apt-get install bubblewrap)"
            )
        mounts: list[str] = list(_NAMESPACES)
        roots: list[str] = []
        for name in SYSTEM_DIRECTORIES:
            top = "/" + name
            if os.path.islink(top):
                mounts += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                mounts += ["--ro-bind", top, top]
                roots.append(top)
        # The sandbox's own /proc, all of it read-only: /proc/sys, /proc/sysrq-trigger,
        # /proc/irq, /proc/bus, /proc/fs write to the host kernel; its processes' own files
        # (/proc/self/...) go with them. /dev/stdout and /proc/self/fd/N still reach the
        # files they stand for. /sys is not mounted at all.
        mounts += ["--proc", "/proc", "--remount-ro", "/proc"]
        mounts += ["--dev", "/dev", "--tmpfs", "/tmp"]
        for extra in read_only:
            roots.append(os.path.realpath(extra))
        start = len(mounts)

        found = shutil.which("bash", path=path)
        bash = os.path.realpath(found) if found else ""
        if not bash or not _within(bash, roots):
            raise SandboxUnavailable(
                f"bash ({found or 'not on PATH'}) is not inside the directories the sandbox "
                f"shows ({', '.join(roots)}); add its directory to sandbox_read_only"
            )
        bins = _bin_directories(path, roots)
        masked: list[str] = []
        exposed: list[str] = []
        if allowed is not None:
            for directory in bins:
                mounts += ["--tmpfs", directory]
            made: set[str] = set()
            for name in [*allowed, os.path.basename(bash)]:
                for directory in bins:
                    command = os.path.join(directory, name)
                    if os.path.lexists(command):
                        mounts += _expose(command, bins, made)
                        exposed.append(command)
            mounts += _expose(os.path.realpath(bash), bins, made)
        elif denied:
            masked = [f for f in _identical(bins, set(denied)) if _within(f, roots)]
            masked += _copies(tuple(masked), tuple(roots))
            if bash in masked:
                raise SandboxUnavailable(
                    f"denied_commands would mask bash ({bash}), which runs the session"
                )
            for target in masked:
                mounts += ["--ro-bind", "/dev/null", target]
        sandbox = cls(
            program,
            tuple(mounts[:start]),
            bash,
            tuple(masked),
            tuple(exposed),
            tuple(read_only),
            tuple(mounts[start:]),
            user,
        )
        sandbox.check()
        return sandbox

    def check(self) -> None:
        """Start bash in the sandbox once, so a kernel without user namespaces (or a bwrap
        without ``--disable-userns``) is found now, not on the first command."""
        try:
            with tempfile.TemporaryDirectory(prefix="plait-bwrap-") as workspace:
                if self.user is not None:
                    try:
                        os.chown(workspace, *self.user)
                    except OSError as problem:
                        raise SandboxUnavailable(
                            f"the agent runs as root, so the sandbox runs as uid "
                            f"{self.user[0]}, gid {self.user[1]}, which cannot be used here "
                            f"(a user namespace that does not map them?): {problem}"
                        ) from None
                done = self.run(workspace, "exit 0")
        except (OSError, subprocess.TimeoutExpired) as problem:
            raise SandboxUnavailable(f"bwrap could not be run: {problem}") from None
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
            if self.user is not None and "Can't find source path" in why:
                raise SandboxUnavailable(
                    f"the sandbox runs as uid {self.user[0]} because the agent runs as root, "
                    f"and a directory it shows is out of that user's reach: {why}; make the "
                    "directories above it searchable (o+x) or show another one"
                )
            raise SandboxUnavailable(
                f"bwrap cannot make the sandbox here (it needs user namespaces and bubblewrap "
                f"0.8 or later): {why}"
            )


def _bin_directories(path: str, roots: Sequence[str]) -> list[str]:
    """The real bin directories visible (read-only) in the sandbox, each once."""
    found: list[str] = []
    for directory in [*path.split(os.pathsep), *BIN_DIRECTORIES]:
        if not directory or not os.path.isabs(directory):
            continue
        real = os.path.realpath(directory)
        if real not in found and os.path.isdir(real) and _within(real, roots):
            found.append(real)
    return found


def _expose(program: str, bins: Sequence[str], made: set[str]) -> list[str]:
    """Mounts putting ``program`` (and each symlink on the way to its file) back into
    the emptied bin directories."""
    mounts: list[str] = []
    seen: set[str] = set()
    current = os.path.join(os.path.realpath(os.path.dirname(program)), os.path.basename(program))
    while current not in seen:
        seen.add(current)
        emptied = os.path.dirname(current) in bins
        if os.path.islink(current):
            link = os.readlink(current)
            if emptied and current not in made:
                mounts += ["--symlink", link, current]
                made.add(current)
            target = os.path.normpath(os.path.join(os.path.dirname(current), link))
            current = os.path.join(
                os.path.realpath(os.path.dirname(target)), os.path.basename(target)
            )
            continue
        if emptied and os.path.isfile(current) and current not in made:
            mounts += ["--ro-bind", current, current]
            made.add(current)
        break
    return mounts


@functools.lru_cache(maxsize=64)
def _copies(files: tuple[str, ...], roots: tuple[str, ...]) -> tuple[str, ...]:
    """The other files under ``roots`` that are one of ``files`` (a hard link) or hold
    the same bytes (a copy: ``/usr/lib/git-core/git`` of ``/usr/bin/git``), which run the
    same program by another path. Each directory is listed once; only files of a size
    one of ``files`` has are read. A walk of the system directories takes about a second,
    so it is done once per process for each deny-list (they change with packages only)."""
    wanted: dict[int, list[str]] = {}
    inodes: set[tuple[int, int]] = set()
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            continue
        wanted.setdefault(info.st_size, []).append(path)
        inodes.add((info.st_dev, info.st_ino))
    if not wanted:
        return ()
    digests: dict[str, bytes | None] = {}
    found: list[str] = []
    todo = [root for root in roots if os.path.isdir(root)]
    seen: set[tuple[int, int]] = set()
    while todo:
        directory = todo.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    if (info.st_dev, info.st_ino) not in seen:
                        seen.add((info.st_dev, info.st_ino))
                        todo.append(entry.path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue  # a symlink leads to a file masked here, or to none
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.path in files or info.st_size not in wanted:
                continue
            if (info.st_dev, info.st_ino) in inodes or any(
                _same_bytes(entry.path, other, digests) for other in wanted[info.st_size]
            ):
                found.append(entry.path)
    return tuple(sorted(found))


def _same_bytes(path: str, other: str, digests: dict[str, bytes | None]) -> bool:
    """Whether the two files hold the same bytes (digests kept across calls)."""
    for name in (path, other):
        if name not in digests:
            try:
                with open(name, "rb") as handle:
                    digests[name] = hashlib.file_digest(handle, "sha256").digest()
            except OSError:
                digests[name] = None
    return digests[path] is not None and digests[path] == digests[other]


def _identical(bins: Sequence[str], names: set[str]) -> list[str]:
    """The real files of ``names`` in ``bins`` and of every entry there that leads to
    the same file (a symlink or a hard link)."""
    entries: list[tuple[str, tuple[int, int]]] = []
    wanted: set[tuple[int, int]] = set()
    for directory in bins:
        try:
            listing = list(os.scandir(directory))
        except OSError:
            continue
        for entry in listing:
            try:
                info = os.stat(entry.path)
            except OSError:
                continue
            if not os.path.isfile(entry.path):
                continue
            key = (info.st_dev, info.st_ino)
            entries.append((entry.path, key))
            if entry.name in names:
                wanted.add(key)
    files: list[str] = []
    for entry_path, key in entries:
        real = os.path.realpath(entry_path)
        if key in wanted and real not in files:
            files.append(real)
    return sorted(files)
