"""``anthropic_bash``: Anthropic's bash tool (``bash_20250124``) run in a real, persistent
bash process.

One tool, ``bash(command=None, restart=False)``. An Anthropic model is sent the tool by its
type (Claude knows its schema); every other provider gets an ordinary function tool with
the same two arguments. Each thread has its own bash session (started on the first
command, in ``workspace_root``, with a minimal environment), so ``cd`` and exported
variables survive from one command to the next and from one run to the next.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
import weakref
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from plait.errors import ConfigError
from plait.lazy import frozen
from plait.messages import ToolMessage
from plait.middleware import Middleware
from plait.options import FieldError, expected, number, positive_or_none
from plait.tools import Tool
from plait.types import AgentConfig, Runtime, ToolRuntime
from plait_anthropic._guard import refused
from plait_anthropic._sandbox import NOBODY, Bubblewrap, SandboxUnavailable, sandbox_user
from plait_anthropic._shell import CommandResult, ShellError, ShellSession

__all__ = ["TOOL_DESCRIPTION", "TOOL_NAME", "TOOL_TYPE", "AnthropicBashMiddleware"]

TOOL_NAME = "bash"
"""The tool's name, as Anthropic's bash tool has it."""
TOOL_TYPE = "bash_20250124"
"""The version of Anthropic's bash tool an Anthropic model is sent (other models get a
described tool)."""
NO_THREAD = ""
"""The session key of runs without a thread id: they share one session."""

TOOL_DESCRIPTION = """Run a command in a persistent bash shell and get its output.

The shell keeps its state between calls: the current directory (`cd`), exported
variables and shell functions carry over, and files you create stay. stdout and stderr
come back together, followed by the exit code when it is not 0. Commands cannot read
from stdin and have no terminal, so avoid interactive programs (editors, pagers, prompts):
pass flags such as `-y` or `--no-pager` instead. A command that runs too long is killed
and the shell restarted, which loses its state. Long output is cut: redirect it to a file
and inspect it with `head`, `tail` or `grep`.

Set `restart` to true (without a command) to start a fresh shell."""


def _directory(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not os.path.isdir(value):
        raise FieldError(attribute.name, expected("an existing directory", value))


def _absolute(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.path.abspath(os.fspath(value))


def _names(_: Any, attribute: attrs.Attribute[Any], value: list[str] | None) -> None:
    if value is None:
        return
    what = "a list of command names or None"
    if isinstance(value, str) or not all(isinstance(n, str) and n.strip() for n in value):
        raise FieldError(attribute.name, expected(what, value))
    for name in value:
        if "/" in name or name != name.strip():
            detail = f"{name!r} is not a bare command name: give 'rm', not '/bin/rm'"
            raise FieldError(attribute.name, expected(what, value, detail))


def _directories(_: Any, attribute: attrs.Attribute[Any], value: list[str]) -> None:
    if isinstance(value, str) or not all(isinstance(p, str) for p in value):
        raise FieldError(attribute.name, expected("a list of existing directories", value))
    for path in value:
        if not os.path.isdir(path):
            detail = f"{path!r} is not an existing directory"
            raise FieldError(
                attribute.name, expected("a list of existing directories", value, detail)
            )


def _absolutes(value: list[str]) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list):
        return value
    return [os.path.abspath(os.fspath(p)) if isinstance(p, str | os.PathLike) else p for p in value]


def _commands(_: Any, attribute: attrs.Attribute[Any], value: list[str]) -> None:
    if isinstance(value, str) or not all(isinstance(c, str) for c in value):
        raise FieldError(attribute.name, expected("a list of shell commands", value))


def _environment(_: Any, attribute: attrs.Attribute[Any], value: Mapping[str, str]) -> None:
    for key, item in value.items():
        if not isinstance(key, str) or not key or "=" in key:
            detail = f"{key!r} is not a variable name"
        elif not isinstance(item, str):
            detail = f"the value of {key!r} is not a string"
        else:
            continue
        raise FieldError(
            attribute.name, expected("a mapping of variable names to strings", value, detail)
        )


def _unwritable(workspace: str) -> str:
    info = os.stat(workspace)
    owner = "root" if info.st_uid == 0 else f"uid {info.st_uid}"
    return expected(
        "a directory the sandbox's user can reach and write",
        workspace,
        f"owned by {owner}, mode {stat.S_IMODE(info.st_mode):o}; the agent runs as root, so "
        "the sandboxed shell runs as the directory's owner, or as nobody (uid "
        f"{NOBODY}) when root owns it: chown it to the user the shell should run as",
    )


class _Sessions:
    """The live bash sessions of one middleware instance, and the temporary workspaces it
    made, by thread id."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_thread: dict[str, ShellSession] = {}
        self.tmpdirs: dict[str, str] = {}

    def workspace(self, key: str, owner: tuple[int, int] | None) -> str:
        """``key``'s temporary workspace, made on first use and given to ``owner`` (the
        sandbox's user, when it is not this process's); the caller holds ``lock``."""
        if key not in self.tmpdirs:
            path = tempfile.mkdtemp(prefix="plait-bash-")
            if owner is not None:
                os.chown(path, *owner)
            self.tmpdirs[key] = path
        return self.tmpdirs[key]

    def forget(self, key: str | None) -> list[str]:
        """Drop ``key``'s temporary workspace (every one for None), returning the paths."""
        with self.lock:
            if key is None:
                gone = list(self.tmpdirs.values())
                self.tmpdirs.clear()
                return gone
            path = self.tmpdirs.pop(key, None)
            return [] if path is None else [path]

    def pop(self, key: str | None) -> list[ShellSession]:
        with self.lock:
            if key is None:
                gone = list(self.by_thread.values())
                self.by_thread.clear()
                return gone
            session = self.by_thread.pop(key, None)
            return [] if session is None else [session]

    def idle(self, keep: str) -> ShellSession | None:
        """The least recently used live session other than ``keep``'s that is not running
        a command, taken out of the map (the caller holds ``lock``)."""
        for key, session in self.by_thread.items():
            if key != keep and session.lock.acquire(blocking=False):
                session.lock.release()
                del self.by_thread[key]
                return session
        return None

    def discard(self, key: str, session: ShellSession) -> None:
        """Forget ``session`` if it is still ``key``'s (another call may have replaced it)."""
        with self.lock:
            if self.by_thread.get(key) is session:
                del self.by_thread[key]


