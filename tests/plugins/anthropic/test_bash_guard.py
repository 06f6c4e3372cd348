"""The command guard against lines written to get past it, each run by a real bash through
the middleware: with ``denied_commands=["rm"]`` (or an allow-list without ``rm``), no line
removes the victim file — each is refused before it runs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from plait.testing import ai, call, tool_answers
from plait_anthropic._guard import command_names
from plait_anthropic.bash import AnthropicBashMiddleware

ATTACKS = [
    "$(echo rm) victim",
    "`echo rm` victim",
    "${X:-rm} victim",
    "env -u V rm victim",
    "env -S 'rm victim'",
    "env -i rm victim",
    "command -p rm victim",
    "exec -a x rm victim",
    "xargs -a list rm",
    "flock lock rm victim",
    "flock -c 'rm victim' lock",
    "ionice -c 3 rm victim",
    "taskset -c 0 rm victim",
    "chrt -o 0 rm victim",
    "bash --norc -c 'rm victim'",
    "bash -o posix -c 'rm victim'",
    "bash -c -- 'rm victim'",
    "sh -ec 'rm victim'",
    "echo a\\ #; rm victim",
    "echo '<<EOF'; rm victim",
    "# <<EOF\nrm victim",
    "{rm,victim}",
    "/bin/r? victim",
    "/bin/r[m] victim",
    "coproc rm victim",
    "trap 'rm victim' EXIT",
    "hash -p /bin/rm ls; ls victim",
    "alias ls=rm\nls victim",
    "PATH=/tmp/evil:$PATH ls",
    "export PATH=/tmp/evil",
    "BASH_ALIASES[ls]=rm; ls victim",
    "r''m victim",
    'r"m" victim',
    "\\rm victim",
    'eval "$(echo rm) victim"',
    "cat <<EOF\n$(rm victim)\nEOF",
    "source script.sh",
    "bash script.sh",
    "watch -n 1 'rm victim'",
    "case x in x) rm victim;; esac",
]


@pytest.mark.parametrize("line", ATTACKS)
def test_the_guard_refuses_what_it_cannot_resolve(line: str) -> None:
    try:
        names = command_names(line)
    except ValueError:
        return
    assert "rm" in names, names


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    "options", [{"denied_commands": ["rm"]}, {"allowed_commands": ["ls", "echo", "cat", "touch"]}]
)
def test_no_attack_removes_the_file_through_a_real_bash(
    make_agent: Any, tmp_path: Path, options: dict[str, Any]
) -> None:
    (tmp_path / "list").write_text("victim\n")
    (tmp_path / "script.sh").write_text("rm victim\n")
    middleware = AnthropicBashMiddleware(workspace_root=str(tmp_path), **options)
    refused = 0
    try:
        for index, line in enumerate(ATTACKS):
            (tmp_path / "victim").write_text("v")
            agent = make_agent(
                [ai("", call("bash", f"c{index}", command=line)), "done"],
                middleware=[middleware],
            )
            answer = tool_answers(agent.invoke("go", thread_id="t").messages)[f"c{index}"]
            assert (tmp_path / "victim").exists(), (line, answer.content)
            assert answer.status == "error", (line, answer.content)
            assert answer.content.endswith("nothing was run"), answer.content
            refused += 1
    finally:
        middleware.close()
    print(f"\n{refused} of {len(ATTACKS)} attack lines refused by a real bash session, 0 ran rm")
