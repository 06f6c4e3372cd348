"""``CompositeBackend``: one file tree whose path prefixes go to different backends."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from plait._convert import expected
from plait.backends._glob import glob_matcher
from plait.backends.paths import check_path, is_under
from plait.backends.protocol import (
    Backend,
    BackendError,
    EditResult,
    FileInfo,
    FilesUpdate,
    FileSystem,
    GrepMatch,
    WriteResult,
)
from plait.lazy import frozen
from plait.types import ToolRuntime

__all__ = ["CompositeBackend"]


_BACKEND = "a Backend (an object with bind(runtime))"


def _routes(value: Mapping[str, Backend]) -> dict[str, Backend]:
    routes = {}
    for prefix, backend in value.items():
        norm = check_path(prefix)
        if norm == "/":
            raise ValueError("a route prefix cannot be '/': that is the default backend")
        if not isinstance(backend, Backend):
            raise TypeError(f"routes[{prefix!r}]: {expected(_BACKEND, backend)}")
        routes[norm + "/"] = backend
    return routes


def _check_backend(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Backend):
        raise TypeError(f"{attribute.name}: {expected(_BACKEND, value)}")


@frozen
class CompositeBackend:
    """Paths under a route prefix (``{"/memories/": StoreBackend()}``) go to that
    backend, the longest matching prefix winning, with the prefix stripped (the route
    backend sees ``/a.md`` for ``/memories/a.md``); every other path goes to
    ``default``. ``ls`` shows the prefixes as directories; ``glob`` and ``grep`` search
    every backend; a rename between backends copies then deletes."""

    default: Backend = attrs.field(validator=_check_backend)
    routes: dict[str, Backend] = attrs.field(factory=dict, converter=_routes)

    def bind(self, runtime: ToolRuntime) -> _CompositeFiles:
        return _CompositeFiles(self, runtime)


def _merge(*updates: FilesUpdate | None) -> FilesUpdate | None:
    merged: FilesUpdate | None = None
    for update in updates:
        if update is not None:
            merged = {**(merged or {}), **update}
    return merged


def _outer_paths(message: str, names: Mapping[str, str]) -> str:
    """``message`` with each inner path of ``names`` (and any path under it) written as
    the caller's path: ``file /a.md not found`` → ``file /memories/a.md not found``."""
    inner = sorted(names, key=len, reverse=True)
    pattern = "|".join(
        "/(?=$|[\\s'\"),:;])" if path == "/" else re.escape(path) + "(?=$|[^\\w.-])"
        for path in inner
    )
    return re.sub(f"(?<![\\w./-])(?:{pattern})", lambda m: names[m.group(0)], message)


