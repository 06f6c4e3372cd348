"""``anthropic_bash`` with ``sandbox="bubblewrap"``: through a real bwrap and a real bash,
writes outside the workspace fail, the network is unreachable, denied programs cannot run
by any route (the parser guard aside: these lines are run straight in a sandboxed shell),
an allow-list leaves only its programs, state persists, and nothing outlives ``close()``.

Skipped where bwrap cannot make a sandbox, except under ``PLAIT_REQUIRE_SANDBOX=1`` (CI),
where that is a failure.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shell_support import PATH, reachable, requires_sandbox
from shell_support import workspace as _workspace

import plait
from plait.errors import ConfigError
from plait.testing import ScriptedChatModel, ai, call, tool_answers
from plait_anthropic._sandbox import NOBODY, Bubblewrap, sandbox_user
from plait_anthropic._shell import ShellSession
from plait_anthropic.bash import AnthropicBashMiddleware

pytestmark = requires_sandbox()


@pytest.fixture
def tmp_path(tmp_path: Path) -> Iterator[Path]:
    yield from reachable(tmp_path)


@pytest.fixture
def bash(make_bash: Any, tmp_path: Path) -> Any:
    """Middleware in ``tmp_path / "ws"``, sandboxed unless told otherwise, closed after."""
    workspace = str(_workspace(tmp_path))
    return functools.partial(make_bash, workspace_root=workspace, sandbox="bubblewrap")


@pytest.fixture
def sandboxed(tmp_path: Path) -> Iterator[Any]:
    """A bash session in the sandbox built for the given options, with no parser guard in
    front: whatever the line, bash runs it and only the sandbox stands in the way."""
    sessions: list[ShellSession] = []
    workspace = _workspace(tmp_path)

    def start(**options: Any) -> Any:
        sandbox = Bubblewrap.build(path=PATH, user=sandbox_user(str(workspace)), **options)
        session = ShellSession(
            cwd=str(workspace),
            env={"PATH": PATH, "HOME": str(workspace)},
            launch=sandbox.launch(str(workspace)),
        )
        sessions.append(session)

        def run(command: str) -> Any:
            with session.lock:
                return session.run(command, timeout=20, max_bytes=None)

        return run

    yield start
    for session in sessions:
        session.close()


def sh(id: str, command: str) -> Any:
    return call("bash", id, command=command)


def turn(middleware: Any, *calls: Any, thread_id: str = "t") -> Any:
    agent = plait.create_agent(
        ScriptedChatModel([*(ai("", c) for c in calls), "done"]),
        middleware=[middleware],
        checkpointer="memory",
    )
    return tool_answers(agent.invoke("go", thread_id=thread_id).messages)


def test_state_persists_across_calls_and_runs(bash: Any, tmp_path: Path) -> None:
    middleware = bash()
    first = turn(middleware, sh("a", "mkdir sub && cd sub && export X=1 && f() { echo fn$1; }"))
    second = turn(middleware, sh("b", "pwd; echo $X; f 2; echo kept > k.txt"))
    assert first["a"].status == "success", first["a"].content
    assert second["b"].content == f"{tmp_path / 'ws' / 'sub'}\n1\nfn2"
    assert (tmp_path / "ws" / "sub" / "k.txt").read_text() == "kept\n"


def test_writes_outside_the_workspace_fail(bash: Any, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "seen.txt").write_text("host file\n")
    marker = f"plait-sandbox-{os.getpid()}-{time.monotonic_ns()}"
    got = turn(
        bash(),
        sh("etc", f"echo x > /etc/{marker}"),
        sh("usr", f"touch /usr/{marker}"),
        sh("host", f"echo x > {outside}/new.txt; cat {outside}/seen.txt"),
        sh("tmp", f"echo x > /tmp/{marker} && cat /tmp/{marker}"),
        sh("remount", "mount -o remount,rw,bind /usr; umount /proc; echo done"),
        sh("here", "echo inside > mine.txt && cat mine.txt"),
    )
    assert "Read-only file system" in got["etc"].content
    assert "Read-only file system" in got["usr"].content
    assert "No such file or directory" in got["host"].content  # not even visible
    assert got["tmp"].content == "x"  # a private /tmp, gone with the shell
    refusals = ("permission denied", "must be superuser")  # root, or the unprivileged user
    assert sum(got["remount"].content.lower().count(r) for r in refusals) == 2
    assert got["here"].content == "inside"
    assert not Path(f"/etc/{marker}").exists()
    assert not Path(f"/usr/{marker}").exists()
    assert not Path(f"/tmp/{marker}").exists()
    assert not (outside / "new.txt").exists()
    assert (tmp_path / "ws" / "mine.txt").read_text() == "inside\n"


def test_the_network_is_unreachable(bash: Any) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        accepted: list[object] = []
        server.settimeout(5)

        def serve() -> None:
            try:
                while True:
                    conn, _ = server.accept()
                    accepted.append(conn)
                    conn.close()
            except OSError:
                pass

        threading.Thread(target=serve, daemon=True).start()
        line = f"echo hi > /dev/tcp/127.0.0.1/{port} && echo connected"
        host = subprocess.run(["bash", "-c", line], capture_output=True, text=True)
        assert host.stdout.strip() == "connected"  # the host itself does reach it
        got = turn(
            bash(),
            sh("loop", line),
            sh("out", "echo hi > /dev/tcp/1.1.1.1/53 && echo connected"),
        )
        time.sleep(0.2)
    assert "Connection refused" in got["loop"].content
    assert "connected" not in got["loop"].content
    assert "Network is unreachable" in got["out"].content
    assert len(accepted) == 1  # the host's connection only


BYPASSES = [
    "rm f",
    "$(echo rm) f",
    "`echo rm` f",
    "/usr/bin/rm f",
    "/bin/rm f",
    "env rm f",
    "command rm f",
    "exec -a x rm f",
    "x=rm; $x f",
    "PATH=/usr/bin:/bin; hash -r; rm f",
    "shopt -s expand_aliases\nalias del=rm\ndel f",
    'g() { rm "$@"; }; g f',
    "bash -c 'rm f'",
    "sh -c 'rm f'",
    "find . -name f -exec rm {} +",
    "echo f | xargs rm",
    "cp /usr/bin/rm ./r; chmod +x ./r; ./r f",
    "cat /usr/bin/rm > ./r2; chmod +x ./r2; ./r2 f",
    "for l in /lib64/ld-linux*.so* /lib/*/ld-linux*.so*; do [ -e $l ] && $l /usr/bin/rm f; done",
    "umount /usr/bin/rm; rm f",
    "unshare -Urm sh -c 'umount /usr/bin/rm; rm f'",
]


@pytest.mark.parametrize("line", BYPASSES)
def test_a_denied_program_cannot_run_by_any_route(
    sandboxed: Any, tmp_path: Path, line: str
) -> None:
    run = sandboxed(denied=["rm"])
    target = tmp_path / "ws" / "f"
    target.write_text("keep me\n")
    result = run(line)
    assert target.read_text() == "keep me\n", result.output
    # the same line, run by the same user on the host, does delete: the sandbox, not the
    # line, stopped it
    owner = sandbox_user(str(tmp_path / "ws"))
    same_user = {} if owner is None else {"user": owner[0], "group": owner[1], "extra_groups": []}
    host = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path / "ws", capture_output=True, text=True, **same_user
    )
    assert not target.exists(), host.stderr


def test_the_denied_programs_are_masked_under_every_name(sandboxed: Any) -> None:
    sandbox = Bubblewrap.build(path=PATH, denied=["python3"])
    if not sandbox.masked:
        pytest.skip("no python3 in the bin directories")
    real = os.path.realpath(shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3")
    assert real in sandbox.masked
    run = sandboxed(denied=["python3"])
    result = run(f"python3 -c 'print(1)'; {real} -c 'print(2)'; echo end")
    assert result.output.count("Permission denied") == 2
    assert result.output.endswith("end\n")


def test_a_copy_of_a_denied_program_elsewhere_is_masked_too(sandboxed: Any, tmp_path: Path) -> None:
    """A file holding the denied program's bytes outside the bin directories (git's
    ``/usr/lib/git-core/git`` beside ``/usr/bin/git``; here ``rm`` copied into a
    ``sandbox_read_only`` directory, and a hard link to that copy) ran it by its path."""
    tools = tmp_path / "tools"
    tools.mkdir()
    real = os.path.realpath(shutil.which("rm", path="/usr/bin:/bin") or "/usr/bin/rm")
    shutil.copy2(real, tools / "remove")
    os.link(tools / "remove", tools / "erase")
    os.chmod(tools, 0o755)
    target = tmp_path / "ws" / "f"
    target.write_text("keep me\n")
    sandbox = Bubblewrap.build(path=PATH, denied=["rm"], read_only=[str(tools)])
    assert {str(tools / "remove"), str(tools / "erase"), real} <= set(sandbox.masked)
    run = sandboxed(denied=["rm"], read_only=[str(tools)])
    result = run(f"{tools}/remove f; {tools}/erase f; echo end")
    assert result.output.count("Permission denied") == 2, result.output
    assert target.read_text() == "keep me\n"
    subprocess.run([str(tools / "remove"), str(target)], check=True)  # the copy is rm
    assert not target.exists()


def test_an_allow_list_leaves_only_its_programs(sandboxed: Any, tmp_path: Path) -> None:
    run = sandboxed(allowed=["ls", "cat", "find"])
    target = tmp_path / "ws" / "f"
    target.write_text("keep me\n")
    listing = run("ls /usr/bin /bin").output.split()
    assert {"ls", "cat", "find", "bash"} <= set(listing)
    assert "rm" not in listing and "cp" not in listing and "python3" not in listing
    for line in ["rm f", "/usr/bin/rm f", "find . -name f -exec rm {} +", "$(echo rm) f"]:
        result = run(line)
        assert "rm" in result.output and result.exit_code != 0, (line, result.output)
        assert target.exists(), line
    assert run("cat f").output == "keep me\n"
    assert run("cat /usr/bin/rm").exit_code != 0


def test_an_allow_list_through_the_agent(bash: Any, tmp_path: Path) -> None:
    (tmp_path / "ws" / "f").write_text("keep me\n")
    middleware = bash(allowed_commands=["ls", "cat", "find"])
    got = turn(
        middleware,
        sh("find", "find . -name f -exec rm {} +"),  # the guard cannot see into find
        sh("rm", "rm f"),  # the guard refuses this one
        sh("ls", "ls"),
    )
    assert "rm" in got["find"].content and "[exit code 1]" in got["find"].content
    assert got["rm"].status == "error" and "nothing was run" in got["rm"].content
    assert got["ls"].content == "f"
    assert (tmp_path / "ws" / "f").exists()


def test_a_deny_list_through_the_agent_where_the_guard_cannot_see(
    bash: Any, tmp_path: Path
) -> None:
    for sandbox in ("none", "bubblewrap"):
        target = tmp_path / "ws" / "f"
        target.write_text("keep me\n")
        middleware = bash(sandbox=sandbox, denied_commands=["rm"])
        got = turn(middleware, sh("find", "find . -name f -exec rm {} +; ls"))
        if sandbox == "none":
            assert not target.exists()  # the guard alone lets this through
        else:
            assert "Permission denied" in got["find"].content
            assert target.exists()


def test_extra_read_only_directories(bash: Any, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "data.txt").write_text("shared\n")
    got = turn(
        bash(sandbox_read_only=[str(tools)]),
        sh("read", f"cat {tools}/data.txt"),
        sh("write", f"echo x > {tools}/data.txt"),
    )
    assert got["read"].content == "shared"
    assert "Read-only file system" in got["write"].content
    assert (tools / "data.txt").read_text() == "shared\n"


def _sleepers(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if tag.encode() in args:
                found.append(int(entry.name))
    return found


# Every file under /proc and /sys (symlinks aside: /proc/self/fd/N and the like stand for
# the shell's own pipes) that access(2) calls writable or that opens for writing. Opening
# writes nothing; a read-only mount refuses the open itself.
WRITABLE_WALK = r"""
find /proc /sys ! -type l -writable -print 2>/dev/null | sed 's/^/access: /'
find /proc /sys -type f 2>/dev/null | while IFS= read -r f; do
    if { exec 3>>"$f"; } 2>/dev/null; then echo "open: $f"; exec 3>&-; fi
