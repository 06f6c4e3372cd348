"""A persistent bash process for the ``anthropic_bash`` middleware, and the command-name
guard behind its ``allowed_commands`` / ``denied_commands`` options.

``ShellSession`` keeps one ``bash`` alive (its own process group, stdout and stderr on one
pipe) and runs each command through ``eval`` with stdin from ``/dev/null``, followed by a
``printf`` of a random marker and ``$?``: the output is everything before the marker, the
exit code what follows it. A command that outlives its timeout is answered by killing the
whole process group. Standard library only.
"""

from __future__ import annotations

import os
import re
import selectors
import shlex
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from plait.lazy import frozen

__all__ = ["CommandResult", "Launch", "ShellError", "ShellSession"]

READ_SIZE = 65536
MARKER_SLACK = 64
"""Bytes kept unread-as-output at the end of the buffer, so a marker split across two reads
is still found."""


class ShellError(Exception):
    """The shell could not start, or died; the message is for the model."""


@frozen
class Launch:
    """How to start the shell another way than plain ``bash`` (the sandbox's ``bwrap … --
    bash``)."""

    argv: tuple[str, ...]
    user: tuple[int, int] | None = None
    """The uid and gid it runs as, with no supplementary group; None: this process's."""

    def popen_options(self) -> dict[str, Any]:
        """The ``subprocess.Popen`` arguments that start it as ``user``."""
        if self.user is None:
            return {}
        uid, gid = self.user
        return {"user": uid, "group": gid, "extra_groups": []}


@frozen
class CommandResult:
    """What one command did."""

    output: str
    exit_code: int | None
    """None when the command did not finish (timed out, or the shell exited)."""
    omitted_bytes: int = 0
    timed_out: bool = False
    shell_exited: bool = False


def _cleanup(process: subprocess.Popen[bytes]) -> None:
    """Kill the shell's whole process group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
        pass
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:  # pragma: no cover
                pass


class ShellSession:
    """One running ``bash``; ``run`` is serialized by a lock, so threads may share it.

    ``launch`` starts the shell another way (the sandbox's ``bwrap … -- bash``)."""

    def __init__(self, *, cwd: str, env: Mapping[str, str], launch: Launch | None = None) -> None:
        self.cwd = cwd
        self.lock = threading.Lock()
        self._marker = f"__plait_bash_{os.urandom(8).hex()}__"
        half = len(self._marker) // 2
        # The marker is printed from two halves, so it never appears whole in the input
        # (which ``set -v`` or ``set -x`` would echo back).
        self._epilogue = (
            f"printf '\\n%s%s %s\\n' '{self._marker[:half]}' '{self._marker[half:]}' \"$?\"\n"
        ).encode()
        self._pattern = re.compile(rb"\n" + re.escape(self._marker.encode()) + rb" (\d+)\n")
        launch = launch or Launch(("bash", "--noprofile", "--norc"))
        try:
            self.process = subprocess.Popen(
                list(launch.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=dict(env),
                start_new_session=True,
                **launch.popen_options(),
            )
        except OSError as problem:
            raise ShellError(f"could not start bash: {problem}") from None
        if launch.user is not None:
            # The pipes are this process's (root's, mode 0600): the shell's user must own
            # them to reopen its own output (``> /dev/stdout``, ``tee /dev/stderr``).
            # Nothing is run before the first command is written, so this comes first.
            assert self.process.stdin is not None and self.process.stdout is not None
            for pipe in (self.process.stdin, self.process.stdout):
                os.fchown(pipe.fileno(), *launch.user)
        self._finalizer = weakref.finalize(self, _cleanup, self.process)

    @property
    def alive(self) -> bool:
        return self._finalizer.alive and self.process.poll() is None

    def run(self, command: str, *, timeout: float, max_bytes: int | None) -> CommandResult:
        """Run ``command``; the caller holds ``lock``. On a timeout the session is closed."""
        if not self.alive:
            raise ShellError("the bash session is not running")
        assert self.process.stdin is not None and self.process.stdout is not None
        script = f"eval -- {shlex.quote(command)} < /dev/null\n".encode() + self._epilogue
        try:
            self.process.stdin.write(script)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._exited(b"", 0)
        return self._collect(timeout, max_bytes)

    def _collect(self, timeout: float, max_bytes: int | None) -> CommandResult:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        kept = bytearray()
        omitted = 0
        pending = b""

        def keep(data: bytes) -> None:
            nonlocal omitted
            room = len(data) if max_bytes is None else max(0, max_bytes - len(kept))
            kept.extend(data[:room])
            omitted += len(data) - min(room, len(data))

        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    if time.monotonic() < deadline:
                        continue
                    keep(pending)
                    self.close()
                    return CommandResult(_text(kept), None, omitted_bytes=omitted, timed_out=True)
                chunk = os.read(fd, READ_SIZE)
                if not chunk:
                    keep(pending)
                    return self._exited(bytes(kept), omitted)
                pending += chunk
                found = self._pattern.search(pending)
                if found is not None:
                    keep(pending[: found.start()])
                    return CommandResult(_text(kept), int(found.group(1)), omitted_bytes=omitted)
                if len(pending) > MARKER_SLACK:
                    keep(pending[:-MARKER_SLACK])
                    pending = pending[-MARKER_SLACK:]

    def _exited(self, output: bytes, omitted: int) -> CommandResult:
        code = self.process.wait()
        self.close()
        return CommandResult(_text(output), code, omitted_bytes=omitted, shell_exited=True)

    def close(self) -> None:
        """Kill the shell and everything it started (idempotent)."""
        self._finalizer()


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")
