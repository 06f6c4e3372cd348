"""The real AG-UI client, ``@ag-ui/client``'s ``HttpAgent`` under node, against a plait
server on examples/support.toml: ``runAgent()`` pauses at the refund's approval, a
second ``runAgent({resume})`` approves it, and a resume the interrupt does not allow
is refused with 409 (js/approval.mjs drives the client; js/package-lock.json pins it).

Skips only when js/node_modules is missing and ``PLAIT_REQUIRE_NODE`` is unset; CI sets
it and installs node and the client (``npm ci --prefix tests/plugins/serve/js``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from serve_helpers import Served

import plait

JS = Path(__file__).parent / "js"
REPO = Path(__file__).resolve().parents[3]
KEY = "node-client-key-0123456789"


def node_or_skip() -> str:
    node = shutil.which("node")
    if node and (JS / "node_modules" / "@ag-ui" / "client").is_dir():
        return node
    if os.environ.get("PLAIT_REQUIRE_NODE") == "1":
        pytest.fail(
            "PLAIT_REQUIRE_NODE=1 but node or tests/plugins/serve/js/node_modules is missing"
        )
    pytest.skip("node and @ag-ui/client are not installed (npm ci --prefix tests/plugins/serve/js)")


def test_http_agent_run_agent_with_an_approval_round_trip(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    node = node_or_skip()
    served = serve(support, keys=[KEY])
    done = subprocess.run(
        [node, str(JS / "approval.mjs"), served.url, KEY],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (interrupt,) = report["first"]["interrupts"]
    refund_call = report["first"]["newMessages"][-1]["toolCalls"][0]
    assert refund_call["function"]["name"] == "issue_refund"
    assert interrupt["toolCallId"] == refund_call["id"]
    assert interrupt["reason"] == "tool_approval"
    assert report["second"]["result"] == (
        "Refunded 25.00 EUR for order 1042. I will send the confirmation to [REDACTED_EMAIL]."
    )
    tool_message = report["second"]["newMessages"][0]
    assert tool_message == {
        "id": tool_message["id"],
        "toolCallId": refund_call["id"],
        "role": "tool",
        "content": "Refunded 25.00 EUR for order 1042.",
    }
    assert report["pendingAfter"] == []
    assert report["events"].count("RUN_STARTED") == 2 == report["events"].count("RUN_FINISHED")
    # The client's conversation is the server's thread, message for message.
    assert [m["id"] for m in report["messages"]] == [
        m.id for m in support.get_state("node-approval")["messages"]
    ]
    # The refused resume: one clear 409, and the other thread still paused at its refund.
    assert "HTTP 409" in report["refused"]
    assert "expected one of 'approve', 'edit', 'reject', got 'respond'" in report["refused"]
    assert [i["id"] for i in report["refusedPending"]] == [
        i.id for i in support.get_interrupts("node-refused")
    ]


def js_block(path: Path) -> str:
    """The one ```js block of ``path``."""
    (block,) = re.findall(r"^```js\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)
    return block


def run_js(node: str, code: str, url: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """``code`` (pointed at ``url``) as an ES module beside the installed client."""
    (folder / "node_modules").symlink_to(JS / "node_modules", target_is_directory=True)
    script = folder / "snippet.mjs"
    script.write_text(code.replace("http://127.0.0.1:8000", url), encoding="utf-8")
    return subprocess.run(
        [node, str(script)], capture_output=True, text=True, timeout=60, check=False, cwd=folder
    )


def test_the_docs_ag_ui_snippet_runs_as_written(
    serve: Callable[..., Served], support: plait.Agent, tmp_path: Path
) -> None:
    node = node_or_skip()
    served = serve(support, keys=["alice-key-0123456789abcdef"])
    done = run_js(node, js_block(REPO / "docs" / "serving.md"), served.url, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Refunded 25.00 EUR for order 1042.\n"
    assert support.get_interrupts("ticket-1") == []


def test_the_readme_ag_ui_snippet_runs_as_written(
    serve: Callable[..., Served], support: plait.Agent, tmp_path: Path
) -> None:
    node = node_or_skip()
    served = serve(support)
    done = run_js(node, js_block(REPO / "plugins" / "serve" / "README.md"), served.url, tmp_path)
    assert done.returncode == 0, done.stderr
    messages = support.get_state("t1")["messages"]
    assert messages[-1].text == "Refunded 25.00 EUR for order 1042."
