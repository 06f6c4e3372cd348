"""An answer the model did not stream still reaches every served stream as text: a
``response_cache`` hit (the model is never asked; a second call of the scripted model
would fail) and a ``wrap_model_call`` hook that answers itself, read by the official
``openai`` client (streamed deltas), ``langgraph-sdk`` (messages-tuple) and AG-UI
(TEXT_MESSAGE_CONTENT)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from langgraph_sdk import get_sync_client
from serve_helpers import Served, post_sse, run_input

import plait
from plait_response_cache import ResponseCacheMiddleware

KEY = "unstreamed-client-key-0123456789"
CACHED = "Words from the cache."


def cached_agent() -> plait.Agent:
    """One scripted answer: every later run of the same question is a cache hit."""
    return plait.create_agent(
        plait.ScriptedChatModel([CACHED]),
        middleware=[ResponseCacheMiddleware(url="memory")],
        checkpointer="memory",
        name="cached",
    )


def hooked_agent() -> plait.Agent:
    @plait.wrap_model_call
    def answer(request: plait.ModelRequest, handler: Any) -> Any:
        return plait.AIMessage("Answered by a hook.")

    return plait.create_agent(
        plait.ScriptedChatModel([]), middleware=[answer], checkpointer="memory", name="hooked"
    )


def openai_text(served: Served, model: str) -> str:
    with openai.OpenAI(base_url=served.url + "/v1", api_key=KEY, max_retries=0) as api:
        stream = api.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Same question"}], stream=True
        )
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def langgraph_text(served: Served, model: str) -> str:
    lg = get_sync_client(url=served.url, api_key=KEY)
    thread = lg.threads.create()["thread_id"]
    ask = {"messages": [{"role": "user", "content": "Same question"}]}
    parts = lg.runs.stream(thread, model, input=ask, stream_mode="messages-tuple")
    return "".join(
        p.data[0]["content"]
        for p in parts
        if p.event == "messages" and p.data[0]["type"] in ("AIMessageChunk", "ai")
    )


def ag_ui_text(served: Served, thread: str) -> str:
    with served.client(KEY) as http:
        events = post_sse(http, "/ag-ui", run_input(thread, f"run-{thread}", "Same question"))
    return "".join(e["delta"] for _, e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


@pytest.mark.parametrize("read", [openai_text, langgraph_text], ids=["openai", "langgraph"])
def test_a_cached_answer_streams_its_text(
    serve: Callable[..., Served], read: Callable[[Served, str], str]
) -> None:
    served = serve(cached_agent(), keys=[KEY])
    assert read(served, "cached") == CACHED  # the model answers, the cache keeps it
    assert read(served, "cached") == CACHED  # a hit: the scripted model has nothing left
    assert ag_ui_text(served, "t-ag-ui") == CACHED


@pytest.mark.parametrize("read", [openai_text, langgraph_text], ids=["openai", "langgraph"])
def test_a_hooks_answer_streams_its_text(
    serve: Callable[..., Served], read: Callable[[Served, str], str]
) -> None:
    served = serve(hooked_agent(), keys=[KEY])
    assert read(served, "hooked") == "Answered by a hook."
    assert ag_ui_text(served, "t-ag-ui") == "Answered by a hook."
