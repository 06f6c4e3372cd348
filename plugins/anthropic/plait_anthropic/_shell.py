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
from collections.abc import Iterator, Mapping, Sequence

import attrs

__all__ = ["CommandResult", "ShellError", "ShellSession", "command_names"]

READ_SIZE = 65536
MARKER_SLACK = 64
"""Bytes kept unread-as-output at the end of the buffer, so a marker split across two reads
is still found."""


class ShellError(Exception):
    """The shell could not start, or died; the message is for the model."""


@attrs.frozen
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
    """One running ``bash``; ``run`` is serialized by a lock, so threads may share it."""

    def __init__(self, *, cwd: str, env: Mapping[str, str]) -> None:
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
        try:
            self.process = subprocess.Popen(
                ["bash", "--noprofile", "--norc"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=dict(env),
                start_new_session=True,
            )
        except OSError as problem:
            raise ShellError(f"could not start bash: {problem}") from None
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


# -- the command-name guard ---------------------------------------------------------------

_OPERATORS = set(";&|()\n")
_KEYWORDS = frozenset(
    "if then else elif fi do done while until case esac in function select time ! { } [[ ]]".split()
)
_WRAPPERS = frozenset(
    "sudo doas env command builtin exec nohup nice ionice time timeout xargs watch stdbuf "
    "setsid chrt taskset flock".split()
)
_SHELLS = frozenset("bash sh dash zsh ksh".split())
"""Shells whose ``-c`` string is checked as a command line of its own."""
_VALUE_OPTIONS = frozenset("-u -g -h -p -C -D -U -r -t -n -s -k -S -E".split())
"""Wrapper options whose value is the next word (``sudo -u bob``, ``nice -n 5``)."""
_LOOP_HEADERS = frozenset({"for", "select", "case"})
_HEREDOC = re.compile(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
_ARITHMETIC = re.compile(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")


def _without_heredoc_bodies(line: str) -> str:
    """``line`` with the bodies of its here-documents removed (their text is data)."""
    out: list[str] = []
    waiting: list[tuple[str, bool]] = []
    for text in line.split("\n"):
        if waiting:
            delimiter, strip_tabs = waiting[0]
            if (text.lstrip("\t") if strip_tabs else text) == delimiter:
                waiting.pop(0)
            continue
        out.append(text)
        for found in _HEREDOC.finditer(text):
            waiting.append((found.group(2), found.group(0).startswith("<<-")))
    return "\n".join(out)


def _without_comments(line: str) -> str:
    """``line`` without its comments: a ``#`` starting a word, outside quotes, to the end of
    its line (``a#b`` and ``${#x}`` are words, not comments)."""
    out: list[str] = []
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\" and quote != "'":
            out.append(line[index : index + 2])
            index += 2
            continue
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t\n;&|()<>"):
            end = line.find("\n", index)
            index = len(line) if end < 0 else end
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _substitutions(line: str) -> Iterator[str]:
    """The text inside every ``$(...)``, ``<(...)``, ``>(...)`` and backtick pair, quoting
    ignored (so a quoted ``'$(rm x)'`` is checked too: the guard errs towards refusing)."""
    index = 0
    while index < len(line):
        if line[index : index + 2] in ("$(", "<(", ">(") and not line.startswith("$((", index):
            depth, start = 1, index + 2
            end = start
            while end < len(line) and depth:
                depth += {"(": 1, ")": -1}.get(line[end], 0)
                end += 1
            yield line[start : end - 1 if depth == 0 else end]
            index = start
        elif line[index] == "`":
            end = line.find("`", index + 1)
            end = len(line) if end < 0 else end
            yield line[index + 1 : end]
            index = end + 1
        else:
            index += 1


def _tokens(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # comments are removed first, the way bash sees them
    return list(lexer)


def command_names(line: str) -> list[str]:
    """The name of every simple command in ``line`` (``/bin/rm`` → ``rm``), each once:
    those inside substitutions first, then in order.

    Commands are separated by ``;``, ``&``, ``&&``, ``||``, ``|``, newlines, parentheses,
    and found inside ``$(...)``, ``<(...)`` and backticks; the word after ``sudo``,
    ``env``, ``xargs`` and similar wrappers is a command too, and so are the commands of
    ``eval`` and of ``bash -c``. Comments and here-document bodies are not commands.
    Raises ``ValueError`` for a line ``shlex`` cannot split (an unclosed quote).
    """
    line = _without_comments(_without_heredoc_bodies(line).replace("\\\n", ""))
    names: list[str] = []
    for inner in _substitutions(line):
        names.extend(command_names(inner))
    tokens = _tokens(_ARITHMETIC.sub(" 0 ", line).replace("`", "\n"))
    expect = True
    skip_until_separator = False
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token and set(token) <= _OPERATORS:
            expect, skip_until_separator = True, False
            continue
        if "<" in token or ">" in token:  # a redirection: its target is not a command
            index += 1
            continue
        if skip_until_separator or not expect:
            continue
        following = tokens[index] if index < len(tokens) else ""
        if token.isdigit() and ("<" in following or ">" in following):
            continue  # the 2 of 2>&1
        if token in _LOOP_HEADERS:
            skip_until_separator = True
            continue
        if token in _KEYWORDS or token == "$" or _ASSIGNMENT.match(token):
            continue
        name = os.path.basename(token) or token
        names.append(name)
        if name == "eval":  # its words are a command line
            words: list[str] = []
            while index < len(tokens) and not set(tokens[index]) <= _OPERATORS:
                words.append(tokens[index])
                index += 1
            names.extend(command_names(" ".join(words)))
            continue
        if name in _SHELLS:  # bash -c 'a; b' (options before -c skipped)
            while index < len(tokens) and tokens[index].startswith("-"):
                index += 1
                if tokens[index - 1].endswith("c") and index < len(tokens):
                    names.extend(command_names(tokens[index]))
                    index += 1
                    break
            expect = False
            continue
        if name in _WRAPPERS:
            # Its options (and env's assignments, timeout's duration) come next, then the
            # wrapped command.
            while index < len(tokens) and (
                tokens[index].startswith("-")
                or _ASSIGNMENT.match(tokens[index])
                or (name == "timeout" and tokens[index][:1].isdigit())
            ):
                index += 2 if tokens[index] in _VALUE_OPTIONS and name != "env" else 1
            continue
        expect = False
    return list(dict.fromkeys(names))


def refused(
    line: str, *, allowed: Sequence[str] | None, denied: Sequence[str] | None
) -> str | None:
    """Why ``line`` may not run (naming the command), or None when it may."""
    if allowed is None and denied is None:
        return None
    try:
        names = command_names(line)
    except ValueError as problem:
        return (
            f"the command could not be parsed to check it against the allowed and denied "
            f"commands ({problem}); nothing was run"
        )
    for name in names:
        if "$" in name:
            return (
                f"the command name {name!r} comes from a variable or substitution, so it "
                "cannot be checked against the allowed and denied commands; nothing was run"
            )
        if denied is not None and name in denied:
            return (
                f"the command {name!r} is refused: it is one of the denied commands "
                f"({', '.join(denied)}); nothing was run"
            )
        if allowed is not None and name not in allowed:
            return (
                f"the command {name!r} is refused: it is not one of the allowed commands "
                f"({', '.join(allowed)}); nothing was run"
            )
    return None
