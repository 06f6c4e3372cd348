"""Filesystem backends: where file tools keep files, behind one protocol.

A ``Backend`` is a value given to middleware; each tool call binds it to its
``ToolRuntime`` and gets a ``FileSystem`` (ls, read, read_text, write, edit, glob, grep,
delete, rename over absolute virtual paths like "/notes.txt"). Every path passes
``check_path``; every failure is a ``BackendError`` whose message the model can read.
"""

from plait.backends.composite import CompositeBackend
from plait.backends.disk import DiskBackend
from plait.backends.format import MAX_LINE_LENGTH, format_lines, text_lines, text_size
from plait.backends.middleware import BackendMiddleware
from plait.backends.options import BACKEND_SPELLINGS, check_store, needs_store, resolve_backend
from plait.backends.paths import MAX_COMPONENT_BYTES, MAX_PATH_BYTES, check_path
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
from plait.backends.state import FILES, FILES_FIELD, StateBackend, merge_files
from plait.backends.store import StoreBackend

__all__ = [
    "BACKEND_SPELLINGS",
    "FILES",
    "FILES_FIELD",
    "MAX_COMPONENT_BYTES",
    "MAX_LINE_LENGTH",
    "MAX_PATH_BYTES",
    "Backend",
    "BackendError",
    "BackendMiddleware",
    "CompositeBackend",
    "DiskBackend",
    "EditResult",
    "FileInfo",
    "FileSystem",
    "FilesUpdate",
    "GrepMatch",
    "StateBackend",
    "StoreBackend",
    "WriteResult",
    "check_path",
    "check_store",
    "format_lines",
    "merge_files",
    "needs_store",
    "resolve_backend",
    "text_lines",
    "text_size",
]
