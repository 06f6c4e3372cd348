"""``plait serve --reload``: the server restarts when the agent file changes, serving the
changed agent (a real subprocess, polled over HTTP)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from serve_helpers import ROOT


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def agent_name(url: str, deadline: float) -> str | None:
    while time.monotonic() < deadline:
        try:
            return str(httpx.get(f"{url}/healthz", timeout=1).json()["agent"])
        except (httpx.TransportError, ValueError):
            time.sleep(0.2)
    return None


def test_reload_serves_the_changed_agent_file(tmp_path: Path) -> None:
    # plait-serve depends on watchfiles (uvicorn's StatReload sees only .py files); a
    # development environment installed with --no-deps may lack it.
    pytest.importorskip("watchfiles")
    for name in ("support.toml", "support_tools.py"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    agent_file = tmp_path / "support.toml"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_SERVE_KEYS"}
    process = subprocess.Popen(
        [sys.executable, "-m", "plait", "serve", str(agent_file), "--port", str(port), "--reload"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert agent_name(url, time.monotonic() + 60) == "agent"
        text = agent_file.read_text(encoding="utf-8")
        agent_file.write_text(text.replace("[agent]\n", '[agent]\nname = "support"\n', 1))
        deadline = time.monotonic() + 60
        while agent_name(url, deadline) != "support":
            assert time.monotonic() < deadline, "the server did not reload the agent file"
            time.sleep(0.2)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_bad_options_are_one_line_errors_even_with_reload() -> None:
    agent_file = str(ROOT / "examples" / "support.toml")
    cases = [
        (
            ["--port", "99999"],
            2,
            "argument --port: expected a port number from 1 to 65535, got '99999'",
        ),
        (
            ["--keep-events", "0"],
            2,
            "argument --keep-events: expected a positive number of events, got '0'",
        ),
        (
            ["--sweep-every", "-1"],
            2,
            "argument --sweep-every: expected a number of seconds >= 0, got '-1'",
        ),
        (
            ["--reload", "--cors-origin", "*"],
            1,
            "plait serve: error: plait-serve: cors_origins: expected explicit origins such as "
            "'https://app.example.com', got '*'\n",
        ),
        (
            ["--keys-file", "/nonexistent/keys"],
            1,
            "plait serve: error: plait-serve: keys file '/nonexistent/keys' cannot be read: "
            "No such file or directory\n",
        ),
    ]
    for args, code, words in cases:
        done = subprocess.run(
            [sys.executable, "-m", "plait", "serve", agent_file, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == code, done.stderr
        assert words in done.stderr and "Traceback" not in done.stderr


def test_plait_dev_with_keys_warns_that_the_page_will_be_refused() -> None:
    """The page sends no key: ``plait dev`` under an exported PLAIT_SERVE_KEYS says so at
    start, rather than serving a page whose every call is a silent 401."""
    port = free_port()
    env = {**os.environ, "PLAIT_SERVE_KEYS": "dev-key-0123456789abcdef"}
    agent_file = str(ROOT / "examples" / "support.toml")
    process = subprocess.Popen(
        [sys.executable, "-m", "plait", "dev", agent_file, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert agent_name(url, time.monotonic() + 60) == "agent"
        assert httpx.get(url + "/").status_code == 200  # the page itself is served
        assert httpx.post(url + "/threads/search", json={}).status_code == 401
    finally:
        process.terminate()
        _, err = process.communicate(timeout=20)
    assert (
        "plait dev: warning: the page sends no API key, so with keys configured "
        "(PLAIT_SERVE_KEYS or --keys-file) each of its calls is refused (401); "
        "unset them to use the page on loopback\n"
    ) in err


def test_the_start_line_gives_an_ipv6_servers_url_as_a_browser_takes_it() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_SERVE_KEYS"}
    agent_file = str(ROOT / "examples" / "support.toml")
    process = subprocess.Popen(
        [sys.executable, "-m", "plait", "dev", agent_file, "--host", "::1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        url = f"http://[::1]:{port}"
        assert line.startswith(f"plait dev: {agent_file} on {url} (AG-UI: POST /ag-ui;")
        assert line.endswith(f"; page: {url}/)\n")
        assert agent_name(url, time.monotonic() + 60) == "agent"  # the printed URL serves
    finally:
        process.terminate()
        process.communicate(timeout=20)
