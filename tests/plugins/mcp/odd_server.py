"""A bare-bones MCP server over stdio, JSON-RPC by hand (as servers not written with the
Python SDK are), listing whatever tools the ``ODD_TOOLS`` environment variable holds as
JSON (``[{"name": ..., "inputSchema": ...}]``), even ones no provider accepts, and
writing its process id to the file ``ODD_PID`` names."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

TOOLS = [
    {"name": t["name"], "description": "odd", "inputSchema": t["inputSchema"]}
    for t in json.loads(os.environ["ODD_TOOLS"])
]


def answer(request: dict[str, Any]) -> dict[str, Any]:
    method, params = request["method"], request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "odd", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": f"called {params['name']}"}]}
    return {}


def main() -> None:
    Path(os.environ["ODD_PID"]).write_text(str(os.getpid()))
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue  # a notification or a response
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


main()
