"""``anthropic_bash``: real commands in a persistent bash per thread (state, workspace,
environment, output caps, exit codes, timeouts, restarts, the allow/deny guard), answers
through agents, options and their errors, no leaked processes, and the tool on the
Anthropic and OpenAI wires."""

from __future__ import annotations

import asyncio
import functools
import os
import time
from pathlib import Path
from typing import Any

import pytest
from replay_server import claude_message, claude_tool_use, openai_completion

import plait
from plait.errors import ConfigError
from plait.models.openai import OpenAIChatModel
from plait.testing import ai, call, tool_answers
from plait_anthropic import AnthropicChatModel
from plait_anthropic._guard import command_names
from plait_anthropic.bash import TOOL_DESCRIPTION, AnthropicBashMiddleware


@pytest.fixture
def bash(make_bash: Any, tmp_path: Path) -> Any:
    """A middleware in ``tmp_path`` unless told otherwise, closed after the test."""
    return functools.partial(make_bash, workspace_root=str(tmp_path))


def sh(id: str, command: str | None = None, **args: Any) -> Any:
    if command is not None:
        args["command"] = command
    return call("bash", id, **args)


def run(make_agent: Any, middleware: Any, *calls: Any, thread_id: str | None = "t") -> Any:
    """One turn where the model makes each call in turn (one per AI message), then says done."""
    agent = make_agent([*(ai("", c) for c in calls), "done"], middleware=[middleware])
    return tool_answers(agent.invoke("go", thread_id=thread_id).messages)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def gone(pid: int, wait: float = 2.0) -> bool:
    deadline = time.monotonic() + wait
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- the tool offered to the model -----------------------------------------------------------


def test_the_tool_has_anthropics_type_and_a_real_schema(make_agent: Any, bash: Any) -> None:
    agent = make_agent(["hi"], middleware=[bash()])
    agent.invoke("hello")
    (tool,) = agent.model.requests[0].tools
    assert tool.name == "bash"
    assert tool.provider_options == {"anthropic": {"type": "bash_20250124"}}
    assert tool.provider_options["anthropic"]["type"] == "bash_20250124"
    assert tool.description == TOOL_DESCRIPTION
    props = tool.parameters["properties"]
    assert set(props) == {"command", "restart"}
    assert "string" in str(props["command"])
    assert props["restart"]["type"] == "boolean"
    assert not tool.parameters.get("required")


def test_tool_description_option(make_agent: Any, bash: Any) -> None:
    agent = make_agent(["hi"], middleware=[bash(tool_description="Run things.")])
    agent.invoke("hello")
    assert agent.model.requests[0].tools[0].description == "Run things."


# -- commands ------------------------------------------------------------------------------


def test_state_persists_and_the_workspace_is_the_start(
    make_agent: Any, bash: Any, tmp_path: Path
) -> None:
    got = run(
        make_agent,
        bash(),
        sh("pwd0", "pwd"),
        sh("mk", "mkdir sub && cd sub"),
        sh("pwd1", "pwd"),
        sh("ex", "export X=1; f() { echo fn$1; }"),
        sh("x", "echo $X; f 2"),
        sh("hi", "echo hi"),
    )
    assert got["pwd0"].content == str(tmp_path)
    assert got["mk"].content == "(no output)"
    assert got["pwd1"].content == str(tmp_path / "sub")
    assert got["x"].content == "1\nfn2"
    assert got["hi"].content == "hi"
    assert all(m.status == "success" for m in got.values())
    assert (tmp_path / "sub").is_dir()


def test_state_survives_runs_of_the_same_thread_not_other_threads(
    make_agent: Any, bash: Any
) -> None:
    middleware = bash()
    agent = make_agent(
        [
            ai("", sh("a", "export X=one")),
            "ok",
            ai("", sh("b", "echo ${X:-unset}")),
            "ok",
            ai("", sh("c", "echo ${X:-unset}")),
            "ok",
        ],
        middleware=[middleware],
    )
    agent.invoke("1", thread_id="t1")
    second = tool_answers(agent.invoke("2", thread_id="t1").messages)
    other = tool_answers(agent.invoke("3", thread_id="t2").messages)
    assert second["b"].content == "one"
    assert other["c"].content == "unset"
    assert set(middleware.sessions()) == {"t1", "t2"}


