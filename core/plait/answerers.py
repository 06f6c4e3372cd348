"""Answering a paused run at a terminal: the ``plait.answerers`` entry-point group.

When ``plait run`` or ``plait chat`` meets an interrupt, it asks whichever installed
answerer claims the interrupt's value; the CLI itself knows no plugin's payload. A plugin
that pauses with a payload of its own ships its dialog as an answerer (the
``human_in_the_loop`` plugin's approve/edit/reject/respond menu is one); a value no
answerer claims is asked as one answer, JSON or plain text (``PlainAnswerer``).

An answerer is an object (or a class, instantiated without arguments) with:

- ``claims(value) -> bool`` — whether the interrupt's value is its plugin's payload;
- ``ask(value, asker) -> resume value`` — the dialog, through the ``Asker`` (which reads
  lines from stdin, raising ``EOFError`` when input ends, and edits JSON);
- ``waiting(value, id) -> list[str]`` — the lines ``plait run`` prints for a pending one
  (``id`` is the interrupt's);
- ``example(value) -> Any`` — a resume value of the right shape, for the ``--resume`` hint;
- ``resume_help() -> str | None`` — one more line for that hint (the decision shapes).

Entry points are read once per process and loaded only when a run pauses.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

__all__ = ["Answerer", "Asker", "PlainAnswerer", "answerer_for", "installed_answerers"]

GROUP = "plait.answerers"


class Asker:
    """Reads answers from the human: one line at a time from ``stdin``."""

    def __init__(self, stdin: IO[str], out: IO[str]) -> None:
        self.stdin = stdin
        self.out = out

    def ask(self, prompt: str) -> str:
        self.out.write(prompt)
        self.out.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        if not self.stdin.isatty():
            self.out.write(line if line.endswith("\n") else line + "\n")
        return line.rstrip("\n")

    def edit_json(self, value: Any) -> Any:
        """New JSON for ``value``: in ``$VISUAL``/``$EDITOR`` on a terminal, else typed."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        current = json.dumps(value, indent=2, ensure_ascii=False)
        if editor and self.stdin.isatty():
            with tempfile.NamedTemporaryFile(
                "w", suffix=".json", delete=False, encoding="utf-8"
            ) as handle:
                handle.write(current + "\n")
            try:
                subprocess.run([*shlex.split(editor), handle.name], check=True)
                text = Path(handle.name).read_text(encoding="utf-8")
            finally:
                os.unlink(handle.name)
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                self.out.write(f"  not valid JSON ({exc.msg}); type it instead\n")
        self.out.write(f"  current: {json.dumps(value, ensure_ascii=False)}\n")
        while True:
            text = self.ask("  new value as JSON (empty keeps it): ").strip()
            if not text:
                return value
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                self.out.write(f"  not valid JSON: {exc.msg}; try again\n")


@runtime_checkable
class Answerer(Protocol):
    """A terminal dialog for one plugin's interrupt payload (see the module docstring)."""

    def claims(self, value: Any) -> bool: ...

    def ask(self, value: Any, asker: Asker) -> Any: ...

    def waiting(self, value: Any, id: str) -> list[str]: ...

    def example(self, value: Any) -> Any: ...

    def resume_help(self) -> str | None: ...


def _jsonable(value: Any) -> Any:
    """``value`` as JSON can show it (anything else as its ``repr``)."""
    return json.loads(json.dumps(value, default=repr))


class PlainAnswerer:
    """Any interrupt value: shown as JSON, answered with one line (JSON, or plain text)."""

    def claims(self, value: Any) -> bool:
        return True

    def ask(self, value: Any, asker: Asker) -> Any:
        asker.out.write(f"\nThe agent asks: {json.dumps(_jsonable(value), ensure_ascii=False)}\n")
        text = asker.ask("  answer (JSON, or plain text) > ")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text

    def waiting(self, value: Any, id: str) -> list[str]:
        return [f"Waiting for an answer ({id}): {json.dumps(_jsonable(value))}"]

    def example(self, value: Any) -> Any:
        return "your answer"

    def resume_help(self) -> str | None:
        return None


@functools.cache
def installed_answerers() -> tuple[Answerer, ...]:
    """The answerers of the installed plugins, by entry-point name (loaded once)."""
    from plait import _entrypoints

    found: list[Answerer] = []
    for _, ep in sorted(_entrypoints.available(GROUP).items()):
        obj = ep.load()
        found.append(obj() if isinstance(obj, type) else obj)
    return tuple(found)


def answerer_for(value: Any) -> Answerer:
    """The installed answerer that claims ``value``, else ``PlainAnswerer``."""
    for answerer in installed_answerers():
        if answerer.claims(value):
            return answerer
    return PlainAnswerer()
