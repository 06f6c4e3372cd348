"""Helpers for the plait-serve tests: a real uvicorn server on a loopback port serving
``plait_serve.app``, and readers of its server-sent events over real HTTP (httpx)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[3]
SUPPORT = ROOT / "examples" / "support.toml"


class Served:
    """``app`` served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app: Any) -> None:
        self.app = app
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def client(self, key: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=20, **kwargs)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def parse_sse(text: str) -> list[tuple[int | None, dict[str, Any]]]:
    """``(id, data)`` per server-sent event (``id`` None where the event has none)."""
    events: list[tuple[int | None, dict[str, Any]]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        seq: int | None = None
        data = []
        for line in block.split("\n"):
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("data: "):
                data.append(line[6:])
        events.append((seq, json.loads("\n".join(data))))
    return events


def run_input(thread: str, run: str, text: str | None = None, **extra: Any) -> dict[str, Any]:
    messages = [] if text is None else [{"id": f"u-{run}", "role": "user", "content": text}]
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


def post_sse(client: httpx.Client, path: str, body: Any) -> list[tuple[int | None, dict[str, Any]]]:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def approve(interrupt_id: str, *decisions: dict[str, Any]) -> list[dict[str, Any]]:
    payload = {"decisions": list(decisions) or [{"type": "approve"}]}
    return [{"interruptId": interrupt_id, "status": "resolved", "payload": payload}]