done
echo "walked $(find /proc /sys -type f 2>/dev/null | wc -l) files"
"""


def test_the_shell_is_not_root_even_when_the_agent_is(sandboxed: Any, tmp_path: Path) -> None:
    """The kernel checks the real user id, whatever the namespace says: a sandbox started
    by root runs as an unprivileged user, and what it makes on the host is that user's."""
    run = sandboxed()
    assert run("id -u").output.strip() != "0"
    # who the kernel sees: the host's view of a process inside (a namespace's own
    # uid_map can say 65534 while it maps to root, as bwrap's --uid alone does)
    tag = f"{time.monotonic_ns() % 100000 + 1000}.25"
    run(f"sleep {tag} > /dev/null 2>&1 &")
    deadline = time.monotonic() + 5
    while not _sleepers(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    [pid] = _sleepers(tag)
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    real_uids, real_gids = status["Uid"].split(), status["Gid"].split()
    assert "0" not in real_uids and "0" not in real_gids, (real_uids, real_gids)
    assert status["Groups"].split() in ([], real_gids[:1])  # no supplementary group kept
    made = run("cp /usr/bin/id ./id2 && chmod u+s,g+s ./id2 && echo made").output
    assert made == "made\n"
    info = (tmp_path / "ws" / "id2").stat()
    assert info.st_uid != 0 and info.st_gid != 0  # no set-user-id root program planted
    if os.geteuid() == 0:
        assert (info.st_uid, info.st_gid) == (NOBODY, NOBODY)
        assert set(real_uids) == {str(NOBODY)}


def test_no_path_under_proc_or_sys_is_writable(sandboxed: Any) -> None:
    run = sandboxed()
    result = run(WRITABLE_WALK)
    lines = result.output.splitlines()
    assert lines[-1].startswith("walked ") and int(lines[-1].split()[1]) > 500, lines[-3:]
    assert lines[:-1] == []  # not /proc/sys/kernel/core_pattern, /proc/sysrq-trigger, ...
    # and the kernel's settings refuse a write, with the reason (each is written back with
    # its own value, so a regression changes nothing on the host)
    rewrite = 'v=$(cat {0}); printf "%s\\n" "$v" > {0}'
    got = run(
        rewrite.format("/proc/sys/kernel/core_pattern")
        + "; "
        + rewrite.format("/proc/sys/vm/swappiness")
    )
    assert got.output.count("Read-only file system") == 2, got.output


def test_no_capability_survives(sandboxed: Any) -> None:
    status = run_status = sandboxed()("grep ^Cap /proc/self/status").output
    fields = dict(line.split(":\t") for line in run_status.splitlines())
    assert set(fields) == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}, status
    assert all(int(value, 16) == 0 for value in fields.values()), status


