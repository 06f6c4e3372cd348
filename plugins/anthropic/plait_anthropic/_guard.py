"""The command-name guard of ``allowed_commands`` / ``denied_commands``.

A line is parsed with ``bashlex`` (a port of bash's own grammar). Every simple command,
in lists, pipelines, subshells, groups, loops, ``if``, functions, command and process
substitutions, must start with a plain name: written with letters, digits and ``./_+-``
only, no quote, escape, expansion, glob or brace. Anything the guard cannot resolve to
such names is refused, never guessed: an unparsable line, a substitution or variable as
the name, a wrapper option it does not know, ``bash`` without a plain ``-c`` string,
builtins that change what a name runs (``alias``, ``hash``, ``trap``, ``enable``,
``source``, ``coproc``) and assignments to ``PATH``, ``BASH_*``, ``LD_*``, ``IFS``...
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

import bashlex  # type: ignore[import-untyped]
import bashlex.errors  # type: ignore[import-untyped]

__all__ = ["Unresolvable", "command_names", "refused"]


class Unresolvable(ValueError):
    """A line the guard cannot reduce to plain command names (the message says why)."""


_QUOTED_HEREDOC = re.compile(r"(<<-?[ \t]*)(['\"])([A-Za-z_][\w.-]*)\2")
_PLAIN = re.compile(r"[A-Za-z0-9_./+-]+")
_ARITHMETIC = re.compile(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)")
_PROTECTED = (
    r"(PATH|ENV|BASH_ENV|BASH_[A-Z_]*|BASHOPTS|SHELLOPTS|IFS|LD_[A-Z_]+|CDPATH|"
    r"PROMPT_COMMAND|PS4|GLOBIGNORE|EXECIGNORE|FUNCNEST)"
)
_PROTECTED_ASSIGNMENT = re.compile(_PROTECTED + r"(\[[^]]*\])?\+?=")
_PROTECTED_NAME = re.compile(_PROTECTED + r"(\[|\+?=|$)")
_VARIABLE_BUILTINS = frozenset(
    "declare typeset export local readonly read unset mapfile readarray printf let getopts".split()
)
_NEVER = frozenset("alias hash trap enable source . coproc fc bind".split())
"""Builtins that change what a later name runs, or run text the guard cannot see."""
_SHELLS = frozenset("bash sh dash zsh ksh".split())


class _Wrapper:
    """A command running the command after its options: which options it may take (flags
    alone, or with a value), and how many plain words come before the command."""

    def __init__(self, flags: str = "", values: str = "", before: int = 0) -> None:
        self.flags = frozenset(flags.split())
        self.values = frozenset(values.split())
        self.before = before


_WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper("-E -n -H -k", "-u -g"),
    "doas": _Wrapper("-n", "-u"),
    "env": _Wrapper(),
    "command": _Wrapper(),
    "builtin": _Wrapper(),
    "exec": _Wrapper(),
    "nohup": _Wrapper(),
    "nice": _Wrapper("", "-n"),
    "time": _Wrapper("-p"),
    "timeout": _Wrapper("--foreground --preserve-status -v", "-s -k", before=1),
    "xargs": _Wrapper("-0 -r -t -x --null --no-run-if-empty", "-n -L -P -I -d -s -E"),
    "setsid": _Wrapper("-f -w"),
    "stdbuf": _Wrapper("", "-i -o -e"),
    "ionice": _Wrapper(),
    "taskset": _Wrapper(before=1),
    "chrt": _Wrapper(before=1),
    "flock": _Wrapper(before=1),
    "watch": _Wrapper("-t -d -x -c -e -g", "-n"),
}
"""What the guard knows of each wrapper; any other option of these is refused."""


def _children(node: Any) -> Iterator[Any]:
    for attr in ("parts", "list", "command", "output"):
        value = getattr(node, attr, None)
        if isinstance(value, list):
            yield from value
        elif isinstance(value, bashlex.ast.node):
            yield value


def _source(line: str, node: Any) -> str:
    start, end = node.pos
    return line[start:end]


class _Walk:
    def __init__(self, line: str, quoted: frozenset[str]) -> None:
        self.line = line
        self.quoted = quoted  # here-document delimiters that were quoted: bodies are data
        self.names: list[str] = []

    def visit(self, node: Any) -> None:
        if node.kind == "command":
            self.command(node)
            return
        if node.kind == "redirect":
            heredoc = getattr(node, "heredoc", None)
            quoted = getattr(node.output, "word", None) in self.quoted
            if heredoc is not None and not quoted and re.search(r"\$\(|`|[<>]\(", heredoc.value):
                raise Unresolvable(
                    "a here-document holds a substitution (it would run unless its "
                    "delimiter is quoted)"
                )
        for child in _children(node):
            self.visit(child)

    def plain(self, word: Any) -> str:
        """The name a command word stands for, or ``Unresolvable``."""
        text = _source(self.line, word)
        if word.parts or not _PLAIN.fullmatch(text) or word.word != text:
            shown = text if text else word.word
            if "$" in text or "`" in text:
                raise Unresolvable(
                    f"the command name {shown!r} comes from a variable or substitution"
                )
            raise Unresolvable(
                f"the command name {shown!r} is not a plain name (quotes, escapes, globs or braces)"
            )
        return os.path.basename(text) or text

    def command(self, node: Any) -> None:
        words = []
        for part in node.parts:
            if part.kind == "assignment":
                if _PROTECTED_ASSIGNMENT.match(part.word):
                    raise Unresolvable(f"it assigns {part.word.split('=')[0].rstrip('+')}")
                self.visit(part)
            elif part.kind == "word":
                words.append(part)
            else:
                self.visit(part)
        for word in words:  # substitutions in the words run first
            self.visit(word)
        self.run(words)

    def run(self, words: list[Any]) -> None:
        if not words:
            return
        name = self.plain(words[0])
        self.names.append(name)
        rest = words[1:]
        if name in _NEVER:
            raise Unresolvable(f"{name!r} changes what a command name runs")
        if name in _VARIABLE_BUILTINS:
            for word in rest:
                if _PROTECTED_NAME.match(word.word.lstrip("-+")):
                    raise Unresolvable(f"{name} {word.word!r} changes a protected variable")
        if name == "eval":
            self.nested(" ".join(self.text(word, name) for word in rest))
        elif name in _SHELLS:
            self.shell(name, rest)
        elif name in _WRAPPERS:
            self.wrapper(name, rest)

    def text(self, word: Any, owner: str) -> str:
        if word.parts:
            raise Unresolvable(f"the command line given to {owner} holds an expansion")
        return str(word.word)

    def nested(self, line: str) -> None:
        self.names.extend(command_names(line))

    def shell(self, name: str, rest: list[Any]) -> None:
        if not rest:
            return
        if rest[0].word != "-c" or len(rest) < 2 or rest[1].word.startswith(("-", "+")):
            raise Unresolvable(
                f"{name} runs a script or takes options the guard does not follow; only "
                f"{name} -c 'COMMANDS' is checked"
            )
        self.nested(self.text(rest[1], name))

    def wrapper(self, name: str, rest: list[Any]) -> None:
        known = _WRAPPERS[name]
        index = 0
        while index < len(rest) and rest[index].word.startswith("-"):
            option = rest[index].word
            if option in known.values:
                index += 2
            elif option in known.flags or (name == "stdbuf" and option[:2] in known.values):
                index += 1
            else:
                raise Unresolvable(f"{name} option {option!r} is not one the guard follows")
        if name == "env":
            while index < len(rest) and "=" in rest[index].word:
                if _PROTECTED_ASSIGNMENT.match(rest[index].word):
                    raise Unresolvable(f"env sets {rest[index].word.split('=')[0]}")
                index += 1
        index += known.before
        if name == "watch" and "-x" not in {w.word for w in rest[:index]}:
            self.nested(" ".join(self.text(word, name) for word in rest[index:]))
            return
        self.run(rest[index:])


def _no_arithmetic(line: str) -> str:
    """``$((...))`` without a substitution inside is a number to the guard (bashlex does
    not parse arithmetic)."""

    def replace(found: re.Match[str]) -> str:
        text = found.group(0)
        inner = text[3:-2]
        if "$(" in inner or "`" in inner:
            return text
        return "0".ljust(len(text))

    return _ARITHMETIC.sub(replace, line)


def command_names(line: str) -> list[str]:
    """The name of every simple command in ``line`` (``/bin/rm`` → ``rm``), each once,
    those inside substitutions before the command holding them. ``Unresolvable`` (a
    ``ValueError``) for what cannot be reduced to plain names."""
    if not line.strip():
        return []
    line = _no_arithmetic(line)
    # bashlex takes a quoted delimiter with its quotes: unquote it in place (same length)
    quoted = frozenset(found.group(3) for found in _QUOTED_HEREDOC.finditer(line))
    line = _QUOTED_HEREDOC.sub(lambda found: f"{found.group(1)} {found.group(3)} ", line)
    try:
        trees = bashlex.parse(line)
    except (bashlex.errors.ParsingError, NotImplementedError, IndexError, AttributeError) as e:
        raise Unresolvable(f"bashlex cannot parse it: {e}") from None
    walk = _Walk(line, quoted)
    for tree in trees:
        walk.visit(tree)
    return list(dict.fromkeys(walk.names))


def refused(
    line: str, *, allowed: Sequence[str] | None, denied: Sequence[str] | None
) -> str | None:
    """Why ``line`` may not run (naming the command), or None when it may."""
    if allowed is None and denied is None:
        return None
    try:
        names = command_names(line)
    except Unresolvable as problem:
        return (
            f"the command cannot be checked against the allowed and denied commands: "
            f"{problem}; nothing was run"
        )
    for name in names:
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
