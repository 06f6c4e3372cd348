"""attrs' generated methods, compiled by the first process and read back by the next
(``plait._attrs_compiled``): each case runs fresh interpreters, which count what they
compile through the interpreter's own ``compile`` audit event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from plait_env import outside_env

CHILD = """
import json, sys
compiled = []
sys.addaudithook(
    lambda event, args: compiled.append([args[1], "def __hash__" in str(args[0])])
    if event == "compile" and str(args[1]).startswith("<attrs generated")
    else None
)
import attrs
import plait
from plait.lazy import frozen

@frozen(kw_only=True)
class Shout(plait.Middleware):
    suffix: str = attrs.field(default="!", validator=attrs.validators.instance_of(str))
    times: int = 1
{more}
@attrs.frozen
class Plain:
    x: int = 0

shout = Shout(suffix="?", times=2{given})
try:
    Shout(suffix=5)
    refused = None
except ValueError as exc:  # plait's FieldError: the middleware's checked __init__
    refused = str(exc)
print(json.dumps({{
    "compiled": compiled,
    "repr": repr(shout),
    "equal": shout == Shout(suffix="?", times=2{given}),
    "refused": refused,
    "plain": Plain(3).x,
}}))
"""


def run(cache: Path, *, more: str = "", given: str = "", **env: str) -> dict[str, Any]:
    code = CHILD.format(more=textwrap.indent(more, "    "), given=given)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**outside_env(), "PLAIT_CACHE_DIR": str(cache), **env},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def kept(cache: Path) -> list[Path]:
    return sorted(cache.glob("attrs-methods-*.marshal"))


def shout(compiled: list[list[Any]]) -> list[str]:
    """What was compiled for ``Shout``, but a ``__hash__`` (never kept: attrs writes a
    number into it that differs in each process)."""
    return [name for name, hashes in compiled if "Shout" in name and not hashes]


def test_the_next_process_reads_what_the_first_compiled(tmp_path: Path) -> None:
    first = run(tmp_path)
    ours = {name for name, hashes in first["compiled"] if "plait." in name and not hashes}
    assert "<attrs generated methods __main__.Shout>" in shout(first["compiled"])  # __init__
    assert "<attrs generated methods plait.messages.AIMessage>" in ours  # plait's own
    assert len(kept(tmp_path)) == 1

    second = run(tmp_path)
    names = [name for name, _ in second["compiled"]]
    # nothing of plait.lazy's classes compiled again; attrs' own decorator compiles as before
    assert shout(second["compiled"]) == []
    assert ours.isdisjoint(names)
    assert "<attrs generated methods __main__.Plain>" in names
    # the same class, behaving the same: its __init__, validators, __repr__ and __eq__
    assert second["repr"] == first["repr"] == "Shout(suffix='?', times=2)"
    assert second["equal"] is first["equal"] is True
    assert second["refused"] == first["refused"]
    assert second["refused"] == "suffix: expected a string, got 5"
    assert second["plain"] == 3


def test_a_class_whose_fields_changed_is_compiled_anew(tmp_path: Path) -> None:
    run(tmp_path)
    changed = run(tmp_path, more="loud: bool = False", given=", loud=True")
    assert shout(changed["compiled"])  # its new __init__ (and its __repr__, __eq__)
    assert changed["repr"] == "Shout(suffix='?', times=2, loud=True)"
    assert changed["equal"] is True
    again = run(tmp_path, more="loud: bool = False", given=", loud=True")
    assert shout(again["compiled"]) == []


def test_a_corrupt_file_is_compiled_over(tmp_path: Path) -> None:
    run(tmp_path)
    (file,) = kept(tmp_path)
    from importlib.util import MAGIC_NUMBER

    for garbage in (MAGIC_NUMBER + b"\xffnot marshal", b"\x00\x01", MAGIC_NUMBER + b"N"):
        file.write_bytes(garbage)
        result = run(tmp_path)
        assert shout(result["compiled"]), garbage
        assert result["repr"] == "Shout(suffix='?', times=2)"
        assert shout(run(tmp_path)["compiled"]) == []  # and the file written anew


def test_a_file_of_other_bytecode_is_not_used(tmp_path: Path) -> None:
    run(tmp_path)
    (file,) = kept(tmp_path)
    data = file.read_bytes()
    file.write_bytes(bytes([data[0] ^ 1]) + data[1:])  # another magic number
    assert shout(run(tmp_path)["compiled"])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_file_another_user_owns_is_not_used(tmp_path: Path) -> None:
    run(tmp_path)
    (file,) = kept(tmp_path)
    os.chown(file, 65534, 65534)
    assert shout(run(tmp_path)["compiled"])


def test_no_file_with_plait_no_cache(tmp_path: Path) -> None:
    for _ in range(2):
        assert shout(run(tmp_path, PLAIT_NO_CACHE="1")["compiled"])
    assert kept(tmp_path) == []