class _CompositeFiles:
    def __init__(self, backend: CompositeBackend, runtime: ToolRuntime) -> None:
        self._backend = backend
        self._runtime = runtime
        self._bound: dict[str, FileSystem] = {}
        # Longest first, so the first prefix that matches is the longest.
        self._prefixes = sorted(backend.routes, key=len, reverse=True)

    def _fs(self, prefix: str) -> FileSystem:
        if prefix not in self._bound:
            backend = self._backend.routes.get(prefix, self._backend.default)
            self._bound[prefix] = backend.bind(self._runtime)
        return self._bound[prefix]

    def _route(self, path: str) -> tuple[str, str]:
        """(prefix or "", the path inside that backend)."""
        path = check_path(path)
        for prefix in self._prefixes:
            if path == prefix[:-1] or path.startswith(prefix):
                return prefix, "/" + path[len(prefix) :]
        return "", path

    @staticmethod
    def _outer(prefix: str, inner: str) -> str:
        if not prefix:
            return inner
        return prefix[:-1] + (inner if inner != "/" else "")

    def _update(self, prefix: str, update: FilesUpdate | None) -> FilesUpdate | None:
        if update is None or not prefix:
            return update
        return {self._outer(prefix, path): data for path, data in update.items()}

    @contextlib.contextmanager
    def _named(self, prefix: str, *inner: str) -> Iterator[None]:
        """A routed backend's error names the paths it was given, without the prefix:
        say the caller's paths instead, so the model is not sent looking for ``/a.md``
        when it asked for ``/memories/a.md``."""
        try:
            yield
        except BackendError as error:
            if not prefix:
                raise
            names = {path: self._outer(prefix, path) for path in inner}
            raise BackendError(_outer_paths(str(error), names)) from None

    def _in_default(self, path: str) -> bool:
        return not any(path == p[:-1] or path.startswith(p) for p in self._prefixes)

    # -- FileSystem --------------------------------------------------------------------

    def ls(self, path: str = "/") -> list[FileInfo]:
        prefix, inner = self._route(path)
        base = check_path(path).rstrip("/") + "/"
        # Route prefixes directly under ``path`` show as directories.
        dirs = {}
        for route in self._prefixes:
            if route.startswith(base) and route != base:
                name = route[len(base) :].split("/", 1)[0]
                dirs[base + name + "/"] = FileInfo(base + name + "/", is_dir=True)
        try:
            with self._named(prefix, inner):
                listed = self._fs(prefix).ls(inner)
        except BackendError:
            if not dirs:
                raise
            listed = []
        entries = {}
        for info in listed:
            outer = self._outer(prefix, info.path)
            if self._route(outer.rstrip("/") or "/")[0] == prefix:
                entries[outer] = attrs.evolve(info, path=outer)
        entries.update(dirs)
        return [entries[key] for key in sorted(entries)]

    def read(self, path: str, offset: int = 0, limit: int = 2000) -> str:
        prefix, inner = self._route(path)
        with self._named(prefix, inner):
            shown = self._fs(prefix).read(inner, offset, limit)
        empty = f"(the file {inner} is empty)"
        return f"(the file {self._outer(prefix, inner)} is empty)" if shown == empty else shown

    def read_text(self, path: str) -> str:
        prefix, inner = self._route(path)
        with self._named(prefix, inner):
            return self._fs(prefix).read_text(inner)

    def size(self, path: str) -> int | None:
        """The routed backend's ``size`` (None when it cannot tell without reading)."""
        prefix, inner = self._route(path)
        size_of = getattr(self._fs(prefix), "size", None)
        with self._named(prefix, inner):
            return size_of(inner) if callable(size_of) else None

    def resolve(self, path: str) -> str:
        """Where ``path`` leads once the routed backend follows its links (DiskBackend),
        so a prefix check cannot be passed by a link inside a route."""
        prefix, inner = self._route(path)
        resolve = getattr(self._fs(prefix), "resolve", None)
        if not callable(resolve):
            return check_path(path)
        with self._named(prefix, inner):
            return self._outer(prefix, resolve(inner))

    def write(self, path: str, content: str) -> WriteResult:
        prefix, inner = self._route(path)
        with self._named(prefix, inner):
            result = self._fs(prefix).write(inner, content)
        return WriteResult(
            self._outer(prefix, result.path), self._update(prefix, result.files_update)
        )

    def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> EditResult:
        prefix, inner = self._route(path)
        with self._named(prefix, inner):
            result = self._fs(prefix).edit(inner, old, new, replace_all)
        return EditResult(
            self._outer(prefix, result.path),
            result.count,
            self._update(prefix, result.files_update),
        )

    def delete(self, path: str) -> WriteResult:
        prefix, inner = self._route(path)
        with self._named(prefix, inner):
            result = self._fs(prefix).delete(inner)
        return WriteResult(
            self._outer(prefix, result.path), self._update(prefix, result.files_update)
        )

    def _searched(self, path: str) -> list[tuple[str, str]]:
        """(prefix, inner path) of every backend holding files under ``path``."""
        prefix, inner = self._route(path)
        if prefix:
            return [(prefix, inner)]
        norm = check_path(path)
        found = [("", norm)]
        for route in self._prefixes:
            if is_under(route[:-1], norm):
                found.append((route, "/"))
        return found

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        norm = check_path(path)
        matches = glob_matcher(pattern)
        found: dict[str, FileInfo] = {}
        for prefix, inner in self._searched(path):
            with self._named(prefix, inner):
                listed = self._fs(prefix).glob("**", inner)
            for info in listed:
                outer = self._outer(prefix, info.path)
                if not prefix and not self._in_default(outer):
                    continue
                subject = outer if pattern.startswith("/") else outer[len(norm.rstrip("/")) + 1 :]
                if matches(subject):
                    found[outer] = attrs.evolve(info, path=outer)
        return [found[key] for key in sorted(found)]

    def grep(self, pattern: str, path: str = "/", glob: str | None = None) -> list[GrepMatch]:
        matches = []
        for prefix, inner in self._searched(path):
            try:
                hits = self._fs(prefix).grep(pattern, inner, glob)
            except BackendError:
                if prefix:
                    continue
                raise
            for hit in hits:
                outer = self._outer(prefix, hit.path)
                if prefix or self._in_default(outer):
                    matches.append(attrs.evolve(hit, path=outer))
        return sorted(matches, key=lambda m: (m.path, m.line))

    def rename(self, old: str, new: str) -> WriteResult:
        old_prefix, old_inner = self._route(old)
        new_prefix, new_inner = self._route(new)
        if old_prefix == new_prefix:
            with self._named(old_prefix, old_inner, new_inner):
                result = self._fs(old_prefix).rename(old_inner, new_inner)
            return WriteResult(
                self._outer(new_prefix, result.path), self._update(new_prefix, result.files_update)
            )
        # Across backends: copy every file, then delete the originals.
        source, target = self._fs(old_prefix), self._fs(new_prefix)
        try:
            files = [(old_inner, new_inner, source.read_text(old_inner))]
        except BackendError:
            with self._named(old_prefix, old_inner):
                listed = source.glob("**", old_inner)
            files = [
                (info.path, new_inner.rstrip("/") + info.path[len(old_inner.rstrip("/")) :], "")
                for info in listed
            ]
            if not files:
                raise BackendError(f"Error: {check_path(old)} not found") from None
            with self._named(old_prefix, old_inner):
                files = [(src, dst, source.read_text(src)) for src, dst, _ in files]
        updates = []
        with self._named(new_prefix, new_inner):
            for _, dst, text in files:
                updates.append(self._update(new_prefix, target.write(dst, text).files_update))
        with self._named(old_prefix, old_inner):
            updates.append(self._update(old_prefix, source.delete(old_inner).files_update))
        return WriteResult(check_path(new), _merge(*updates))
