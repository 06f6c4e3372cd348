"""The ``plait`` command line: run and chat with agent files, look at their threads
(``_cli_threads``), list plugins, scaffold one.

Every failure ends with one line on stderr (``plait: error: ...``) and a non-zero exit
code; ``PLAIT_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from plait.errors import CheckpointerRequiredError, PlaitError, ThreadBusyError

if TYPE_CHECKING:
    import cattrs

    from plait.agent import Agent, AgentResult
    from plait.agentfile import AgentSpec
    from plait.answerers import Asker
    from plait.types import Interrupt

__all__ = ["Asker", "main"]

_MOVED = {
    "Asker": "plait.answerers",
    "Console": "plait._console",
    "Spinner": "plait._console",
    "ModelDisplay": "plait._console",
    "ToolDisplay": "plait._console",
    "format_call": "plait._console",
    "PluginInfo": "plait._plugin_list",
    "collect_plugins": "plait._plugin_list",
}
"""Names of the live display, of ``plait plugins`` and of the interrupt dialog, in modules
of their own so that ``plait --help`` imports neither attrs, the middleware machinery nor
subprocess."""


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module 'plait.cli' has no attribute {name!r}")


EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CLIError(PlaitError):
    """A mistake in how the command was used (reported as one line, exit code 1)."""


def _final_answer(result: AgentResult, shown: set[str]) -> str | None:
    from plait.messages import AIMessage

    if result.interrupts or not result.messages:
        return None
    last = result.messages[-1]
    if isinstance(last, AIMessage) and last.id not in shown:
        return last.text
    return None


# --------------------------------------------------------------------------- JSON


@functools.cache
def _json_converter() -> cattrs.Converter:
    import cattrs

    return cattrs.Converter()


def _jsonable(value: Any) -> Any:
    """``value`` as JSON data: a pydantic model as its ``model_dump(mode="json")``, attrs
    classes and dataclasses unstructured, and anything JSON still cannot hold (a date, a
    set, an object) as its ``repr`` — so printing it never fails after the run."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    from plait._convert import is_pydantic_model

    try:
        if is_pydantic_model(type(value)):
            data = value.model_dump(mode="json")
        else:
            data = _json_converter().unstructure(value)
    except Exception:
        return repr(value)
    return json.loads(json.dumps(data, default=repr))


def result_to_json(result: AgentResult) -> dict[str, Any]:
    """The run's result as plain JSON data (messages as ``unstructure_message`` writes them)."""
    import attrs

    from plait.messages import unstructure_message

    return {
        "text": result.text,
        "messages": [unstructure_message(m) for m in result.messages],
        "usage": attrs.asdict(result.usage),
        "interrupts": [{"id": i.id, "value": _jsonable(i.value)} for i in result.interrupts],
        "structured_response": _jsonable(result.structured_response),
        "thread_id": result.thread_id,
        "run_id": result.run_id,
    }


# --------------------------------------------------------------------------- run


def _new_hex() -> str:
    """Twelve random hex digits naming a new thread (uuid imported only when one is made)."""
    import uuid

    return uuid.uuid4().hex[:12]


def _load(path: str, model: str | None = None) -> AgentSpec:
    from plait.agentfile import read_agent_file

    return read_agent_file(path, model=model)


def _parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(f"{what} is not valid JSON: {exc.msg} (at character {exc.pos})") from None


