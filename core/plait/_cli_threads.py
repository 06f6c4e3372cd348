"""``plait threads``, ``plait history`` and ``plait fork``: an agent file's saved threads,
read from its checkpointer alone (no model is built, so no API key is needed)."""

from __future__ import annotations

import argparse
import datetime
import json
from typing import IO, TYPE_CHECKING, Any

from plait.errors import PlaitError

if TYPE_CHECKING:  # imported when a command runs: `plait --help` builds these parsers
    from plait.checkpoint import Checkpointer, History

__all__ = ["add_parsers"]


class _Error(PlaitError):
    """A mistake in how the command was used (one line, exit code 1)."""


def _checkpointer(path: str, command: str) -> Checkpointer:
    from plait._compiled import by_url
    from plait.agentfile import read_agent_file

    spec = read_agent_file(path)
    if spec.checkpointer is None:
        raise _Error(
            f"plait {command} reads the threads an agent saved, and {path} has no "
            'checkpointer: set checkpointer in its [agent] table (e.g. "sqlite:///agent.db")'
        )
    saver: Checkpointer | None = by_url(
        spec.kwargs["checkpointer"], "plait.checkpointers", "checkpointer"
    )
    assert saver is not None
    return saver


def _history(saver: Checkpointer) -> History:
    from plait.checkpoint import History

    if not isinstance(saver, History):
        raise _Error(f"checkpointer {saver!r} keeps no history")
    return saver


def _when(seconds: float) -> str:
    stamp = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC")


def cmd_threads(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait.checkpoint import History

    saver = _checkpointer(args.agent, "threads")
    rows: list[dict[str, Any]] = []
    for thread in saver.list_threads():
        steps = _history(saver).history(thread) if isinstance(saver, History) else []
        rows.append(
            {
                "thread": thread,
                "step": saver.step(thread),
                "saved": steps[0].time if steps else None,
            }
        )
    if args.json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return 0
    if not rows:
        out.write(f"no threads saved by {args.agent}\n")
    for row in rows:
        saved = "" if row["saved"] is None else f"  {_when(row['saved'])}"
        out.write(f"{row['thread']}  step {row['step']}{saved}\n")
    return 0


def cmd_history(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    saver = _checkpointer(args.agent, "history")
    if args.thread not in saver.list_threads():
        raise _Error(f"{args.agent} has no thread {args.thread!r} (plait threads {args.agent})")
    steps = _history(saver).history(args.thread)
    if args.json:
        data = [
            {
                "step": s.step,
                "run_id": s.run_id,
                "node": s.node,
                "time": s.time,
                "thread": s.thread_id,
            }
            for s in steps
        ]
        out.write(json.dumps(data, indent=2) + "\n")
        return 0
    for s in steps:
        where = "" if s.thread_id == args.thread else f"  (thread {s.thread_id})"
        out.write(f"{s.step:>5}  {_when(s.time)}  {s.node:<14} run {s.run_id or '-'}{where}\n")
    return 0


def cmd_fork(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    saver = _checkpointer(args.agent, "fork")
    if args.thread not in saver.list_threads():
        raise _Error(f"{args.agent} has no thread {args.thread!r} (plait threads {args.agent})")
    from plait import _ids

    new = args.new_thread or f"{args.thread}-fork-{_ids.new_id()[:8]}"
    _history(saver).fork(args.thread, args.step, new)
    out.write(f"{new}\n")
    err.write(
        f"forked {args.thread!r} at step {args.step}: continue it with "
        f"plait run {args.agent} --thread {new}\n"
    )
    return 0


def _step(text: str) -> int:
    try:
        step = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a step number (0 or more), got {text!r}"
        ) from None
    if step < 0:
        raise argparse.ArgumentTypeError(f"expected a step number (0 or more), got {text!r}")
    return step


def add_parsers(sub: Any) -> None:
    threads = sub.add_parser(
        "threads", help="list an agent's saved threads", description="List saved threads."
    )
    threads.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    threads.add_argument("--json", action="store_true", help="print the list as JSON")
    threads.set_defaults(func=cmd_threads)

    history = sub.add_parser(
        "history",
        help="list a thread's saved steps",
        description="List a thread's kept steps, newest first.",
    )
    history.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    history.add_argument("--thread", required=True, metavar="ID", help="the thread")
    history.add_argument("--json", action="store_true", help="print the steps as JSON")
    history.set_defaults(func=cmd_history)

    fork = sub.add_parser(
        "fork",
        help="start a new thread from a step of another",
        description="Make a new thread that is THREAD as it was after STEP; print its id.",
    )
    fork.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    fork.add_argument("--thread", required=True, metavar="ID", help="the thread to fork")
    fork.add_argument("--step", required=True, type=_step, metavar="N", help="the step")
    fork.add_argument("--new-thread", metavar="ID", help="the new thread's id (default: made up)")
    fork.set_defaults(func=cmd_fork)
