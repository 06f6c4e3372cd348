"""Issue 24 item 11 re-check: inputs that once ended in a raw Python error
(RecursionError, NotADirectoryError, an exception that cannot be shown) now end in
plait's errors, and a run or thread survives them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import plait
from plait.backends import BackendError, DiskBackend
from plait.errors import StoreError
from plait.testing import ScriptedChatModel, ai, call


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@plait.tool
def echo(x: object) -> str:
    """Echo nothing.

    Args:
        x: anything.
    """
    return "ok"


def test_tool_arguments_nested_too_deep_for_json_are_a_store_error_on_sqlite(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    agent = plait.create_agent(
        ScriptedChatModel([ai("", call("echo", "c1", x=_nested(5000))), "done"]),
        tools=[echo],
        checkpointer=url,
    )
    with pytest.raises(StoreError, match=r"\(ai\) is nested too deeply to be saved as JSON"):
        agent.invoke("go", thread_id="deep")
    again = plait.create_agent(ScriptedChatModel(["fine"]), checkpointer=url)
    assert again.invoke("again", thread_id="other").text == "fine"  # the file is fine


class Unshowable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() fails too")


@plait.tool
def boom() -> str:
    """Fail in a way that cannot be printed."""
    raise Unshowable


def test_a_tool_error_that_cannot_be_shown_is_an_error_message_and_the_run_goes_on() -> None:
    agent = plait.create_agent(
        ScriptedChatModel([ai("", call("boom", "c1")), "done"]),
        tools=[boom],
        checkpointer="memory",
    )
    result = agent.invoke("go", thread_id="t")
    assert result.text == "done"
    assert result.messages[2].status == "error"
    assert result.messages[2].text.startswith(
        "Error: tool 'boom' raised Unshowable: <Unshowable that cannot be shown>."
    )


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        (lambda fs: fs.read("/f.txt/x"), "Error: file /f.txt/x not found"),
        (
            lambda fs: fs.write("/f.txt/x", "y"),
            "Error: cannot write /f.txt/x: a part of it is a file",
        ),
        (
            lambda fs: fs.read("/loop"),
            "Error: cannot read /loop: too many levels of symbolic links",
        ),
        (
            lambda fs: fs.write("/loop/x", "y"),
            "Error: cannot read /loop/x: too many levels of symbolic links",
        ),
        (lambda fs: fs.read_text("/sub"), "Error: /sub is a directory; use ls to list it"),
        (lambda fs: fs.ls("/f.txt"), "Error: /f.txt is a file, not a directory"),
        (lambda fs: fs.delete("/f.txt/x"), "Error: cannot delete /f.txt/x: a part of it is a file"),
        (lambda fs: fs.rename("/sub", "/f.txt"), "Error: /f.txt already exists"),
        (
            lambda fs: fs.grep("x", "/loop"),
            "Error: cannot read /loop: too many levels of symbolic links",
        ),
    ],
)
def test_disk_os_errors_are_backend_errors_without_the_host_path(
    tmp_path: Path, operation: Any, message: str
) -> None:
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "loop").symlink_to("loop")
    fs = DiskBackend(tmp_path).bind(SimpleNamespace(state={}, store=None))
    with pytest.raises(BackendError) as info:
        operation(fs)
    assert str(info.value) == message
    assert str(tmp_path) not in str(info.value)