def cmd_run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait.types import Command

    spec = _load(args.agent, args.model)
    if args.thread and spec.checkpointer is None:
        raise CLIError(
            f"--thread needs a checkpointer: set checkpointer in the [agent] table of "
            f'{args.agent} (e.g. checkpointer = "sqlite:///agent.db")'
        )
    if args.resume is not None and not args.thread:
        raise CLIError("--resume needs --thread ID (the paused thread to resume)")

    agent_input: Any
    if args.resume is not None:
        if args.prompt is not None:
            raise CLIError("give either a PROMPT or --resume, not both")
        agent_input = Command(resume=_parse_json(args.resume, "--resume"))
    elif args.prompt is not None:
        agent_input = args.prompt
    elif not sys.stdin.isatty():
        agent_input = sys.stdin.read().strip() or None
    else:
        agent_input = None
    if agent_input is None and not args.thread:
        raise CLIError("give a PROMPT (or pipe one on stdin), or --thread ID to continue a thread")

    thread = args.thread
    if thread is None and spec.checkpointer is not None:
        thread = f"run-{_new_hex()}"

    overrides: dict[str, Any] = {}
    if args.record is not None:
        overrides["record"] = args.record
    if args.replay is not None:
        overrides["replay"] = args.replay
        overrides["replay_mode"] = args.replay_mode
    from plait._console import Console, Spinner

    console: Console | None = None
    if not args.json:
        console = Console(out, Spinner(err))
        overrides["first"], overrides["last"] = console.middleware()
    agent = spec.build(**overrides)
    try:
        result = _turn(agent, agent_input, thread, spec.recursion_limit, live=console is not None)
        if result.interrupts and not _outlives_process(spec.checkpointer) and not args.json:
            # The thread dies with this process, so a later --resume cannot reach it:
            # ask the human now (on stdin), as `plait chat` does.
            from plait.answerers import Asker

            asker = Asker(sys.stdin, out)
            try:
                while result.interrupts:
                    answers = answer_interrupts(result.interrupts, asker)
                    result = _turn(agent, Command(resume=answers), thread, spec.recursion_limit)
            except EOFError:
                out.write("\n")
    except ThreadBusyError as exc:
        raise _busy(exc, args.agent, thread) from None
    except CheckpointerRequiredError:
        raise CLIError(
            f"the agent paused to ask for input, which needs a checkpointer: add "
            f'checkpointer = "sqlite:///agent.db" to the [agent] table of {args.agent}, '
            "or use `plait chat`"
        ) from None

    if args.json:
        json.dump(result_to_json(result), out, ensure_ascii=False, indent=2)
        out.write("\n")
        return EXIT_OK
    assert console is not None
    answer = _final_answer(result, console.shown)
    if answer is not None:
        out.write(answer + "\n")
    if result.structured_response is not None:
        out.write(json.dumps(_jsonable(result.structured_response), ensure_ascii=False) + "\n")
    if result.interrupts:
        _print_pending(result.interrupts, out)
        _print_resume_hint(result.interrupts, args.agent, thread, spec.checkpointer, out)
    return EXIT_OK


def _busy(error: ThreadBusyError, agent_file: str, thread: str | None) -> PlaitError:
    """``error`` with the command that continues a run whose process died (the library
    names ``invoke(None, ...)``, which a CLI user does not write)."""
    from plait._start import dead_process_hint

    if error.reason is None or thread is None:
        return error
    command = f"`plait run {shlex.quote(agent_file)} --thread {shlex.quote(thread)}`"
    return CLIError(f"{error.reason}. {dead_process_hint(command)}")


def _outlives_process(checkpointer: str | None) -> bool:
    """Whether a thread kept by this checkpointer URL can be resumed by a later process."""
    if checkpointer is None:
        return False
    scheme = checkpointer.split(":", 1)[0]
    return scheme != "memory" and ":memory:" not in checkpointer


def _example_answer(interrupts: Sequence[Interrupt]) -> Any:
    """A resume value of the right shape, from each interrupt's answerer."""
    from plait.answerers import answerer_for

    if len(interrupts) == 1:
        return answerer_for(interrupts[0].value).example(interrupts[0].value)
    return {item.id: answerer_for(item.value).example(item.value) for item in interrupts}


