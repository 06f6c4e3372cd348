"""DiskBackend and files that are not files: a named pipe, a device, a socket in the
workspace is refused by every operation that reads or writes content, with one sentence
naming what it is, and nothing waits on it (opening a FIFO for reading blocks until a
writer comes; reading /dev/zero never ends).

Each operation runs in a child process under a timeout and a memory cap, so a regression
fails here instead of hanging the suite or filling its memory."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.backends import DiskBackend
from plait.testing import ScriptedChatModel, ai, call, tool_answers

FIFO_REFUSED = (
    "Error: /pipe is a named pipe (FIFO), not a regular file: it cannot be read, written or edited"
)
LIMIT_SECONDS = 20

CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from plait.backends import BackendError, DiskBackend
root, operation, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
files = DiskBackend(root).bind()
try:
    result = getattr(files, operation)(*args)
except BackendError as error:
    print(json.dumps({"error": str(error)}))
else:
    print(json.dumps({"result": repr(result)}))
"""


def outcome(root: Path, operation: str, *args: Any) -> dict[str, str]:
    """What ``DiskBackend(root).bind().<operation>(*args)`` gives: its error's text or its
    result's repr, from a child process killed if it takes more than LIMIT_SECONDS."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(root), operation, json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=LIMIT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{operation}{args} on {root} hung for {LIMIT_SECONDS} s")
    assert done.returncode == 0, done.stderr
    answer: dict[str, str] = json.loads(done.stdout)
    return answer


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A regular file, a FIFO at /pipe, a link to it inside, and a link to /dev/zero."""
    (tmp_path / "notes.txt").write_text("a needle here\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.txt").write_text("another needle\n")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "to-pipe").symlink_to("pipe")
    (tmp_path / "zero").symlink_to("/dev/zero")
    return tmp_path


@pytest.mark.parametrize(
    ("operation", "args"),
    [
        ("read", ["/pipe"]),
        ("read_text", ["/pipe"]),
        ("edit", ["/pipe", "a", "b"]),
        ("write", ["/pipe", "text"]),
        ("grep", ["needle", "/pipe"]),
    ],
)
def test_a_fifo_is_refused_without_waiting(
    workspace: Path, operation: str, args: list[Any]
) -> None:
    assert outcome(workspace, operation, *args) == {"error": FIFO_REFUSED}
    assert stat.S_ISFIFO((workspace / "pipe").lstat().st_mode)  # left as it was


def test_a_link_to_a_fifo_is_refused_under_the_name_given(workspace: Path) -> None:
    refused = FIFO_REFUSED.replace("/pipe", "/to-pipe")
    assert outcome(workspace, "read", "/to-pipe") == {"error": refused}
    assert outcome(workspace, "read_text", "/to-pipe") == {"error": refused}


def test_search_and_listing_pass_a_fifo_by(workspace: Path) -> None:
    found = outcome(workspace, "grep", "needle", "/")["result"]
    assert "'/notes.txt'" in found and "'/sub/more.txt'" in found
    assert "pipe" not in found
    assert "'/pipe'" in outcome(workspace, "glob", "*")["result"]
    assert "'/pipe'" in outcome(workspace, "ls", "/")["result"]
    assert outcome(workspace, "size", "/pipe") == {"result": "None"}


def test_dev_zero_is_never_read(workspace: Path) -> None:
    # through a link in the workspace: outside the root, refused as such
    assert outcome(workspace, "read", "/zero") == {
        "error": "Error: invalid path '/zero': it resolves outside the backend's root "
        "(through a symbolic link)"
    }
    # and by its path, in a backend rooted at /dev
    device = "Error: /zero is a character device, not a regular file: it cannot be read, "
    device += "written or edited"
    for operation, args in [
        ("read", ["/zero"]),
        ("read_text", ["/zero"]),
        ("grep", ["x", "/zero"]),
        ("edit", ["/zero", "a", "b"]),
    ]:
        assert outcome(Path("/dev"), operation, *args) == {"error": device}, operation
    assert outcome(Path("/dev"), "write", "/null", "x") == {
        "error": device.replace("/zero", "/null")
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_in_the_workspace(workspace: Path) -> None:
    os.mknod(workspace / "zero-node", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    assert outcome(workspace, "read", "/zero-node") == {
        "error": "Error: /zero-node is a character device, not a regular file: it cannot "
        "be read, written or edited"
    }


def test_a_socket_is_refused(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workspace)  # a short relative name: socket paths are ~100 bytes at most
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        assert outcome(workspace, "read", "/sock") == {
            "error": "Error: /sock is a socket, not a regular file: it cannot be read, "
            "written or edited"
        }


def test_read_file_through_an_agent(workspace: Path) -> None:
    """The model gets the sentence as the tool's error; the run goes on."""
    agent = plait.create_agent(
        ScriptedChatModel(
            [
                ai("", call("read_file", "r", file_path="/pipe")),
                ai("", call("grep", "g", pattern="needle")),
                "done",
            ]
        ),
        middleware=[("filesystem", {"backend": DiskBackend(workspace)})],
    )
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(agent.invoke("go")), daemon=True)
    worker.start()
    worker.join(LIMIT_SECONDS)
    if worker.is_alive():  # release the blocked open, then fail
        os.close(os.open(workspace / "pipe", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("read_file on a FIFO hung")
    answers = tool_answers(result[0].messages)
    assert answers["r"].status == "error"
    assert answers["r"].content == FIFO_REFUSED
    assert "/notes.txt" in answers["g"].content and "/sub/more.txt" in answers["g"].content
