"""The development page's routes (``plait dev`` / ``plait serve --ui``): the page and its
two files from the package, same-origin only, the tools' schemas the edit form is made
from — and none of it without ``ui=True``. The page itself is driven in Chromium by
tests/dev_ui (opt-in: tox -e dev-ui)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from serve_helpers import SUPPORT, Served, approve, parse_sse, post_sse, run_input

import plait


def test_the_page_and_its_files_are_served_with_ui(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    with serve(support, ui=True).client() as client:
        page = client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert '<script src="/ui/app.js" defer></script>' in page.text
        # Nothing from another origin: no CDN, no inline script.
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "http" not in page.text.replace('name="viewport"', "")
        script = client.get("/ui/app.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert "/ag-ui" in script.text and "/threads/search" in script.text
        assert client.get("/ui/app.css").headers["content-type"].startswith("text/css")
        tools = {t["name"]: t for t in client.get("/plait/tools").json()}
        refund = tools["issue_refund"]["parameters"]
        assert refund["properties"]["amount"]["type"] == "number"
        assert refund["required"] == ["order_id", "amount"]


def test_without_ui_there_is_no_page(serve: Callable[..., Served], support: plait.Agent) -> None:
    with serve(support).client() as client:
        assert client.get("/").status_code == 404
        assert client.get("/ui/app.js").status_code == 404
        assert client.get("/plait/tools").status_code == 404


def test_with_keys_the_files_are_public_and_the_data_is_not(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, ui=True, keys=["k-one-0123456789"])
    with served.client() as anonymous:
        assert anonymous.get("/").status_code == 200
        assert anonymous.get("/ui/app.js").status_code == 200
        assert anonymous.get("/plait/tools").status_code == 401
    with served.client("k-one-0123456789") as keyed:
        assert keyed.get("/plait/tools").status_code == 200


def test_plait_dev_is_a_command() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_SERVE_KEYS"}
    done = subprocess.run(
        [sys.executable, "-m", "plait", "dev", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: plait dev ")
    assert "--ui " not in done.stdout  # the page is what dev is for
    broken = subprocess.run(
        [sys.executable, "-m", "plait", "dev", str(SUPPORT.with_name("nope.toml"))],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert broken.returncode == 1
    assert broken.stderr.startswith("plait dev: error:")


def _log(client: Any, thread: str) -> list[dict[str, Any]]:
    return [event for _, event in parse_sse(client.get(f"/plait/threads/{thread}/events").text)]


def test_with_ui_the_run_log_records_each_model_call_and_tool_run(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    with serve(support, ui=True).client() as client:
        text = "Hi, I'm jane@example.com. Please refund order 1042."
        paused = post_sse(client, "/ag-ui", run_input("t1", "r1", text))
        interrupt = paused[-1][1]["outcome"]["interrupts"][0]
        post_sse(client, "/ag-ui", run_input("t1", "r2", resume=approve(interrupt["id"])))
        log = _log(client, "t1")
        timeline = [e for e in log if e["type"] in ("model_call", "tool_run", "run_started")]
        kinds = [(e["type"], e.get("name")) for e in timeline]
        assert kinds == [
            ("run_started", None),
            ("model_call", None),
            ("tool_run", "lookup_order"),
            ("model_call", None),
            ("run_started", None),
            ("tool_run", "issue_refund"),
            ("model_call", None),
        ]
        first = timeline[1]
        # What the provider got: after pii, with the system prompt and the tools offered.
        assert first["messages"][0]["content"] == (
            "Hi, I'm [REDACTED_EMAIL]. Please refund order 1042."
        )
        assert first["system_prompt"].startswith("You are Acme's support agent.")
        assert first["tools"] == ["lookup_order", "issue_refund"]
        assert first["model"] == "scripted:support"
        assert first["duration"] >= 0 and first["usage"]["input_tokens"] > 0
        assert first["answer"]["tool_calls"][0]["name"] == "lookup_order"
        refund = timeline[5]
        assert refund["args"] == {"order_id": "1042", "amount": 25.0}
        assert refund["status"] == "success"
        assert refund["content"] == "Refunded 25.00 EUR for order 1042."


def test_without_ui_the_run_log_has_no_timeline(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    with serve(support).client() as client:
        post_sse(client, "/ag-ui", run_input("t1", "r1", "Where is order 2077?"))
        assert not [e for e in _log(client, "t1") if e["type"] in ("model_call", "tool_run")]


def test_fork_makes_a_thread_of_the_callers_from_a_step(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, ui=True, keys=["k-one-0123456789", "k-two-0123456789"])
    with served.client("k-one-0123456789") as one, served.client("k-two-0123456789") as two:
        post_sse(one, "/ag-ui", run_input("t1", "r1", "Where is order 2077?"))
        steps = one.post("/threads/t1/history", json={"limit": 100}).json()
        first = steps[-1]["checkpoint"]["checkpoint_id"]
        forked = one.post("/plait/threads/t1/fork", json={"checkpoint_id": first})
        assert forked.status_code == 200, forked.text
        new = forked.json()["thread_id"]
        assert forked.json()["forked_from"] == "t1"
        state = one.get(f"/threads/{new}").json()
        assert [m["type"] for m in state["values"]["messages"]] == ["human"]
        assert state["metadata"] == {"forked_from": "t1", "checkpoint_id": first}
        # The fork runs on from there; the original thread is as it was.
        post_sse(one, "/ag-ui", run_input(new, "r2", "Where is order 1042?"))
        assert len(one.get("/threads/t1").json()["values"]["messages"]) == 4
        # Another key sees neither; a step the thread does not have is a 404 that says so.
        assert two.post("/plait/threads/t1/fork", json={"checkpoint_id": first}).status_code == 404
        assert two.get(f"/threads/{new}").status_code == 404
        missing = one.post("/plait/threads/t1/fork", json={"checkpoint_id": 999})
        assert missing.status_code == 404
        assert "has no step 999" in missing.json()["error"]["message"]
        bad = one.post("/plait/threads/t1/fork", json={"checkpoint_id": "latest"})
        assert bad.status_code == 422
        assert bad.json()["error"]["message"] == (
            "checkpoint_id: expected a step number, got 'latest'"
        )