def _print_resume_hint(
    interrupts: Sequence[Interrupt],
    agent_file: str,
    thread: str | None,
    checkpointer: str | None,
    out: IO[str],
) -> None:
    if not _outlives_process(checkpointer):
        out.write(
            f"The run stopped unanswered; its checkpointer ({checkpointer!r}) ends with this "
            f"process, so it cannot be resumed later. Answer on stdin, use `plait chat "
            f'{shlex.quote(agent_file)}`, or set checkpointer = "sqlite:///agent.db".\n'
        )
        return
    example = json.dumps(_example_answer(interrupts), ensure_ascii=False)
    out.write(
        f"The run is paused on thread {thread!r}. Answer with\n"
        f"  plait run {shlex.quote(agent_file)} --thread {shlex.quote(str(thread))} "
        f"--resume {shlex.quote(example)}\n"
    )
    from plait.answerers import answerer_for

    helps = {answerer_for(item.value).resume_help() for item in interrupts}
    for line in sorted(h for h in helps if h):
        out.write(line + "\n")


def _print_pending(interrupts: Sequence[Interrupt], out: IO[str]) -> None:
    from plait.answerers import answerer_for

    for item in interrupts:
        for line in answerer_for(item.value).waiting(item.value, item.id):
            out.write(line + "\n")


# --------------------------------------------------------------------------- chat


def answer_interrupts(interrupts: Sequence[Interrupt], asker: Asker) -> dict[str, Any]:
    """The ``resume`` value for every pending interrupt, keyed by interrupt id, each asked
    by the answerer that claims it (``plait.answerers``)."""
    from plait.answerers import answerer_for

    return {item.id: answerer_for(item.value).ask(item.value, asker) for item in interrupts}


