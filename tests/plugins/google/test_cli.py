"""``plait run`` with a ``google:`` model: the hello example's agent file, its model
swapped on the command line, against the recorded Gemini tool-call turn and answer served
on loopback (``GOOGLE_GEMINI_BASE_URL``; a keyless server needs no key)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import recorded
from replay_server import ReplayServer, Reply

from plait_env import outside_env

REPO = Path(__file__).resolve().parents[3]
pytestmark = recorded.needs(recorded.GEMINI)


def test_plait_run_an_agent_file_on_gemini(server: ReplayServer) -> None:
    interactions = recorded.interactions(recorded.GEMINI)
    for name in ("gem_function_call", "gem_function_response_roundtrip"):
        response = interactions[name]["response"]
        server.reply(Reply(response["status"], response["body"].encode(), response["headers"]))
    env = outside_env()
    env["GOOGLE_GEMINI_BASE_URL"] = server.url
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "plait.cli",
            "run",
            str(REPO / "examples" / "hello.toml"),
            "--model",
            "google:gemini-2.5-flash",
            "What's the weather in Paris?",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "The weather in Paris is sunny with a temperature of 22C."
    )
    first, second = server.requests
    # plait run streams; the recorded answers are whole JSON bodies, read as one chunk each.
    assert (
        first.path
        == second.path
        == ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    )
    (declaration,) = first.body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "get_weather"
    result = second.body["contents"][-1]["parts"][0]["functionResponse"]
    assert (result["name"], result["response"]) == (
        "get_weather",
        {"output": "Paris: sunny, 21 °C"},
    )