@pytest.mark.skipif(os.geteuid() != 0, reason="a root agent's rule")
def test_a_root_agent_needs_a_workspace_its_sandbox_user_can_write(tmp_path: Path) -> None:
    mine = tmp_path / "root-only"
    mine.mkdir(mode=0o755)
    with pytest.raises(ConfigError) as refused:
        plait.create_agent(
            ScriptedChatModel(["x"]),
            middleware=[("anthropic_bash", {"sandbox": "bubblewrap", "workspace_root": str(mine)})],
        )
    assert str(refused.value) == (
        "plugin 'anthropic_bash': option 'workspace_root': expected a directory the sandbox's "
        f"user can reach and write, got {str(mine)!r} (owned by root, mode 755; the agent "
        "runs as root, so the sandboxed shell runs as the directory's owner, or as nobody "
        "(uid 65534) when root owns it: chown it to the user the shell should run as)"
    )
    # a directory someone else owns: the shell runs as that user
    os.chown(mine, 1000, 1000)
    middleware = AnthropicBashMiddleware(workspace_root=str(mine), sandbox="bubblewrap")
    try:
        got = turn(middleware, sh("who", "id -u; id -g; touch made; ls -n made"))
    finally:
        middleware.close()
    assert got["who"].content.splitlines()[:2] == ["1000", "1000"]
    assert (mine / "made").stat().st_uid == 1000


