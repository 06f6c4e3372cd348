"""Lazy entry-point lookup: names are read from metadata, objects imported on demand."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from importlib.machinery import PathFinder
from typing import TYPE_CHECKING, Any

from plait import _entrypoint_cache
from plait.errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import Distribution

GROUPS = {
    "middleware": "plait.middleware",
    "models": "plait.models",
    "checkpointers": "plait.checkpointers",
    "stores": "plait.stores",
    "commands": "plait.commands",
    "tool_adapters": "plait.tool_adapters",
}


BUILTIN: dict[str, dict[str, str]] = {
    "plait.middleware": {
        **{
            name: "anthropic"
            for name in (
                "anthropic_prompt_caching",
                "anthropic_bash",
                "anthropic_text_editor",
                "anthropic_memory",
                "anthropic_file_search",
            )
        },
        **{
            name: name
            for name in (
                "agents_md",
                "context_editing",
                "dbos",
                "filesystem",
                "guardrails",
                "handoff",
                "human_in_the_loop",
                "llm_tool_emulator",
                "llm_tool_selector",
                "mcp",
                "model_call_limit",
                "model_fallback",
                "model_refusal",
                "model_retry",
                "model_router",
                "otel",
                "pii",
                "response_cache",
                "skills",
                "subagents",
                "summarization",
                "todo_list",
                "tool_call_limit",
                "tool_errors",
                "tool_retry",
                "tool_search",
                "usage_limit",
            )
        },
    },
    "plait.models": {
        "anthropic": "anthropic",
        "google": "google",
        "langchain": "langchain",
        "openai-responses": "openai_responses",
    },
    "plait.checkpointers": {"postgresql": "postgres", "postgres": "postgres"},
    "plait.stores": {"postgresql": "postgres", "postgres": "postgres"},
    "plait.commands": {
        "worker": "dbos",
        "submit": "dbos",
        "workers": "dbos",
        "mcp-serve": "mcp",
        "serve": "serve",
        "dev": "serve",
        "eval": "evals",
    },
    "plait.answerers": {"human_in_the_loop": "human_in_the_loop"},
    "plait.text_marks": {
        "cache_control": "anthropic",
        "citations": "anthropic",
        "thought_signature": "google",
    },
    "plait.tool_adapters": {"langchain": "langchain"},
    "plait.image_forms": {"inlineData": "google", "fileData": "google"},
    "plait.content_blocks": {"anthropic": "anthropic", "openai-responses": "openai_responses"},
}
"""Entry points of plait's built-in plugins, by group: name → folder under ``plugins/``
(its distribution is ``plait-<folder with dashes>``); for the hint when one is missing."""


def _missing_hint(group: str, name: str, known: list[str]) -> str:
    folder = BUILTIN.get(group, {}).get(name)
    if folder is not None:
        dist = "plait-" + folder.replace("_", "-")
        return (
            f"; it is a built-in plugin of the distribution {dist}: install it with "
            f"`pip install ./plugins/{folder}` from a checkout of plait "
            f"(or `pip install . ./plugins/*` for every built-in plugin)"
        )
    import difflib

    close = difflib.get_close_matches(name, [*known, *BUILTIN.get(group, {})], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def disabled() -> frozenset[str]:
    """Names blocked by ``PLAIT_DISABLE_PLUGINS`` (comma separated)."""
    raw = os.environ.get("PLAIT_DISABLE_PLUGINS", "")
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def _key(name: str) -> str:
    """importlib.metadata's identity of a distribution: its name, PEP 503 normalized with
    underscores, so ``Foo.Bar``, ``foo-bar`` and ``foo_bar`` are one distribution."""
    key = name.lower().replace("-", "_").replace(".", "_")
    # a run of separators is one underscore; most names have none, and skip the pattern
    return _SEPARATORS.sub("_", key) if "__" in key else key


_SEPARATORS = re.compile(r"[-_.]+")
_META_SUFFIXES = (".dist-info", ".egg-info")


class EntryPoint:
    """One installed entry point of a plait group, as ``importlib.metadata.EntryPoint``
    gives it (``name``, ``value``, ``group``, ``load()``, ``dist``), made without
    importing ``importlib.metadata``: importing it (with email, zipfile, csv...) costs
    more than plait's whole scan, and an agent never needs it."""

    __slots__ = ("_where", "group", "name", "value")

    def __init__(self, name: str, value: str, group: str, where: str | Distribution) -> None:
        self.name = name
        self.value = value
        self.group = group
        self._where = where

    def load(self) -> Any:
        """Import the object ``value`` names (``package.module:attribute``); extras
        (``[...]``) are ignored, as importlib.metadata ignores them."""
        name = self.value.partition("[")[0].replace(" ", "")
        module, colon, attribute = name.partition(":")
        path = attribute.split(".") if attribute else []
        if colon and name.isascii() and all(p.isidentifier() for p in (*module.split("."), *path)):
            # pkgutil.resolve_name's one-import form, as it resolves it, without importing
            # pkgutil and compiling its pattern (a millisecond for an agent's first build)
            found = importlib.import_module(module)
            for part in path:
                found = getattr(found, part)
            return found
        import pkgutil

        return pkgutil.resolve_name(name)

    @property
    def dist(self) -> Distribution:
        """The distribution that declares it (its metadata is read when asked)."""
        from importlib.metadata import Distribution

        where = self._where
        return where if isinstance(where, Distribution) else Distribution.at(where)

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


