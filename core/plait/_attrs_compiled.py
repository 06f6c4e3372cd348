"""attrs' generated methods kept compiled between processes, as Python keeps a module's
bytecode.

attrs writes a class's ``__init__`` (and the ``__repr__`` and ``__eq__`` that
``plait.lazy`` has it make on first use) as source text and compiles it when the class is
made: 0.1-0.3 ms a class, most of what making one costs. plait makes ~30 classes at import
and a plugin's option class when an agent first names it, so each process compiled the
same texts the one before it had. What ``compile`` returns depends only on the text, its
file name, the flags and the interpreter's bytecode, so the code of the classes
``plait.lazy`` makes is kept in plait's cache folder (``_cache_dir``) under those, and
read back by the next process instead of compiled. It is found by its text: a class whose
fields changed is compiled anew, never given an older class's code. A ``__hash__`` is not
kept: attrs writes into it the hash of a string, a number that differs in each process.

How: ``attr._make`` calls the built-in ``compile`` by name. ``making()`` gives that module
a global ``compile`` once, ``_compile`` below, which looks in the cache while a
``making()`` block is active in the calling context and is the built-in otherwise; no
attrs code is replaced (an attrs that compiled elsewhere would only leave plait compiling
as before). The file, one per interpreter (``attrs-methods-<crc>.marshal``), starts with
the interpreter's bytecode magic number; one of another bytecode, a corrupt one or one
another user owns is not used. It is written at exit by a process that compiled something,
holding what it used and what the file held, unless that is over ``_MOST`` entries (old
classes): then only what it used.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from types import CodeType
from typing import Any

from plait._cache_dir import folder, read_owned, replace

__all__ = ["making"]

_MOST = 400
"""A file holding more entries than this (older versions' classes, other programs'; plait
and its plugins make ~150) is written again with only what its process used."""

Key = tuple[str, str, int, int]
"""The text, its file name, the compile flags and the optimization level."""

_MAKING: contextvars.ContextVar[bool] = contextvars.ContextVar("plait_attrs_making", default=False)
_known: dict[Key, CodeType] | None = None
"""What the file held: None until the first class is made, empty with no cache folder."""
_used: dict[Key, CodeType] = {}
_compiled = False
_flags = 0
"""The ``__future__`` flags ``compile`` inherits from ``attr._make``'s code, as when it is
called there."""


@contextlib.contextmanager
def making() -> Iterator[None]:
    """A block in which attrs' methods are taken from the cache, or compiled and kept."""
    if _known is None:
        _start()
    token = _MAKING.set(True)
    try:
        yield
    finally:
        _MAKING.reset(token)


def _start() -> None:
    global _known, _flags
    where = folder()
    if where is None:
        _known = {}
        return
    import attr._make as made

    if "compile" in made.__dict__:  # already someone's: leave it
        _known = {}
        return
    future = made.__dict__.get("annotations")
    _flags = getattr(future, "compiler_flag", 0) if future is not None else 0
    _known = _read(where)
    made.compile = _compile  # type: ignore[attr-defined]


def _magic() -> bytes:
    from importlib.util import MAGIC_NUMBER

    return MAGIC_NUMBER


def _name() -> str:
    import zlib

    interpreter = f"{sys.executable}\0{sys.prefix}".encode("utf-8", "surrogateescape")
    return f"attrs-methods-{zlib.crc32(interpreter):08x}.marshal"


def _read(where: str) -> dict[Key, CodeType]:
    """The file's entries; none when it is absent, foreign, of another bytecode, corrupt."""
    data = read_owned(os.path.join(where, _name()))
    magic = _magic()
    if data is None or not data.startswith(magic):
        return {}
    import marshal

    try:
        entries = marshal.loads(data[len(magic) :])
    except Exception:  # truncated or not marshal data
        return {}
    if not isinstance(entries, dict):
        return {}
    return {key: code for key, code in entries.items() if type(code) is CodeType}


def _compile(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
    """``compile`` for ``attr._make``: in a ``making()`` block, the kept code of the same
    text; else the built-in's, with the flags it would inherit there."""
    global _compiled
    if args or kwargs:
        return compile(source, filename, mode, *args, **kwargs)
    if (
        not _MAKING.get()
        or mode != "exec"
        or type(source) is not str
        or type(filename) is not str
        or "def __hash__" in source  # holds a number that differs in each process
    ):
        return compile(source, filename, mode, _flags, True)
    key = (source, filename, _flags, sys.flags.optimize)
    code = _used.get(key) or (_known or {}).get(key)
    if code is None:
        code = compile(source, filename, mode, _flags, True)
        if not _compiled:
            import atexit

            atexit.register(_write)
            _compiled = True
    _used[key] = code
    return code


def _write() -> None:
    """Keep what this process used, and what the file held unless it has grown too long."""
    where = folder()
    if where is None:
        return
    import marshal

    kept = _known if _known is not None and len(_known) <= _MOST else {}
    try:
        replace(where, _name(), _magic() + marshal.dumps({**kept, **_used}))
    except Exception:  # a read-only or full disk: the next process compiles
        return
