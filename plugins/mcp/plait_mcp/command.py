"""The ``plait mcp-serve`` command's parser (entry point in ``plait.commands``); light on
purpose: ``plait`` loads it on every invocation, the MCP SDK only when the command runs."""

from __future__ import annotations

import argparse
from typing import IO, Any


def mcp_serve_command(sub: Any) -> None:
    parser = sub.add_parser(
        "mcp-serve",
        help="serve an agent file's tools and the agent over MCP (stdio)",
        description="Serve an agent file's tools, and the agent as one tool, over MCP (stdio).",
    )
    parser.add_argument("agent", metavar="AGENT.toml", help="the agent file")
    parser.add_argument("--model", metavar="ID", help="use this model id instead of the file's")
    parser.add_argument(
        "--agent-tool", metavar="NAME", help="the agent's tool name (default: the agent's name)"
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from plait_mcp.serve import serve_file

    return serve_file(args.agent, model=args.model, agent_tool=args.agent_tool, err=err)