def _in_path_entry(entry: str) -> Iterator[tuple[str, str | Distribution]]:
    """The distributions of one ``sys.path`` entry as (key, metadata folder), in the order
    importlib.metadata finds them: ``*.dist-info`` and ``*.egg-info`` folders, keyed by the
    name their folder starts with, then an ``.egg``'s ``EGG-INFO``; a zip file's through
    importlib.metadata itself."""
    root = entry or "."
    try:
        children = os.listdir(root)
    except NotADirectoryError:
        from importlib.metadata import distributions

        for dist in distributions(path=[entry]):
            yield _key(dist.name), dist
        return
    except OSError:
        return
    prefix = os.path.join(root, "")  # joined by hand below: a site-packages lists hundreds
    eggs: list[str] = []
    is_egg = os.path.basename(entry).lower().endswith(".egg")
    for child in children:
        # most children are packages and modules: one look at the last five characters
        # (in any case) passes them by
        tail = child[-5:]
        if tail != "-info" and tail.lower() != "-info":
            continue
        low = child.lower()
        if low.endswith(_META_SUFFIXES):
            yield _key(low.rpartition(".")[0].partition("-")[0]), prefix + child
        elif is_egg and low == "egg-info":
            eggs.append(prefix + child)
    if eggs:
        from importlib.metadata import Distribution

        for folder in eggs:
            dist = Distribution.at(folder)
            yield _key(dist.name), dist


def _everywhere() -> Iterator[tuple[str, str | Distribution]]:
    """Every installed distribution, in the order of ``importlib.metadata.distributions()``:
    each finder on ``sys.meta_path`` that finds distributions, the path finder's being the
    scan of ``sys.path`` above."""
    for finder in sys.meta_path:
        if finder is PathFinder:
            for entry in sys.path:
                yield from _in_path_entry(entry)
            continue
        find = getattr(finder, "find_distributions", None)
        if find is not None:
            from importlib.metadata import DistributionFinder

            for dist in find(DistributionFinder.Context()):
                yield _key(dist.name), dist


_ENTRY_POINTS = os.sep + "entry_points.txt"
_CHUNK = 1 << 16


