"""Thread and run ids holding ``/``, ``?``, ``#``, ``%``, spaces, non-ASCII or nothing
but dots go into URLs encoded (``urllib.parse.quote(id, safe="")``, dots as ``%2E``):
the ``Location`` and ``Content-Location`` the server gives lead back to the run, and
every route takes the encoded id back — with langgraph-sdk (which encodes its path
parameters so) and plain HTTP, on one key and on several."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from serve_helpers import Served, parse_sse, post_sse, run_input

import plait

KEY = "encoded-ids-key-0123456789"
OTHER = "encoded-ids-other-0123456789"
IDS = ["a/b", "q?x=1&y", "h#1", "50%25 off", "two words", "..", "ü/ß", "a%2Fb"]


def encoded(value: str) -> str:
    quoted = urllib.parse.quote(value, safe="")
    return "%2E" * len(quoted) if set(quoted) == {"."} else quoted


def echo_agent() -> plait.Agent:
    def brain(messages: list[Any], tools: Any) -> plait.AIMessage:
        return plait.AIMessage(f"heard: {[m.text for m in messages if m.type == 'human'][-1]}")

    return plait.create_agent(
        plait.ScriptedChatModel([brain] * 200), checkpointer="memory", name="echo"
    )


@pytest.mark.parametrize("keys", [[KEY], [KEY, OTHER]])
def test_ids_with_reserved_characters_round_trip_through_every_url(
    serve: Callable[..., Served], keys: list[str]
) -> None:
    served = serve(echo_agent(), keys=keys)
    lg = get_sync_client(url=served.url, api_key=KEY)
    for thread_id in IDS:
        assert lg.threads.create(thread_id=thread_id)["thread_id"] == thread_id
        answer = lg.runs.wait(thread_id, "echo", input={"messages": [f"in {thread_id}"]})
        assert answer["messages"][-1]["content"] == f"heard: in {thread_id}"  # type: ignore[call-overload, index]
        assert lg.threads.get(thread_id)["thread_id"] == thread_id
        assert lg.threads.get_state(thread_id)["checkpoint"]["thread_id"] == thread_id
        (run,) = lg.runs.list(thread_id)
        assert lg.runs.get(thread_id, run["run_id"])["thread_id"] == thread_id

    with served.client(KEY) as http:
        for thread_id in IDS:
            path = encoded(thread_id)
            streamed = http.post(
                f"/threads/{path}/runs/stream", json={"input": {"messages": ["again"]}}
            )
            assert streamed.status_code == 200, streamed.text
            (meta,) = [e for _, e in parse_sse(streamed.text) if "run_id" in e and "attempt" in e]
            location = f"/threads/{path}/runs/{meta['run_id']}/stream"
            assert streamed.headers["Location"] == location
            assert streamed.headers["Content-Location"] == location
            replay = http.get(location)  # the run again, from its start
            assert replay.status_code == 200, replay.text
            assert parse_sse(replay.text)[-1][1]["messages"][-1]["content"] == "heard: again"

            waited = http.post(f"/threads/{path}/runs/wait", json={"input": {"messages": ["w"]}})
            assert waited.status_code == 200, waited.text
            run = http.get(waited.headers["Content-Location"])
            assert run.status_code == 200, run.text
            assert run.json()["thread_id"] == thread_id and run.json()["status"] == "success"

            # AG-UI's and plait's own routes take the encoded id too.
            post_sse(http, "/ag-ui", run_input(thread_id, "agui-1", "over AG-UI"))
            again = parse_sse(http.get(f"/ag-ui/threads/{path}/stream?since=0").text)
            assert {e["threadId"] for _, e in again if "threadId" in e} == {thread_id}
            log = parse_sse(http.get(f"/plait/threads/{path}/events").text)
            assert [e["text"] for _, e in log if e["type"] == "run_finished"][-1] == (
                "heard: over AG-UI"
            )
            forked = http.post(
                f"/plait/threads/{path}/fork",
                json={"checkpoint_id": 1, "thread_id": f"{thread_id} fork"},
            )
            assert forked.json() == {
                "thread_id": f"{thread_id} fork",
                "forked_from": thread_id,
                "checkpoint_id": "1",
            }
            state = http.get(f"/threads/{encoded(thread_id + ' fork')}/state/1")
            assert state.status_code == 200, state.text
