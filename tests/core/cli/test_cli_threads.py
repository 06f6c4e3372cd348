"""``plait threads``, ``plait history --thread T`` and ``plait fork --thread T --step N``
in real subprocesses: fork a thread before its approval and resume the fork with another
decision."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

REJECT = json.dumps({"decisions": [{"type": "reject", "message": "not today"}]})
APPROVE = json.dumps({"decisions": [{"type": "approve"}]})


def test_fork_before_the_approval_and_decide_otherwise(
    plait_cli, mail_agent: Callable[[str], Path]
) -> None:
    mail_agent('checkpointer = "sqlite:///mail.db"')
    assert plait_cli("run", "mail.toml", "Mail Bob", "--thread", "m1").returncode == 0
    history = plait_cli("history", "mail.toml", "--thread", "m1", "--json")
    assert history.returncode == 0, history.stderr
    steps = json.loads(history.stdout)
    paused = steps[0]
    assert paused["node"] == "tools" and paused["run_id"]
    assert [s["step"] for s in steps] == sorted((s["step"] for s in steps), reverse=True)

    done = plait_cli("run", "mail.toml", "--thread", "m1", "--resume", APPROVE, "--json")
    assert json.loads(done.stdout)["text"] == "Done: sent to bob@example.com: Hello"

    fork = plait_cli(
        "fork", "mail.toml", "--thread", "m1", "--step", str(paused["step"]), "--new-thread", "m1b"
    )
    assert fork.returncode == 0, fork.stderr
    assert fork.stdout == "m1b\n"
    assert "plait run mail.toml --thread m1b" in fork.stderr
    redo = plait_cli("run", "mail.toml", "--thread", "m1b", "--resume", REJECT, "--json")
    assert redo.returncode == 0, redo.stderr
    assert json.loads(redo.stdout)["text"] == "Done: not sent: not today"

    threads = plait_cli("threads", "mail.toml")
    assert [line.split()[0] for line in threads.stdout.splitlines()] == ["m1", "m1b"]
    text = plait_cli("history", "mail.toml", "--thread", "m1b").stdout.splitlines()
    assert "(thread m1)" in text[-1] and "(thread m1)" not in text[0]


def test_bad_input_is_one_line(plait_cli, mail_agent: Callable[[str], Path]) -> None:
    mail_agent('checkpointer = "sqlite:///mail.db"')
    plait_cli("run", "mail.toml", "Mail Bob", "--thread", "m1")
    missing = plait_cli("history", "mail.toml", "--thread", "nope")
    assert missing.returncode == 1
    assert (
        missing.stderr == "plait: error: mail.toml has no thread 'nope' (plait threads mail.toml)\n"
    )
    far = plait_cli("fork", "mail.toml", "--thread", "m1", "--step", "99")
    assert far.returncode == 1
    assert far.stderr.startswith(
        "plait: error: thread 'm1' has no step 99: the steps kept are 1 to "
    )
    assert len(far.stderr.splitlines()) == 1
    taken = plait_cli("fork", "mail.toml", "--thread", "m1", "--step", "1", "--new-thread", "m1")
    assert taken.stderr == "plait: error: cannot fork onto thread 'm1': it exists\n"
    bad = plait_cli("fork", "mail.toml", "--thread", "m1", "--step", "x")
    assert bad.returncode == 2 and "expected a step number (0 or more), got 'x'" in bad.stderr


def test_an_agent_without_checkpointer_is_told_what_to_add(
    plait_cli, mail_agent: Callable[[str], Path]
) -> None:
    mail_agent("")
    result = plait_cli("threads", "mail.toml")
    assert result.returncode == 1
    assert result.stderr == (
        "plait: error: plait threads reads the threads an agent saved, and mail.toml has no "
        'checkpointer: set checkpointer in its [agent] table (e.g. "sqlite:///agent.db")\n'
    )