def test_exit_code_and_stderr_are_reported(make_agent: Any, bash: Any) -> None:
    got = run(
        make_agent,
        bash(),
        sh("err", "echo out; echo oops >&2; exit_code() { return 3; }; exit_code"),
        sh("ls", "ls /no/such/dir"),
        sh("nocmd", "definitely-not-a-command-xyz"),
        sh("syntax", "if then"),
        sh("after", "echo still here"),
    )
    assert got["err"].content == "out\noops\n[exit code 3]"
    assert got["err"].status == "success"
    assert got["ls"].content.startswith("ls: cannot access '/no/such/dir'")
    assert got["ls"].content.endswith("[exit code 2]")
    assert "command not found" in got["nocmd"].content
    assert got["nocmd"].content.endswith("[exit code 127]")
    assert "syntax error" in got["syntax"].content
    assert got["after"].content == "still here"


def test_commands_do_not_read_stdin_and_output_without_newline(make_agent: Any, bash: Any) -> None:
    got = run(
        make_agent,
        bash(timeout=5),
        sh("cat", "cat"),
        sh("read", "read x; echo got:$x"),
        sh("n", "printf abc"),
        sh("heredoc", "cat > f.txt <<'EOF'\nline 'one'\nEOF\ncat f.txt"),
    )
    assert got["cat"].content == "(no output)"
    assert got["read"].content == "got:"
    assert got["n"].content == "abc"
    assert got["heredoc"].content == "line 'one'"


def test_output_caps(make_agent: Any, bash: Any) -> None:
    got = run(
        make_agent,
        bash(max_output_lines=5, max_output_bytes=1000),
        sh("lines", "seq 1 12"),
        sh("bytes", "head -c 5000 /dev/zero | tr '\\0' x"),
        sh("ok", "seq 1 5"),
    )
    assert got["lines"].content == "1\n2\n3\n4\n5\n[output truncated: 7 more lines omitted]"
    assert got["bytes"].content == "x" * 1000 + "\n[output truncated: 4000 more bytes omitted]"
    assert got["ok"].content == "1\n2\n3\n4\n5"


def test_no_caps(bash: Any) -> None:
    middleware = bash(max_output_lines=None, max_output_bytes=None)
    text, failed = middleware._run("k", "seq 1 300000", False)
    assert not failed
    assert text.endswith("\n300000") and text.count("\n") == 299999


def test_timeout_kills_the_process_group_and_restarts(
    make_agent: Any, bash: Any, tmp_path: Path
) -> None:
    middleware = bash(timeout=0.5)
    started = time.monotonic()
    got = run(
        make_agent,
        middleware,
        sh("cd", "mkdir d; cd d; export X=1"),
        sh("slow", "echo before; sleep 5 & echo $! > ../pid; wait"),
        sh("next", "pwd; echo ${X:-unset}"),
    )
    assert time.monotonic() - started < 3
    assert got["slow"].status == "error"
    assert got["slow"].content == (
        "Error: the command timed out after 0.5 s and was killed; the bash session was "
        "restarted, so its state (current directory, variables) is lost. Output before the "
        "timeout:\nbefore"
    )
    assert gone(int((tmp_path / "pid").read_text()))
    assert got["next"].status == "success"
    assert got["next"].content == f"{tmp_path}\nunset"


def test_restart_clears_state(make_agent: Any, bash: Any, tmp_path: Path) -> None:
    middleware = bash()
    got = run(
        make_agent,
        middleware,
        sh("set", "export X=1; mkdir -p d; cd d; echo $$ > ../pid"),
        sh("restart", restart=True),
        sh("after", "pwd; echo ${X:-unset}"),
        sh("both", "echo ${X:-unset}", restart=True),
    )
    assert got["restart"].status == "success"
    assert got["restart"].content == (
        f"bash session restarted in {tmp_path}: variables, functions and the current "
        "directory are back to their start"
    )
    assert gone(int((tmp_path / "pid").read_text()))
    assert got["after"].content == f"{tmp_path}\nunset"
    assert got["both"].content == "unset"