def test_close_and_timeouts_end_every_process_inside(bash: Any) -> None:
    tag = f"{time.monotonic_ns() % 100000 + 1000}.5"
    # 3 s, not 1: under a loaded CI the restarted sandbox shell could take over a second
    # to run bg2, whose own timeout then took its sleeper (seen once in ten runs)
    middleware = bash(timeout=3)
    got = turn(
        middleware,
        sh("bg", f"setsid sleep {tag} > /dev/null 2>&1 & nohup sleep {tag} > /dev/null 2>&1 &"),
        sh("hang", f"sleep {tag}"),
        sh("bg2", f"setsid sleep {tag} > /dev/null 2>&1 &"),
    )
    assert got["hang"].status == "error" and "timed out" in got["hang"].content
    assert got["bg2"].status != "error", got["bg2"].content
    deadline = time.monotonic() + 5
    while len(_sleepers(tag)) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_sleepers(tag)) == 1  # the timeout took the first shell's setsid job too
    middleware.close()
    deadline = time.monotonic() + 5
    while _sleepers(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(tag) == []


def test_option_errors_at_create_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ScriptedChatModel(["x"])
    with pytest.raises(
        ConfigError, match=r"option 'sandbox': expected one of 'none', 'bubblewrap'"
    ):
        plait.create_agent(model, middleware=[("anthropic_bash", {"sandbox": "bwrap"})])
    with pytest.raises(ConfigError, match=r"sandbox_read_only is only used with sandbox='bubble"):
        plait.create_agent(
            model, middleware=[("anthropic_bash", {"sandbox_read_only": [str(tmp_path)]})]
        )
    with pytest.raises(ConfigError, match=r"denied_commands would mask bash"):
        plait.create_agent(
            model,
            middleware=[("anthropic_bash", {"sandbox": "bubblewrap", "denied_commands": ["bash"]})],
        )
    empty = tmp_path / "bin"
    empty.mkdir()
    os.symlink(shutil.which("bash") or "/bin/bash", empty / "bash")
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ConfigError) as missing:
        plait.create_agent(
            model,
            middleware=[("anthropic_bash", {"sandbox": "bubblewrap", "env": {"PATH": str(empty)}})],
        )
    assert str(missing.value) == (
        "plugin 'anthropic_bash': option 'sandbox': sandbox='bubblewrap': the bwrap program "
        "(bubblewrap) is not installed: install it (e.g. apt-get install bubblewrap)"
    )


