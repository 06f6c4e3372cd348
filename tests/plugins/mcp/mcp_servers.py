"""Real MCP servers for the plugin's tests (a module of its own, not ``conftest``: another
test directory's ``from conftest import`` must not find these): ``mcp-server-time`` (from PyPI) and
``demo_server.py`` (written with the SDK's ``MCPServer``) over stdio, and the demo server
over streamable HTTP on loopback, each in a subprocess of its own."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEMO = str(Path(__file__).with_name("demo_server.py"))


def time_server(**extra: Any) -> dict[str, Any]:
    return {
        "name": "time",
        "command": sys.executable,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        **extra,
    }


def demo_stdio(**extra: Any) -> dict[str, Any]:
    return {"name": "demo", "command": sys.executable, "args": [DEMO, "stdio"], **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HTTPServer:
    """The demo server over streamable HTTP; ``restart()`` kills it and starts it again on
    the same port (its sessions are gone)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, DEMO, "http", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the demo HTTP server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()