def _close_all(sessions: _Sessions) -> None:
    """The safety net (garbage collection or interpreter exit): kill, then clean up."""
    for session in sessions.pop(None):
        session.close()
    for path in sessions.forget(None):
        shutil.rmtree(path, ignore_errors=True)


@frozen(kw_only=True)
class AnthropicBashMiddleware(Middleware):
    """Gives the agent Anthropic's bash tool, run in a persistent bash session per thread."""

    workspace_root: str | None = attrs.field(
        default=None, converter=_absolute, validator=_directory
    )
    """The directory every session starts in (an existing directory); None: a fresh
    temporary directory per thread, removed when ``close()`` closes its session."""
    timeout: float = attrs.field(default=30.0, validator=number(above=0))
    """Seconds one command may run; then its process group is killed and the shell restarted."""
    max_output_lines: int | None = attrs.field(default=100, validator=positive_or_none)
    """Output is cut to its first this many lines, with a note; None: no line limit."""
    max_output_bytes: int | None = attrs.field(default=100_000, validator=positive_or_none)
    """Output is cut to its first this many bytes, with a note; None: no byte limit."""
    env: dict[str, str] = attrs.field(factory=dict, validator=_environment)
    """Extra environment variables for the shell (they override the defaults)."""
    inherit_env: bool = False
    """Start from this process's whole environment instead of only PATH, HOME and LANG."""
    startup_commands: list[str] = attrs.field(factory=list, validator=_commands)
    """Commands run, in order, each time a session starts (any failure stops the start)."""
    shutdown_commands: list[str] = attrs.field(factory=list, validator=_commands)
    """Commands run, in order, when ``close()`` or a restart ends a session (failures are
    ignored)."""
    allowed_commands: list[str] | None = attrs.field(default=None, validator=_names)
    """Only these command names may run (every command in the line, parsed with bashlex; a
    line it cannot reduce to plain names is refused); None: any."""
    denied_commands: list[str] | None = attrs.field(default=None, validator=_names)
    """These command names may not run (every command in the line, parsed with bashlex; a
    line it cannot reduce to plain names is refused)."""
    max_sessions: int | None = attrs.field(default=16, validator=positive_or_none)
    """At most this many shells run at once; starting one more closes the least recently
    used idle shell (its files stay; its thread's next command gets a fresh shell)."""
    session_scope: Literal["thread", "run"] = "thread"
    """How long a session lives: for "thread", until ``close()`` (or exit); for "run", until
    the run ends."""
    tool_description: str | None = None
    """Replaces the tool's description shown to non-Anthropic models; None: the default."""
    sandbox: Literal["none", "bubblewrap"] = attrs.field(
        default="none", validator=attrs.validators.in_(("none", "bubblewrap"))
    )
    """"bubblewrap": each shell runs in a bwrap sandbox (read-only system, the workspace the
    only writable host directory, no network, denied programs unreachable); "none": on the
    host, as this process's user."""
    sandbox_read_only: list[str] = attrs.field(
        factory=list, converter=_absolutes, validator=_directories
    )
    """More host directories the sandbox shows read-only (a virtualenv, /opt/tool)."""

    _sessions: _Sessions = attrs.field(init=False, factory=_Sessions, eq=False, repr=False)
    _bubblewrap: Bubblewrap | None = attrs.field(init=False, default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.allowed_commands is not None and self.denied_commands is not None:
            raise ConfigError(
                "allowed_commands and denied_commands cannot both be given: choose an "
                "allow-list or a deny-list"
            )
        if self.sandbox == "bubblewrap":
            try:
                sandbox = Bubblewrap.build(
                    path=self._environment(os.getcwd())["PATH"],
                    allowed=self.allowed_commands,
                    denied=self.denied_commands,
                    read_only=self.sandbox_read_only,
                    user=sandbox_user(self.workspace_root),
                )
            except SandboxUnavailable as problem:
                raise ConfigError(f"sandbox='bubblewrap': {problem}") from None
            if sandbox.user is not None and self.workspace_root is not None:
                if not sandbox.writable(self.workspace_root):
                    raise FieldError("workspace_root", _unwritable(self.workspace_root))
            object.__setattr__(self, "_bubblewrap", sandbox)
        elif self.sandbox_read_only:
            raise ConfigError("sandbox_read_only is only used with sandbox='bubblewrap'")
        weakref.finalize(self, _close_all, self._sessions)

    # -- sessions ------------------------------------------------------------------------

    def close(self, thread_id: str | None = None) -> None:
        """Close one thread's session (``thread_id``; ``""`` for runs without one), or
        every session (None): run the shutdown commands, kill the shells and everything
        they started, and remove the temporary workspaces."""
        for session in self._sessions.pop(thread_id):
            with session.lock:
                self._shut_down(session)
        for path in self._sessions.forget(thread_id):
            shutil.rmtree(path, ignore_errors=True)

    def _shut_down(self, session: ShellSession) -> None:
        for command in self.shutdown_commands:
            if not session.alive:
                break
            session.run(command, timeout=self.timeout, max_bytes=0)
        session.close()

    def _environment(self, cwd: str) -> dict[str, str]:
        if self.inherit_env:
            environ = dict(os.environ)
        else:
            environ = {
                "PATH": os.environ.get("PATH", os.defpath),
                "HOME": cwd,
                "LANG": os.environ.get("LANG", "C.UTF-8"),
            }
        return {**environ, **self.env}

    def _start(self, cwd: str) -> ShellSession:
        if self._bubblewrap is None:
            session = ShellSession(cwd=cwd, env=self._environment(cwd))
        else:
            launch = self._bubblewrap.launch(cwd)
            session = ShellSession(cwd=cwd, env=self._environment(cwd), launch=launch)
        for command in self.startup_commands:
            result = session.run(command, timeout=self.timeout, max_bytes=self.max_output_bytes)
            if result.exit_code != 0 or result.timed_out:
                session.close()
                raise ShellError(
                    f"the startup command {command!r} failed "
                    f"({self._status(result)}): {result.output.strip() or '(no output)'}"
                )
        return session

    def _session(self, key: str) -> ShellSession:
        sessions = self._sessions
        evicted: list[ShellSession] = []
        with sessions.lock:
            session = sessions.by_thread.pop(key, None)
            if session is not None and session.alive:
                sessions.by_thread[key] = session  # now the most recently used
                return session
            while self.max_sessions is not None and len(sessions.by_thread) >= self.max_sessions:
                oldest = sessions.idle(keep=key)
                if oldest is None:
                    break  # every other shell is busy: go over the cap rather than wait
                evicted.append(oldest)
            owner = None if self._bubblewrap is None else self._bubblewrap.user
            cwd = self.workspace_root or sessions.workspace(key, owner)
            session = self._start(cwd)
            sessions.by_thread[key] = session
        for old in evicted:
            with old.lock:
                self._shut_down(old)
        return session

    def shell_sees(self, path: str) -> bool:
        """Whether a command in this shell finds the host's ``path`` (absolute) at that
        same path: always without the sandbox; in it, when ``path`` is in a system
        directory, ``sandbox_read_only`` or ``workspace_root``. Another middleware asks
        before it tells the model to run a file there (``skills``, for a skill's scripts)."""
        if self._bubblewrap is None:
            return True
        return self._bubblewrap.shows(path, self.workspace_root)

    def sessions(self) -> dict[str, ShellSession]:
        """The live sessions by thread id (``""`` for runs without one), for inspection."""
        with self._sessions.lock:
            return {k: s for k, s in self._sessions.by_thread.items() if s.alive}

    def after_agent(self, runtime: Runtime) -> None:
        if self.session_scope == "run":
            self.close(runtime.thread_id or NO_THREAD)

    # -- the tool ------------------------------------------------------------------------

    def _status(self, result: CommandResult) -> str:
        if result.timed_out:
            return f"timed out after {self.timeout:g} s"
        return f"exit code {result.exit_code}"

    def _format(self, result: CommandResult) -> str:
        text = result.output.removesuffix("\n")
        notes: list[str] = []
        if self.max_output_lines is not None:
            lines = text.split("\n")
            if len(lines) > self.max_output_lines:
                omitted = len(lines) - self.max_output_lines
                text = "\n".join(lines[: self.max_output_lines])
                notes.append(f"[output truncated: {omitted} more lines omitted]")
        if result.omitted_bytes:
            notes.append(f"[output truncated: {result.omitted_bytes} more bytes omitted]")
        if result.exit_code not in (0, None):
            notes.append(f"[exit code {result.exit_code}]")
        if not text and not notes:
            return "(no output)"
        return "\n".join(part for part in (text, *notes) if part)

    def _run(self, key: str, command: str | None, restart: bool) -> tuple[str, bool]:
        """The answer's text, and whether it is an error."""
        if restart:
            for old in self._sessions.pop(key):
                with old.lock:
                    self._shut_down(old)
            session = self._session(key)
            if not command:
                return (
                    f"bash session restarted in {session.cwd}: variables, functions and the "
                    "current directory are back to their start",
                    False,
                )
        if not command or not command.strip():
            return "Error: give a command to run, or restart=true to restart the session", True
        why = refused(command, allowed=self.allowed_commands, denied=self.denied_commands)
        if why is not None:
            return f"Error: {why}", True
        while True:
            session = self._session(key)
            with session.lock:
                if session.alive:  # not closed by another call while this one waited
                    result = session.run(
                        command, timeout=self.timeout, max_bytes=self.max_output_bytes
                    )
                    break
        text = self._format(result)
        if result.timed_out:
            self._sessions.discard(key, session)
            try:
                self._session(key)
            except ShellError:
                pass  # a failing startup command: the next command reports it
            return (
                f"Error: the command timed out after {self.timeout:g} s and was killed; the "
                "bash session was restarted, so its state (current directory, variables) is "
                "lost." + (f" Output before the timeout:\n{text}" if result.output else ""),
                True,
            )
        if result.shell_exited:
            self._sessions.discard(key, session)
            return (
                f"{text}\n[the shell exited with code {result.exit_code}; the next command "
                "starts a fresh session]",
                False,
            )
        return text, False

    def agent_tools(self, agent_config: AgentConfig) -> list[Tool]:
        run = self._run

        def bash(
            runtime: ToolRuntime, command: str | None = None, restart: bool = False
        ) -> ToolMessage:
            """Run a bash command, or restart the shell.

            Args:
                command: the bash command to run (several lines, pipes and && are fine).
                restart: true to kill the shell and start a fresh one.
            """
            key = runtime.runtime.thread_id or NO_THREAD
            try:
                text, failed = run(key, command, restart)
            except ShellError as problem:
                text, failed = f"Error: {problem}", True
            return ToolMessage(
                text,
                tool_call_id=runtime.tool_call_id,
                name=TOOL_NAME,
                status="error" if failed else "success",
            )

        return [
            Tool.from_function(
                bash,
                name=TOOL_NAME,
                description=self.tool_description or TOOL_DESCRIPTION,
                provider_options={"anthropic": {"type": TOOL_TYPE}},
            )
        ]
