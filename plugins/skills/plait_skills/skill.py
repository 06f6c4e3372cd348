"""A skill: one folder with a ``SKILL.md`` (the Agent Skills format), read through a backend.

``SKILL.md`` opens with YAML front matter between ``---`` lines: ``name`` (1-64 lowercase
letters, digits and single hyphens, the folder's own name) and ``description`` (what the
skill does and when to use it, at most 1024 characters) are required; ``license``,
``compatibility``, ``metadata`` and ``allowed-tools`` are kept as given. The rest of the
file is the body: the instructions the model loads on demand.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

import attrs
import yaml  # type: ignore[import-untyped]

from plait.backends import BackendError, FileSystem
from plait.lazy import frozen
from plait.options import expected

__all__ = ["MAX_DESCRIPTION", "SKILL_FILE", "Skill", "SkillError", "discover", "parse_skill"]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill: its front matter names and describes it."""
MAX_NAME = 64
MAX_DESCRIPTION = 1024
"""The longest ``description`` a skill may have, in characters (the Agent Skills limit)."""
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class SkillError(ValueError):
    """A skill folder whose ``SKILL.md`` is not a valid skill; the message names it."""


@frozen
class Skill:
    """One skill found in a backend: its front matter, and where its folder is."""

    name: str
    description: str
    folder: str
    """The folder's absolute path in its backend (``/pdf``, ``/skills/pdf``)."""
    backend: Any = attrs.field(eq=False, repr=False)
    """The backend the folder is in; files are read through it."""
    disk_folder: str | None = None
    """The folder's real path, when the backend is a disk directory (a shell can run its
    scripts there)."""
    extra: dict[str, Any] = attrs.field(factory=dict)
    """The other front-matter keys (``license``, ``allowed-tools``, ``metadata`` ...)."""


def parse_skill(text: str, folder: str) -> tuple[dict[str, Any], str]:
    """The front matter of a ``SKILL.md`` in ``folder`` (checked) and its body.

    :raises SkillError: naming the file and what is wrong with it.
    """
    where = f"{posixpath.join(folder, SKILL_FILE)}"
    match = _FRONT.match(text.lstrip("\ufeff"))
    if match is None:
        raise SkillError(f"{where}: expected YAML front matter between '---' lines at the top")
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as error:
        problem = str(error).replace("\n", " ")
        raise SkillError(f"{where}: the front matter is not valid YAML: {problem}") from None
    if not isinstance(front, dict):
        raise SkillError(f"{where}: front matter: {expected('a mapping of keys to values', front)}")
    name = front.get("name")
    if not isinstance(name, str) or len(name) > MAX_NAME or not _NAME.fullmatch(name):
        wanted = f"up to {MAX_NAME} lowercase letters, digits and single hyphens"
        raise SkillError(f"{where}: 'name': {expected(wanted, name)}")
    if name != posixpath.basename(folder.rstrip("/")):
        raise SkillError(
            f"{where}: 'name': {expected('the name of its folder', name)} (the folder is "
            f"{posixpath.basename(folder.rstrip('/'))!r})"
        )
    description = front.get("description")
    if (
        not isinstance(description, str)
        or not description.strip()
        or len(description) > MAX_DESCRIPTION
    ):
        wanted = f"a non-empty string of at most {MAX_DESCRIPTION} characters"
        raise SkillError(f"{where}: 'description': {expected(wanted, description)}")
    return front, text[match.end() :]


def discover(
    files: FileSystem,
    backend: Any,
    directory: str,
    *,
    disk_root: str | None = None,
    strict: bool,
) -> dict[str, Skill]:
    """The skills in the folders directly under ``directory``, by name.

    A folder without ``SKILL.md`` is not a skill and is passed over. With ``strict`` a
    broken ``SKILL.md`` raises ``SkillError``; otherwise it is left out (a skill someone
    is still writing into thread state should not stop the agent).
    """
    try:
        entries = files.ls(directory)
    except BackendError as error:
        if strict:
            raise SkillError(f"{directory}: cannot list it: {error}") from None
        return {}
    found: dict[str, Skill] = {}
    for entry in entries:
        if not entry.is_dir:
            continue
        folder = entry.path.rstrip("/")
        try:
            text = files.read_text(posixpath.join(folder, SKILL_FILE))
        except BackendError:
            continue
        try:
            front, _ = parse_skill(text, folder)
        except SkillError:
            if strict:
                raise
            continue
        extra = {k: v for k, v in front.items() if k not in ("name", "description")}
        disk = None if disk_root is None else disk_root.rstrip("/") + folder
        found[front["name"]] = Skill(
            name=front["name"],
            description=" ".join(front["description"].split()),
            folder=folder,
            backend=backend,
            disk_folder=disk,
            extra=extra,
        )
    return found