def cmd_chat(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait.types import Command

    spec = _load(args.agent, args.model)
    overrides: dict[str, Any] = {}
    if spec.checkpointer is None:
        overrides["checkpointer"] = "memory"  # a chat is one thread: it needs its history
    from plait._console import Console, Spinner

    console = Console(out, Spinner(err), prefix="agent> ")
    first, last = console.middleware()
    agent = spec.build(first=first, last=last, **overrides)
    thread = args.thread or f"chat-{_new_hex()}"
    from plait.answerers import Asker

    asker = Asker(sys.stdin, out)
    out.write(
        f"Chatting with {args.agent} on thread {thread}. /help for commands, "
        "/exit or Ctrl-D to leave.\n"
    )
    pending = agent.get_interrupts(thread) if args.thread else []
    if pending:  # left paused by Ctrl-D at an approval, or by `plait run`: answer it first
        out.write(f"Thread {thread} is paused waiting for you:\n")
    while True:
        try:
            if not pending:
                line = asker.ask("\nyou> ").strip()
                if not line:
                    continue
                if line.startswith("/"):
                    if _chat_command(line, agent, thread, out):
                        return EXIT_OK
                    continue
                result = _turn(agent, line, thread, spec.recursion_limit)
                pending = result.interrupts
            while pending:
                answers = answer_interrupts(pending, asker)
                result = _turn(agent, Command(resume=answers), thread, spec.recursion_limit)
                pending = result.interrupts
        except EOFError:
            if agent.get_interrupts(thread):
                out.write(f"\nNo answer given; thread {thread} stays paused.\n")
            else:
                out.write("\n")
            return EXIT_OK
        except PlaitError as exc:
            if isinstance(exc, ThreadBusyError):
                exc = _busy(exc, args.agent, thread)
            err.write(f"plait: error: {_one_line(exc)}\n")
            pending = agent.get_interrupts(thread)  # a refused answer: ask again
            continue
        answer = _final_answer(result, console.shown)
        if answer is not None:
            out.write(f"agent> {answer}\n")


_CHAT_HELP = """Commands (handled here, never sent to the model):
  /help            this list
  /thread          the thread's id (`plait chat FILE --thread ID` comes back to it)
  /history         the thread's messages so far
  /exit, /quit     leave (Ctrl-D too)
"""


def _chat_command(line: str, agent: Agent, thread: str, out: IO[str]) -> bool:
    """Handle a ``/command`` typed in a chat; True means leave."""
    command = line.split()[0].lower()
    if command in ("/exit", "/quit"):
        return True
    if command == "/help":
        out.write(_CHAT_HELP)
    elif command == "/thread":
        out.write(f"thread {thread}\n")
    elif command == "/history":
        from plait._text import short

        messages = agent.get_state(thread).get("messages", [])
        for message in messages:
            out.write(f"  {message.type}: {short(message.text) or '(tool calls)'}\n")
        if not messages:
            out.write("  (no messages yet)\n")
    else:
        out.write(f"unknown command {command}; /help lists them\n")
    return False


def _turn(
    agent: Agent, agent_input: Any, thread: str | None, limit: int, *, live: bool = True
) -> AgentResult:
    """One run; ``live`` streams it, so the display writes the model's words as they come."""
    if not live:
        return agent.invoke(agent_input, thread_id=thread, recursion_limit=limit)
    events = agent.stream(agent_input, mode="messages", thread_id=thread, recursion_limit=limit)
    for _ in events:
        pass  # the display middleware writes what it sees
    assert events.result is not None
    return events.result


# --------------------------------------------------------------------------- plugins


def cmd_plugins(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait._plugin_list import list_plugins

    return list_plugins(out, as_json=args.json, verbose=args.verbose)


# --------------------------------------------------------------------------- new-plugin


def cmd_new_plugin(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait.scaffold import create_plugin

    created = create_plugin(args.name, Path(args.dir))
    out.write(f"Created {created.root}\n")
    for path in created.files:
        out.write(f"  {path.relative_to(created.root)}\n")
    where = str(created.root)
    if not created.root.is_absolute() and not where.startswith("."):
        where = f".{os.sep}{where}"  # else pip reads a bare folder name as a PyPI project
    out.write(
        "\nNext:\n"
        f"  pip install -e {shlex.quote(where + '[test]')}\n"
        f"  pytest {shlex.quote(os.path.join(where, 'tests'))}\n"
        "then enable it in an agent file:\n\n"
        "  [[middleware]]\n"
        f'  use = "{created.entry_point}"\n'
    )
    return EXIT_OK


# --------------------------------------------------------------------------- main


def build_parser(*, plugin_commands: bool = True) -> argparse.ArgumentParser:
    """The ``plait`` parser; ``plugin_commands`` adds the ``plait.commands`` of plugins
    (which loads their parser modules)."""
    parser = argparse.ArgumentParser(
        prog="plait", description="Run plait agents and manage plait plugins."
    )
    from plait import __version__

    parser.add_argument("--version", action="version", version=f"plait {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser("run", help="run an agent file once", description="Run an agent file.")
    run.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    run.add_argument("prompt", metavar="PROMPT", nargs="?", help="the message (default: stdin)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--thread", metavar="ID", help="continue this thread (needs a checkpointer)")
    run.add_argument("--resume", metavar="JSON", help="answer the thread's pending interrupt")
    run.add_argument("--model", metavar="ID", help="use this model id instead of the file's")
    run.add_argument(
        "--record", metavar="FILE", help="write every model call and tool run to FILE (JSONL)"
    )
    run.add_argument(
        "--replay", metavar="FILE", help="answer model calls and tool runs from a --record FILE"
    )
    run.add_argument(
        "--replay-mode",
        choices=("strict", "lenient"),
        default="strict",
        help="strict: a call must ask what was recorded (default); lenient: match by position",
    )
    run.set_defaults(func=cmd_run)

    chat = sub.add_parser("chat", help="talk with an agent", description="Chat with an agent.")
    chat.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    chat.add_argument("--thread", metavar="ID", help="the thread to use (default: a new one)")
    chat.add_argument("--model", metavar="ID", help="use this model id instead of the file's")
    chat.set_defaults(func=cmd_chat)

    plugins = sub.add_parser(
        "plugins",
        help="list installed plugins",
        description="List installed plugins (from their metadata, without importing them).",
    )
    plugins.add_argument(
        "--json", action="store_true", help="print the list as JSON, with middleware options"
    )
    plugins.add_argument(
        "-v", "--verbose", action="store_true", help="show each middleware's options"
    )
    plugins.set_defaults(func=cmd_plugins)

    new = sub.add_parser(
        "new-plugin",
        help="scaffold a middleware plugin distribution",
        description="Create plait-NAME: a middleware plugin with its entry point and a test.",
    )
    new.add_argument("name", metavar="NAME", help="the plugin's name, e.g. shout")
    new.add_argument("--dir", default=".", metavar="D", help="where to create it (default: .)")
    new.set_defaults(func=cmd_new_plugin)
    from plait._cli_threads import add_parsers

    add_parsers(sub)
    if plugin_commands:
        _plugin_commands(sub)
    return parser


def _plugin_commands(sub: Any) -> None:
    """Subcommands from plugins: each ``plait.commands`` entry point names a function
    that adds its parser with ``sub.add_parser(name, ...)`` and sets ``func``
    (``func(args, out, err) -> exit code``), like the built-in commands above."""
    from plait import _entrypoints

    for name, ep in sorted(_entrypoints.available("plait.commands").items()):
        if name in sub.choices:
            continue  # a built-in command is never replaced
        try:
            configure = ep.load()
            configure(sub)
        except Exception as exc:
            if os.environ.get("PLAIT_DEBUG"):
                raise
            sys.stderr.write(f"plait: command {name!r} ({ep.value}) not loaded: {exc}\n")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


@contextmanager
def _reported(err: IO[str]) -> Iterator[list[int]]:
    code = [EXIT_OK]
    try:
        yield code
    except BrokenPipeError:
        # The reader went away (``plait run ... | head``): stop quietly, as cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code[0] = EXIT_ERROR
    except KeyboardInterrupt:
        err.write("\nplait: interrupted\n")
        code[0] = EXIT_INTERRUPTED
    except PlaitError as exc:
        if os.environ.get("PLAIT_DEBUG"):
            raise
        from plait.recording import ReplayError

        # a replay mismatch is a diff, whose lines are the point
        text = str(exc) if isinstance(exc, ReplayError) else _one_line(exc)
        err.write(f"plait: error: {text}\n")
        code[0] = EXIT_ERROR
    except Exception as exc:
        if os.environ.get("PLAIT_DEBUG"):
            raise
        err.write(
            f"plait: error: {type(exc).__name__}: {_one_line(exc)} "
            "(set PLAIT_DEBUG=1 for the traceback)\n"
        )
        code[0] = EXIT_ERROR


def _trace_to(stream: IO[str]) -> None:
    """``PLAIT_TRACE=1``: the ``plait.trace`` log (every hook call) goes to ``stream``."""
    import logging

    logger = logging.getLogger("plait.trace")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("trace: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _subparsers_action(parser: argparse.ArgumentParser) -> Any:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise AssertionError("the plait parser has subcommands")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return dict(_subparsers_action(parser).choices)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``plait`` console script; returns the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    # A built-in command needs no plugin's parser: its words are read without loading one.
    first = next((word for word in words if not word.startswith("-")), None)
    parser = build_parser(plugin_commands=False)
    if first not in _subparsers(parser):
        _plugin_commands(_subparsers_action(parser))
    args, rest = parser.parse_known_args(words)
    if rest:
        # Options after the prompt, or between the file and the prompt ("run a.toml --model
        # X hi"), which plain parse_args refuses: parse the subcommand's words intermixed.
        subparser = _subparsers(parser)[args.command]
        command = args.command
        args = subparser.parse_intermixed_args(words[words.index(command) + 1 :])
        args.command = command
    out, err = sys.stdout, sys.stderr
    if os.environ.get("PLAIT_TRACE"):
        _trace_to(err)
    with _reported(err) as code:
        code[0] = args.func(args, out, err)
    return code[0]


if __name__ == "__main__":
    sys.exit(main())
