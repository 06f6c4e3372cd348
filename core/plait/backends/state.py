"""``StateBackend``: files in the thread's ``files`` state key (checkpointed with it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from plait.backends._base import FileOps
from plait.backends.protocol import FilesUpdate
from plait.lazy import frozen
from plait.types import StateField, ToolRuntime

__all__ = ["FILES", "FILES_FIELD", "StateBackend", "merge_files"]

FILES = "files"
"""The state key every file-tool middleware keeps files in: path → file data."""


def merge_files(
    old: Mapping[str, Any] | None, new: Mapping[str, dict[str, Any] | None] | None
) -> dict[str, Any]:
    """Reducer of ``files``: paths in ``new`` replace those in ``old``, ``None`` deletes,
    so concurrent writes to different files in one AI message all land."""
    merged = dict(old or {})
    for path, data in (new or {}).items():
        if data is None:
            merged.pop(path, None)
        else:
            merged[path] = data
    return merged


FILES_FIELD = StateField(default={}, reducer=merge_files, scope="thread", shared=True)
"""The declaration of ``files``: every middleware keeping files in state uses exactly this."""


class _StateFiles(FileOps):
    def __init__(self, files: Mapping[str, Any]) -> None:
        self._files_now = dict(files)
        self._update: FilesUpdate | None = {}

    def _load(self, path: str) -> dict[str, Any] | None:
        data = self._files_now.get(path)
        return dict(data) if data is not None else None

    def _save(self, path: str, data: dict[str, Any]) -> None:
        self._files_now[path] = data
        assert self._update is not None
        self._update[path] = data

    def _remove(self, path: str) -> None:
        self._files_now.pop(path, None)
        assert self._update is not None
        self._update[path] = None

    def _paths(self, under: str) -> Iterable[str]:
        return list(self._files_now)


@frozen
class StateBackend:
    """Files in thread state: they survive across turns with a checkpointer, and are
    private to the thread. Writes come back as a ``files_update`` for the tool's
    ``Command``; nothing is written until the tool's update is applied."""

    def bind(self, runtime: ToolRuntime) -> _StateFiles:
        return _StateFiles(runtime.state.get(FILES) or {})