def _plait_entry_points(where: str | Distribution) -> str | None:
    """The ``entry_points.txt`` of a distribution if it names a ``plait.`` group (the
    bytes are searched before decoding: most installed distributions name none)."""
    if not isinstance(where, str):
        text = where.read_text("entry_points.txt")
        return text if text is not None and "[plait." in text else None
    # Plain descriptors: most distributions have no entry_points.txt, and a failed
    # os.open costs half what a failed open() does; os.access, which raises nothing, tells
    # them apart for less than the error a failed os.open raises.
    path = where + _ENTRY_POINTS
    if not os.access(path, os.F_OK):
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = chunk = os.read(fd, _CHUNK)
        while chunk:  # most files are read whole by the first read
            chunk = os.read(fd, _CHUNK)
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8") if b"[plait." in data else None


def _plait_points(text: str, where: str | Distribution) -> Iterator[EntryPoint]:
    """The entry points of ``plait.`` groups in an ``entry_points.txt``, read as
    importlib.metadata reads the file (its reader is private): each line stripped, blank
    lines and ``#`` comments skipped, ``[group]`` opens a group, ``name = value`` split at
    the first ``=``. ``test_entrypoints`` checks the result against importlib.metadata."""
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        name, equals, value = line.partition("=")
        if equals and group.startswith("plait."):
            yield EntryPoint(name.strip(), value.strip(), group, where)


def _scan() -> dict[str, dict[str, EntryPoint]]:
    """Every installed entry point of a ``plait.*`` group, by group then name.

    What ``importlib.metadata.entry_points()`` would select, for a fraction of its cost:
    only ``entry_points.txt`` is read, and only one naming a ``plait.`` group is parsed.
    As there, the first distribution of a name on the path wins (a shadowed copy further
    on is ignored), and within a group the first entry point of a name.
    """
    found: dict[str, dict[str, EntryPoint]] = {}
    seen: set[str] = set()
    for key, where in _everywhere():
        if key in seen:
            continue
        seen.add(key)
        text = _plait_entry_points(where)
        if text is None:
            continue
        for point in _plait_points(text, where):
            found.setdefault(point.group, {}).setdefault(point.name, point)
    return found


def _lookup(
    *, from_disk: bool
) -> tuple[dict[str, dict[str, EntryPoint]], dict[str, list[Any]] | None]:
    """The entry points, from the copy on disk when it is current (``from_disk``) or by a
    scan whose result is then kept there; and, from the disk, the stamps of the metadata
    folders still to check (``_checked``), None from a scan."""
    key = _entrypoint_cache.key()
    found: dict[str, dict[str, EntryPoint]] = {}
    if key is not None and from_disk:
        copy = _entrypoint_cache.read(key)
        if copy is not None:
            points, stamps = copy
            for group, name, value, meta in points:
                found.setdefault(group, {})[name] = EntryPoint(name, value, group, meta)
            return found, stamps
    found = _scan()
    if key is not None:
        kept: list[_entrypoint_cache.Point] = []
        for group, named in found.items():
            for name, point in named.items():
                if not isinstance(point._where, str):
                    return found, None  # a distribution a path's stamps do not follow
                kept.append((group, name, point.value, point._where))
        _entrypoint_cache.write(key, kept)
    return found, None


_found: dict[str, dict[str, EntryPoint]] | None = None
_from_disk = False
_unchecked: dict[str, list[Any]] = {}
"""Metadata folders of the copy read from disk whose stamps are not checked yet."""


def _installed(*, checked: bool = True) -> dict[str, dict[str, EntryPoint]]:
    """Every installed entry point of a ``plait.*`` group, by group then name, found once
    per process (``refresh`` forgets it): from the copy on disk when nothing it came from
    has changed (``_entrypoint_cache``), else by a scan. ``checked=False`` leaves the
    copy's metadata folders unchecked (``_load`` checks the one it imports from)."""
    global _found, _from_disk, _unchecked
    if _found is None:
        _found, stamps = _lookup(from_disk=True)
        _from_disk, _unchecked = stamps is not None, dict(stamps or {})
    if checked and _unchecked and not _checked(list(_unchecked)):
        _rescan()
    return _found


def _checked(metas: list[Any]) -> bool:
    """Whether each of these metadata folders' ``entry_points.txt`` is as the copy read
    from disk says (each checked once per process)."""
    for meta in metas:
        stamped = _unchecked.pop(meta, None) if isinstance(meta, str) else None
        if stamped is not None and not _entrypoint_cache.unchanged(stamped):
            return False
    return True


def _rescan() -> None:
    """Scan again, past the copy on disk (which is then replaced), and forget the import
    system's listings of folders, which may be as old as the copy."""
    global _found, _from_disk, _unchecked
    importlib.invalidate_caches()
    _found, _ = _lookup(from_disk=False)
    _from_disk, _unchecked = False, {}


def installed(group: str) -> Mapping[str, EntryPoint]:
    """The installed entry points of ``group`` by name, disabled ones included."""
    return _installed().get(group, {})


def available(group: str) -> dict[str, EntryPoint]:
    """The installed, non-disabled entry points of ``group`` by name."""
    blocked = disabled()
    return {name: ep for name, ep in installed(group).items() if name not in blocked}


def load(group: str, name: str, *, what: str) -> Any:
    """Import the object ``name`` stands for in ``group``; unknown names list the known.

    Entry points read from the copy on disk may be stale in a way its key cannot show (an
    entry point added in place to a distribution's metadata): a name missing there, or one
    whose import fails, is looked for again by a scan before its error is raised."""
    try:
        return _load(group, name, what)
    except ConfigError:
        if not _from_disk or name in disabled():
            raise
    _rescan()
    return _load(group, name, what)


def _load(group: str, name: str, what: str) -> Any:
    ep = _installed(checked=False).get(group, {}).get(name)
    if ep is not None and not _checked([ep._where]):
        _rescan()  # its entry_points.txt changed since the copy was written
        ep = None
    blocked = disabled()
    if ep is None or name in blocked:
        eps = available(group)  # every folder checked (a scan if one changed)
        ep = eps.get(name)
        if ep is None:
            known = ", ".join(sorted(eps)) or "none"
            if name in blocked:
                raise ConfigError(
                    f"unknown {what} {name!r} (it is disabled by PLAIT_DISABLE_PLUGINS); "
                    f"installed: {known}"
                )
            hint = _missing_hint(group, name, sorted(eps))
            raise ConfigError(f"unknown {what} {name!r}; installed: {known}{hint}")
    try:
        return ep.load()
    except Exception as exc:
        raise ConfigError(
            f"{what} {name!r} ({ep.value}) could not be imported: {type(exc).__name__}: {exc}"
        ) from exc


def refresh() -> None:
    """Forget the entry points found, in this process and on disk (after installing a
    distribution at run time)."""
    global _found, _from_disk, _unchecked
    _found, _from_disk, _unchecked = None, False, {}
    _entrypoint_cache.forget()