def test_no_command_is_an_error(make_agent: Any, bash: Any) -> None:
    got = run(make_agent, bash(), sh("none"), sh("blank", "  "), sh("bad", restart="yes"))
    assert got["none"].status == got["blank"].status == got["bad"].status == "error"
    assert got["none"].content == (
        "Error: give a command to run, or restart=true to restart the session"
    )
    assert got["blank"].content == got["none"].content


def test_exit_ends_the_session_and_the_next_command_starts_one(make_agent: Any, bash: Any) -> None:
    got = run(
        make_agent, bash(), sh("set", "X=1"), sh("exit", "exit 4"), sh("x", "echo ${X:-unset}")
    )
    assert got["exit"].content == (
        "[exit code 4]\n[the shell exited with code 4; the next command starts a fresh session]"
    )
    assert got["x"].content == "unset"


# -- environment and workspace -------------------------------------------------------------


def test_minimal_environment_plus_env(
    make_agent: Any, bash: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIT_BASH_SECRET", "s3cret")
    got = run(
        make_agent,
        bash(env={"GREETING": "hello", "LANG": "C"}),
        sh("env", "echo $HOME; echo $GREETING; echo $LANG; echo ${PLAIT_BASH_SECRET:-absent}"),
    )
    assert got["env"].content == f"{tmp_path}\nhello\nC\nabsent"


def test_inherit_env(
    make_agent: Any, bash: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIT_BASH_SECRET", "s3cret")
    got = run(make_agent, bash(inherit_env=True), sh("env", "echo $PLAIT_BASH_SECRET"))
    assert got["env"].content == "s3cret"


def test_default_workspace_is_a_temporary_directory_per_thread_removed_on_close(
    make_agent: Any,
) -> None:
    middleware = AnthropicBashMiddleware()
    try:
        got = run(make_agent, middleware, sh("pwd", "pwd; touch f"), sh("r", restart=True))
        other = run(make_agent, middleware, sh("pwd", "pwd; ls"), thread_id="u")
        workspace = Path(got["pwd"].content)
        assert workspace.name.startswith("plait-bash-") and (workspace / "f").exists()
        # A restart keeps the files: only the shell's state is new.
        assert got["r"].content.startswith(f"bash session restarted in {workspace}:")
        assert Path(other["pwd"].content) != workspace
        middleware.close("t")
        assert not workspace.exists()
        assert Path(other["pwd"].content).exists()
    finally:
        middleware.close()
    assert not Path(other["pwd"].content).exists()


def test_runs_without_a_thread_share_one_session(make_agent: Any, bash: Any) -> None:
    middleware = bash()
    agent = make_agent(
        [ai("", sh("a", "export X=1")), "ok", ai("", sh("b", "echo $X")), "ok"],
        middleware=[middleware],
        checkpointer=None,
    )
    agent.invoke("1")
    assert tool_answers(agent.invoke("2").messages)["b"].content == "1"
    assert list(middleware.sessions()) == [""]


def test_startup_and_shutdown_commands(make_agent: Any, bash: Any, tmp_path: Path) -> None:
    middleware = bash(
        startup_commands=["export STAGE=dev", "mkdir -p work && cd work"],
        shutdown_commands=["echo bye > ../closed", "false"],
    )
    got = run(make_agent, middleware, sh("a", "pwd; echo $STAGE"))
    assert got["a"].content == f"{tmp_path / 'work'}\ndev"
    middleware.close()
    assert (tmp_path / "closed").read_text() == "bye\n"


def test_a_failing_startup_command_is_an_error(make_agent: Any, bash: Any) -> None:
    got = run(make_agent, bash(startup_commands=["echo nope; false"]), sh("a", "echo hi"))
    assert got["a"].status == "error"
    assert got["a"].content == (
        "Error: the startup command 'echo nope; false' failed (exit code 1): nope"
    )


def test_session_scope_run_closes_when_the_run_ends(make_agent: Any, bash: Any) -> None:
    middleware = bash(session_scope="run")
    agent = make_agent(
        [ai("", sh("a", "export X=1; echo $$")), "ok", ai("", sh("b", "echo ${X:-unset}")), "ok"],
        middleware=[middleware],
    )
    pid = int(tool_answers(agent.invoke("1", thread_id="t").messages)["a"].content)
    assert middleware.sessions() == {}
    assert gone(pid)
    assert tool_answers(agent.invoke("2", thread_id="t").messages)["b"].content == "unset"


# -- no leaked processes -------------------------------------------------------------------


def test_past_max_sessions_the_least_recently_used_shell_is_closed(bash: Any) -> None:
    middleware = bash(max_sessions=2, workspace_root=None)
    for key in ("t1", "t2"):
        middleware._run(key, f"export X={key}; echo kept > file.txt", False)
    middleware._run("t1", "true", False)  # t1 is now more recent than t2
    oldest = middleware.sessions()["t2"].process.pid
    middleware._run("t3", "true", False)
    assert set(middleware.sessions()) == {"t1", "t3"}
    assert gone(oldest)
    # t2's next command gets a fresh shell in the same workspace: files kept, state not.
    assert middleware._run("t2", "echo ${X:-unset}; cat file.txt", False) == ("unset\nkept", False)
    assert set(middleware.sessions()) == {"t3", "t2"}  # t1 made room for t2
    assert middleware._run("t1", "echo ${X:-unset}", False) == ("unset", False)


def test_close_kills_the_shell_and_its_background_jobs(bash: Any, tmp_path: Path) -> None:
    middleware = bash()
    text, _ = middleware._run("k", "sleep 30 & echo $!", False)
    child = int(text)
    (session,) = middleware.sessions().values()
    shell = session.process.pid
    assert running(shell) and running(child)
    middleware.close()
    assert session.process.poll() is not None
    assert gone(shell) and gone(child)
    assert middleware.sessions() == {}
    middleware.close()  # idempotent


def test_garbage_collection_is_a_safety_net(tmp_path: Path) -> None:
    import gc

    middleware = AnthropicBashMiddleware(workspace_root=str(tmp_path))
    text, _ = middleware._run("k", "echo $$", False)
    del middleware
    gc.collect()
    assert gone(int(text))


# -- the allow and deny lists --------------------------------------------------------------


def test_denied_commands_never_run(make_agent: Any, bash: Any, tmp_path: Path) -> None:
    got = run(
        make_agent,
        bash(denied_commands=["rm", "touch"]),
        sh("ok", "echo keep > keep.txt; ls"),
        sh("rm", "echo hi && rm keep.txt"),
        sh("sub", 'echo "$(touch made.txt)"'),
        sh("path", "/usr/bin/touch made.txt"),
        sh("sudo", "sudo -u root rm keep.txt"),
        sh("pipe", "ls | xargs rm"),
        sh("quoted", "echo 'rm is fine as an argument'; echo touch"),
        sh("variable", "T=touch; $T made.txt"),
    )
    assert got["ok"].content == "keep.txt"
    assert got["rm"].status == "error"
    assert got["rm"].content == (
        "Error: the command 'rm' is refused: it is one of the denied commands (rm, touch); "
        "nothing was run"
    )
    for key, name in (("sub", "touch"), ("path", "touch"), ("sudo", "rm"), ("pipe", "rm")):
        assert got[key].status == "error"
        assert f"the command {name!r} is refused" in got[key].content
    assert got["quoted"].content == "rm is fine as an argument\ntouch"
    assert got["variable"].status == "error"
    assert got["variable"].content == (
        "Error: the command cannot be checked against the allowed and denied commands: the "
        "command name '$T' comes from a variable or substitution; nothing was run"
    )
    assert (tmp_path / "keep.txt").exists()
    assert not (tmp_path / "made.txt").exists()


def test_allowed_commands_only(make_agent: Any, bash: Any, tmp_path: Path) -> None:
    got = run(
        make_agent,
        bash(allowed_commands=["echo", "cat", "ls"]),
        sh("ok", "echo a > a.txt; cat a.txt | cat; X=1 ls 2>&1"),
        sh("heredoc", "cat > b.txt <<EOF\nrm -rf /\nEOF\ncat b.txt"),
        sh("no", "echo a; touch made.txt"),
        sh("sub", "echo `touch made.txt`"),
        sh("unparsable", "echo 'unclosed"),
    )
    assert got["ok"].content == "a\na.txt"
    assert got["heredoc"].content == "rm -rf /"
    assert got["no"].status == "error"
    assert got["no"].content == (
        "Error: the command 'touch' is refused: it is not one of the allowed commands "
        "(echo, cat, ls); nothing was run"
    )
    assert got["sub"].status == "error"
    assert got["unparsable"].status == "error"
    assert got["unparsable"].content.startswith(
        "Error: the command cannot be checked against the allowed and denied commands: "
        "bashlex cannot parse it: unexpected EOF"
    )
    assert not (tmp_path / "made.txt").exists()


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("echo hi; rm -rf x && curl a|grep b || wc", ["echo", "rm", "curl", "grep", "wc"]),
        ("a\nb c\n\nd", ["a", "b", "d"]),
        ('echo "a; rm b"', ["echo"]),
        ("echo $(rm c) `wget d`", ["rm", "wget", "echo"]),
        ("X=1 Y=2 ls 2>&1 > out", ["ls"]),
        ("(cd d && make) &", ["cd", "make"]),
        ("sudo -u bob rm f", ["sudo", "rm"]),
        ("env A=1 python x.py", ["env", "python"]),
        ("timeout 5 curl x", ["timeout", "curl"]),
        ("for f in a b; do rm $f; done", ["rm"]),
        ("if test -f x; then cat x; fi", ["test", "cat"]),
        ("cat > f.py << 'EOF'\nprint('don't')\nEOF\npython f.py", ["cat", "python"]),
        ("echo hi # rm x", ["echo"]),
        ("/bin/rm x", ["rm"]),
        ("echo a#b; rm x", ["echo", "rm"]),
        ("echo ${#X}; rm y", ["echo", "rm"]),
        ('echo "a # b"; rm w', ["echo", "rm"]),
        ("# a comment: rm\nls", ["ls"]),
        ("ls && \\\nrm q", ["ls", "rm"]),
        ("echo $(( (1 + 2) * 3 )); rm v", ["echo", "rm"]),
        ("diff <(ls a) >(cat)", ["ls", "cat", "diff"]),
        ('bash -c "rm k; curl j"', ["bash", "rm", "curl"]),
        ("eval 'touch x'; ls", ["eval", "touch", "ls"]),
        ("watch -n 1 rm l", ["watch", "rm"]),
    ],
)
def test_command_names(line: str, names: list[str]) -> None:
    assert command_names(line) == names


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.5}, "timeout"),
        ({"max_output_lines": 0}, "max_output_lines"),
        ({"max_output_bytes": -1}, "max_output_bytes"),
        ({"workspace_root": "/no/such/dir"}, "workspace_root"),
        ({"denied_commands": "rm"}, "denied_commands"),
        ({"allowed_commands": ["/bin/ls"]}, "allowed_commands"),
        ({"session_scope": "agent"}, "session_scope"),
        ({"env": {"A": 1}}, "env"),
        ({"allowed_commands": ["ls"], "denied_commands": ["rm"]}, "allowed_commands"),
    ],
)
def test_bad_options_fail_at_create_agent(
    make_agent: Any, options: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("anthropic_bash", options)])
    assert words in str(info.value)
    assert "anthropic_bash" in str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"allowed_commands": ["ls", "/bin/rm"]},
            "option 'allowed_commands': expected a list of command names or None, got "
            "['ls', '/bin/rm'] ('/bin/rm' is not a bare command name: give 'rm', not '/bin/rm')",
        ),
        (
            {"denied_commands": ["rm "]},
            "option 'denied_commands': expected a list of command names or None, got "
            "['rm '] ('rm ' is not a bare command name: give 'rm', not '/bin/rm')",
        ),
        (
            {"denied_commands": ["  "]},
            "option 'denied_commands': expected a list of command names or None, got ['  ']",
        ),
        (
            {"env": {"A=B": "x"}},
            "option 'env': expected a mapping of variable names to strings, got {'A=B': 'x'} "
            "('A=B' is not a variable name)",
        ),
        (
            {"sandbox_read_only": ["/no/such/dir"]},
            "option 'sandbox_read_only': expected a list of existing directories, got "
            "['/no/such/dir'] ('/no/such/dir' is not an existing directory)",
        ),
    ],
)
def test_bad_option_values_are_worded_like_every_option(
    make_agent: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(["hi"], middleware=[("anthropic_bash", options)])
    assert str(info.value) == f"plugin 'anthropic_bash': {message}"


def test_bad_option_values_read_the_same_given_to_the_class() -> None:
    with pytest.raises(ValueError) as info:
        AnthropicBashMiddleware(denied_commands="rm")  # type: ignore[arg-type]
    assert str(info.value) == "denied_commands: expected a list of command names or None, got 'rm'"
    with pytest.raises(ValueError) as info:
        AnthropicBashMiddleware(env={"A": 1})  # type: ignore[dict-item]
    assert str(info.value) == (
        "env: expected a mapping of variable names to strings, got {'A': 1} "
        "(the value of 'A' is not a string)"
    )
    with pytest.raises(ValueError) as info:
        AnthropicBashMiddleware(startup_commands="ls")  # type: ignore[arg-type]
    assert str(info.value) == "startup_commands: expected a list of shell commands, got 'ls'"


def test_options_by_name_and_a_path_workspace(make_agent: Any, tmp_path: Path) -> None:
    agent = make_agent(
        [ai("", sh("a", "pwd")), "done"],
        middleware=[("anthropic_bash", {"workspace_root": str(tmp_path), "timeout": 5})],
    )
    try:
        assert tool_answers(agent.invoke("go").messages)["a"].content == str(tmp_path)
    finally:
        for middleware in agent.middleware if hasattr(agent, "middleware") else ():
            if isinstance(middleware, AnthropicBashMiddleware):
                middleware.close()
    assert AnthropicBashMiddleware(workspace_root=tmp_path).workspace_root == str(tmp_path)  # type: ignore[arg-type]


# -- async and concurrency -----------------------------------------------------------------


def test_async_path_and_parallel_calls_share_the_session_safely(
    make_agent: Any, bash: Any, tmp_path: Path
) -> None:
    calls = [sh(f"c{i}", f"echo {i} >> log.txt; echo {i}") for i in range(5)]
    agent = make_agent([ai("", *calls), "done"], middleware=[bash()])
    got = tool_answers(asyncio.run(agent.ainvoke("go", thread_id="t")).messages)
    assert {got[f"c{i}"].content for i in range(5)} == {str(i) for i in range(5)}
    assert sorted((tmp_path / "log.txt").read_text().split()) == [str(i) for i in range(5)]


def test_threads_sharing_a_session_with_a_restart_do_not_mix_answers(bash: Any) -> None:
    import threading

    middleware = bash()
    problems: list[str] = []

    def work(n: int) -> None:
        for i in range(5):
            text, failed = middleware._run("k", f"echo {n}-{i}", False)
            if failed or text != f"{n}-{i}":
                problems.append(text)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for worker in workers:
        worker.start()
    assert middleware._run("k", None, True)[0].startswith("bash session restarted")
    for worker in workers:
        worker.join(10)
    assert problems == []
    assert len(middleware.sessions()) == 1


# -- on the wire ---------------------------------------------------------------------------


def test_on_the_anthropic_wire_the_tool_is_its_type(server: Any, bash: Any) -> None:
    server.json(claude_message(claude_tool_use("toolu_1", "bash", {"command": "echo hi"})))
    server.json(claude_message("done"))
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", base_url=server.url)
    agent = plait.create_agent(model, middleware=[bash()])
    result = agent.invoke("say hi")
    assert result.text == "done"
    assert server.requests[0].body["tools"] == [{"name": "bash", "type": "bash_20250124"}]
    results = [
        block
        for turn in server.requests[1].body["messages"]
        if isinstance(turn["content"], list)
        for block in turn["content"]
        if block.get("type") == "tool_result"
    ]
    assert results[0]["tool_use_id"] == "toolu_1"
    assert "hi" in str(results[0]["content"])
    assert not results[0].get("is_error")


def test_on_the_openai_wire_the_tool_is_a_function_with_a_schema(server: Any, bash: Any) -> None:
    server.json(openai_completion("done"))
    model = OpenAIChatModel("gpt-4.1-mini", api_key="k", base_url=server.url + "/v1")
    agent = plait.create_agent(model, middleware=[bash()])
    assert agent.invoke("hi").text == "done"
    (tool,) = server.requests[0].body["tools"]
    assert tool["type"] == "function"
    function = tool["function"]
    assert function["name"] == "bash"
    assert function["description"] == TOOL_DESCRIPTION
    assert set(function["parameters"]["properties"]) == {"command", "restart"}
    assert "bash_20250124" not in str(tool)