def test_without_user_namespaces_the_error_says_so(tmp_path: Path) -> None:
    """Inside a bwrap that forbids user namespaces, building the sandbox fails at
    create_agent with bwrap's own reason."""
    script = (
        "import plait\n"
        "from plait.testing import ScriptedChatModel\n"
        "try:\n"
        "    plait.create_agent(ScriptedChatModel(['x']),\n"
        "        middleware=[('anthropic_bash', {'sandbox': 'bubblewrap'})])\n"
        "except plait.errors.ConfigError as problem:\n"
        "    print(problem)\n"
    )
    outer = [
        shutil.which("bwrap") or "bwrap",
        *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"),
        # The interpreter's environment may itself live under /tmp (tox in a CI clone).
        *("--ro-bind", sys.prefix, sys.prefix),
        *("--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
        # not root inside: a root agent's sandbox would run as nobody, who is not mapped here
        *("--uid", "1000", "--gid", "1000", "--"),
        sys.executable,
        "-c",
        script,
    ]
    done = subprocess.run(outer, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.startswith(
        "plugin 'anthropic_bash': option 'sandbox': sandbox='bubblewrap': bwrap cannot make "
        "the sandbox here (it needs user namespaces"
    ), done.stdout + done.stderr
    assert "namespace" in done.stdout.split("):", 1)[1]


def test_shell_sees_what_the_sandbox_shows_at_its_own_path(bash: Any, tmp_path: Path) -> None:
    shown = tmp_path / "shown"
    shown.mkdir()
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    middleware = bash(sandbox_read_only=[str(shown)])
    workspace = middleware.workspace_root
    assert middleware.shell_sees(f"{workspace}/skills/pdf")
    assert middleware.shell_sees(str(shown / "pdf-forms"))
    assert middleware.shell_sees("/usr/bin/python3")
    assert not middleware.shell_sees(str(hidden))
    assert not middleware.shell_sees(f"{shown}-other")  # a sibling named alike is not inside
    assert bash(sandbox="none").shell_sees(str(hidden))  # no sandbox: the host's files
