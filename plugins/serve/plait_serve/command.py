"""The ``plait serve`` command (entry point in ``plait.commands``); light on purpose:
``plait`` loads this module on every invocation, Starlette and uvicorn only when the
command runs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import IO, Any

_ENV = "PLAIT_SERVE_ARGS"  # how --reload hands the options to the app factory


def serve_command(sub: Any) -> None:
    parser = sub.add_parser(
        "serve",
        help="serve an agent file over HTTP (AG-UI, OpenAI-compatible)",
        description=(
            "Serve an agent file over HTTP. Off loopback it needs API keys "
            "(PLAIT_SERVE_KEYS or --keys-file); with keys, every request needs "
            "'Authorization: Bearer <key>'."
        ),
    )
    _arguments(parser)
    parser.add_argument(
        "--ui", action="store_true", help="also serve the development page at / (plait dev)"
    )
    parser.set_defaults(func=_run, verb="serve")


def dev_command(sub: Any) -> None:
    parser = sub.add_parser(
        "dev",
        help="serve an agent file with the development page at / (chat, approvals, timeline)",
        description=(
            "Serve an agent file on loopback with a web page at /: threads, a chat that "
            "streams, approvals, the state after each step, the run timeline and time "
            "travel. The same server as 'plait serve --ui'."
        ),
    )
    _arguments(parser)
    parser.set_defaults(func=_run, ui=True, verb="dev")


def _arguments(parser: Any) -> None:
    parser.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    parser.add_argument("--model", metavar="ID", help="use this model id instead of the file's")
    parser.add_argument("--keys-file", metavar="PATH", help="API keys, one per line")
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to call the server (repeatable; none by default)",
    )
    parser.add_argument(
        "--keep-events",
        type=_count,
        metavar="N",
        help="keep about the last N run-log events of each thread: older finished runs' "
        "events are forgotten (default: all are kept)",
    )
    parser.add_argument(
        "--sweep-every",
        type=_seconds,
        metavar="SECONDS",
        help="seconds between sweeps for the threads of stateless runs a stopped server "
        "left (default: plait_serve.SWEEP_EVERY, a minute; 0: only as the server starts)",
    )
    parser.add_argument(
        "--reload", action="store_true", help="restart when the agent file or its tools change"
    )


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"expected a port number from 1 to 65535, got {text!r}")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of events, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return seconds


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "agent": str(Path(args.agent).resolve()),
        "model": args.model,
        "keys_file": args.keys_file,
        "cors_origins": list(args.cors_origin),
        "ui": bool(args.ui),
        "keep_events": args.keep_events,
        "sweep_every": args.sweep_every,
    }


def build(options: dict[str, Any]) -> Any:
    """The app for ``options`` (what ``_options`` made)."""
    from plait.agentfile import load_agent
    from plait_serve import app

    overrides = {"model": options["model"]} if options.get("model") else {}
    if options.get("ui"):
        # The kernel traces hook calls (the plait.trace log) for agents built with it on:
        # the page's timeline shows each hook call from it.
        os.environ.setdefault("PLAIT_TRACE", "1")
    agent = load_agent(options["agent"], **overrides)
    sweep = options.get("sweep_every")  # None: app's default; 0: no sweep after the start's
    more: dict[str, Any] = {} if sweep is None else {"sweep_every": sweep or None}
    return app(
        agent,
        keys_file=options.get("keys_file"),
        cors_origins=options["cors_origins"],
        ui=bool(options.get("ui")),
        keep_events=options.get("keep_events"),
        **more,
    )


def reload_factory() -> Any:
    """The app factory uvicorn's reloader imports in each fresh process."""
    import json

    return build(json.loads(os.environ[_ENV]))


def _run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    import json

    import uvicorn

    from plait.errors import PlaitError
    from plait_serve._auth import is_loopback, load_keys

    options = _options(args)
    try:
        keys = load_keys(keys_file=args.keys_file)
        if not keys and not is_loopback(args.host):
            err.write(
                f"plait {args.verb}: error: refusing to serve on {args.host} without API keys: set "
                "PLAIT_SERVE_KEYS or pass --keys-file (each key owns the threads it makes)\n"
            )
            return 2
        # With --reload the app is built in a child process; building it here first
        # reports a broken agent file as one line, not a child's traceback.
        application = build(options)
    except PlaitError as exc:
        err.write(f"plait {args.verb}: error: {' '.join(str(exc).split())}\n")
        return 1
    guard = "API keys required" if keys else "no keys: loopback only"
    # an IPv6 address is bracketed in a URL, or its colons read as the port's
    host = f"[{args.host}]" if ":" in args.host else args.host
    page = f"; page: http://{host}:{args.port}/" if options["ui"] else ""
    err.write(
        f"plait {args.verb}: {args.agent} on http://{host}:{args.port} "
        f"(AG-UI: POST /ag-ui; OpenAI-compatible: /v1; {guard}{page})\n"
    )
    if options["ui"] and keys:
        # The page sends no key: every call it makes would be a 401, with nothing on
        # the page saying why (a PLAIT_SERVE_KEYS left exported is the usual cause).
        err.write(
            f"plait {args.verb}: warning: the page sends no API key, so with keys configured "
            "(PLAIT_SERVE_KEYS or --keys-file) each of its calls is refused (401); "
            "unset them to use the page on loopback\n"
        )
    err.flush()
    if args.reload:
        application.state.server.agent.close()
        os.environ[_ENV] = json.dumps(options)
        folder = str(Path(options["agent"]).parent)
        uvicorn.run(
            "plait_serve.command:reload_factory",
            factory=True,
            host=args.host,
            port=args.port,
            reload=True,
            reload_dirs=[folder],
            reload_includes=["*.py", "*.toml"],
            log_level="warning",
        )
    else:
        uvicorn.run(application, host=args.host, port=args.port, log_level="warning")
    return 0
