"""The real AG-UI client, ``@ag-ui/client``'s ``HttpAgent`` under node, against a plait
server on examples/support.toml: ``runAgent()`` pauses at the refund's approval, a
second ``runAgent({resume})`` approves it, and a resume the interrupt does not allow
is refused with 409 (js/approval.mjs drives the client; js/package-lock.json pins it).

Skips only when js/node_modules is missing and ``PLAIT_REQUIRE_NODE`` is unset; CI sets
it and installs node and the client (``npm ci --prefix tests/plugins/serve/js``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from serve_helpers import Served

import plait

JS = Path(__file__).parent / "js"
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
