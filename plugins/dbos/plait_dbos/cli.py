"""``plait worker FILE`` and ``plait submit FILE PROMPT --thread T``: the ``plait.commands``
this plugin adds to the plait CLI. Imports of DBOS wait until a command runs.

No public names: each ``*_command`` is an entry point's target, which ``plait`` loads by
its ``module:attribute`` whether or not a module exports it."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import IO, Any

from plait.errors import ConfigError

__all__: list[str] = []


def worker_command(sub: Any) -> None:
    """``plait worker AGENT.toml`` (entry point ``worker`` in ``plait.commands``)."""
    parser = sub.add_parser(
        "worker",
        help="serve an agent file's durable run queue (plait-dbos)",
        description="Take runs of the agent from its DBOS queue and run them until stopped.",
    )
    parser.add_argument("agent", metavar="AGENT.toml", help="the agent file (uses dbos)")
    parser.add_argument(
        "--id",
        default=None,
        metavar="ID",
        help="this worker's name (default: the host name). A worker started with --id "
        "takes over the unfinished runs of earlier workers of that id at once; those of "
        "other dead workers are taken over once their heartbeat is takeover_after old. "
        "Give one id to one live process at a time.",
    )
    parser.add_argument("--model", metavar="ID", help="use this model id instead of the file's")
    parser.set_defaults(func=cmd_worker)


def submit_command(sub: Any) -> None:
    """``plait submit AGENT.toml PROMPT`` (entry point ``submit`` in ``plait.commands``)."""
    parser = sub.add_parser(
        "submit",
        help="queue a durable run of an agent file (plait-dbos)",
        description="Put a run on the agent's DBOS queue; any `plait worker` runs it.",
    )
    parser.add_argument("agent", metavar="AGENT.toml", help="the agent file (uses dbos)")
    parser.add_argument("prompt", metavar="PROMPT", nargs="?", help="the message")
    parser.add_argument("--thread", required=True, metavar="ID", help="the thread to run on")
    parser.add_argument("--resume", metavar="JSON", help="answer the thread's pending interrupt")
    parser.add_argument("--wait", action="store_true", help="wait for the run and print it")
    parser.add_argument("--json", action="store_true", help="with --wait: print JSON")
    parser.add_argument(
        "--stream", action="store_true", help="print the model's text as it comes, then wait"
    )
    parser.set_defaults(func=cmd_submit)


def workers_command(sub: Any) -> None:
    """``plait workers AGENT.toml`` (entry point ``workers`` in ``plait.commands``)."""
    parser = sub.add_parser(
        "workers",
        help="list the workers of an agent file's database and their heartbeats (plait-dbos)",
        description="Each worker's executor id, the age of its last heartbeat and whether "
        "it counts as alive; a dead worker's runs are taken over by a live one.",
    )
    parser.add_argument("agent", metavar="AGENT.toml", help="the agent file (uses dbos)")
    parser.set_defaults(func=cmd_workers)


def cmd_workers(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait_dbos._database import check_database
    from plait_dbos._middleware import DBOSMiddleware
    from plait_dbos._takeover import Heartbeats

    _, table = _dbos_table(Path(args.agent))
    from plait.options import structure_options

    options = structure_options(DBOSMiddleware, table, plugin="dbos")
    check_database(options.database_url, may_create=False)
    try:
        rows = Heartbeats(options.database_url).rows()
    except Exception as exc:
        raise ConfigError(f"plugin 'dbos': cannot read the workers' heartbeats: {exc}") from None
    for row in rows:
        state = "alive" if row["age_ms"] <= row["takeover_ms"] else "dead"
        out.write(
            f"{row['executor_id']}\t{state}\tlast heartbeat {row['age_ms'] / 1000:.1f} s ago\n"
        )
    if not rows:
        out.write("no workers\n")
    return 0


def cmd_worker(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait.agentfile import read_agent_file
    from plait_dbos._worker import Worker

    agent = read_agent_file(args.agent, model=args.model).build()
    worker = Worker(agent, executor_id=args.id)

    def stop(_signum: int, _frame: FrameType | None) -> None:
        worker._stopped.set()

    signal.signal(signal.SIGTERM, stop)
    worker.start()
    options = worker.options
    err.write(
        f"plait worker {worker.executor_id!r}: serving agent {agent.name!r} from queue "
        f"{options.queue!r} ({_redacted(options.database_url)})\n"
    )
    err.flush()
    try:
        worker._stopped.wait()
    except KeyboardInterrupt:
        pass
    worker.stop()
    return 0


def cmd_submit(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait_dbos._middleware import DBOSMiddleware
    from plait_dbos._submit import submit

    name, table = _dbos_table(Path(args.agent))
    from plait.options import structure_options

    options = structure_options(DBOSMiddleware, table, plugin="dbos")
    if args.resume is not None:
        try:
            answer = json.loads(args.resume)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--resume: not valid JSON: {exc}") from None
        queued = submit(
            options,
            args.prompt,
            thread_id=args.thread,
            resume=answer,
            agent_name=name,
            stream=args.stream,
        )
    else:
        if args.prompt is None:
            args.prompt = sys.stdin.read()
        queued = submit(
            options, args.prompt, thread_id=args.thread, agent_name=name, stream=args.stream
        )
    if args.stream:
        for piece in queued.stream():
            if piece.again:
                out.write("\n[a worker stopped; this model call is made again]\n")
            out.write(piece.text)
            out.flush()
        out.write("\n")
        args.wait = True
    if not args.wait:
        out.write(f"queued {queued.workflow_id} on thread {args.thread}\n")
        return 0
    result = queued.result()
    if args.json:
        json.dump(result, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return 0
    if result["text"] and not args.stream:
        out.write(result["text"] + "\n")
    for pending in result["interrupts"]:
        out.write(f"paused: {json.dumps(pending['value'], ensure_ascii=False)}\n")
    if result["interrupts"]:
        out.write(f"resume with `plait submit {args.agent} --thread {args.thread} --resume JSON`\n")
    return 0


def _dbos_table(path: Path) -> tuple[str, dict[str, Any]]:
    """The agent's name and its ``dbos`` middleware options, read from the file without
    building the agent (submitting needs no model, tools or API keys)."""
    import tomllib  # here, not at the top: plait --help loads this module

    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the agent file: {exc}") from None
    agent = data.get("agent", {})
    name = agent.get("name", "agent") if isinstance(agent, dict) else "agent"
    for table in data.get("middleware", []):
        if isinstance(table, dict) and table.get("use") == "dbos":
            return str(name), {k: v for k, v in table.items() if k != "use"}
    raise ConfigError(f'{path}: no [[middleware]] table with use = "dbos"')


def _redacted(url: str) -> str:
    head, at, tail = url.rpartition("@")
    return f"{head.split('://')[0]}://***@{tail}" if at else url
