"""No API key leaves a provider through its errors: servers that fail by echoing the key
(in a stream's error event, a malformed event, an error body, a body that is not JSON)
and every place the failure then reaches — the error's text, repr and traceback with its
chain, log records, a SQLite checkpoint (through a tool's error) and ``plait run``'s
output — are scanned for it."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replay_server import ReplayServer, Reply

import plait
from plait.errors import ProviderError
from plait.messages import AIMessage, HumanMessage, ToolCall
from plait.models.openai import OpenAIChatModel
from plait.testing import ScriptedChatModel
from plait_anthropic import AnthropicChatModel
from plait_env import outside_env
from plait_google import GoogleChatModel
from plait_openai_responses import OpenAIResponsesModel

KEY = "sk-live-0123456789abcdefLEAKCHECK"
"""Key-shaped, so it would be caught by pattern too; the exact key is what is searched."""
BARE_KEY = "plainkey0123456789LEAK"
"""Not key-shaped: only the exact-key redaction can catch this one."""


def _sse(*events: tuple[str, str]) -> Reply:
    text = "".join(f"event: {name}\ndata: {data}\n\n" for name, data in events)
    return Reply(200, b"", {"content-type": "text/event-stream"}, pieces=(text.encode(),))


def failures(key: str) -> dict[str, tuple[str, Callable[[], Reply], bool]]:
    """name -> (provider, the failing reply, whether it is streamed)."""
    echo = json.dumps(f"invalid key {key} for this request")
    start = json.dumps(
        {
            "type": "message_start",
            "message": {"id": "m", "model": "c", "content": [], "usage": {"input_tokens": 1}},
        }
    )
    return {
        "openai-stream-error": (
            "openai",
            lambda: _sse(("message", json.dumps({"error": {"message": f"bad {key}"}}))),
            True,
        ),
        "openai-malformed-event": (
            "openai",
            lambda: _sse(("message", '{"choices": [' + echo)),
            True,
        ),
        "openai-401": (
            "openai",
            lambda: Reply(401, json.dumps({"error": {"message": f"key {key}"}}).encode()),
            False,
        ),
        "openai-not-json": ("openai", lambda: Reply(200, f"<html>{key}</html>".encode()), False),
        "anthropic-error-event": (
            "anthropic",
            lambda: _sse(
                ("message_start", start),
                ("error", json.dumps({"type": "error", "error": {"message": echo}})),
            ),
            True,
        ),
        "anthropic-malformed-event": (
            "anthropic",
            lambda: _sse(("message_start", start), ("content_block_start", "{" + echo)),
            True,
        ),
        "anthropic-error-in-200": (
            "anthropic",
            lambda: Reply(
                200, json.dumps({"error": {"type": "api_error", "message": echo}}).encode()
            ),
            False,
        ),
        "anthropic-500": (
            "anthropic",
            lambda: Reply(500, json.dumps({"error": {"message": echo}}).encode()),
            False,
        ),
        "responses-error-event": (
            "openai-responses",
            lambda: _sse(("error", json.dumps({"type": "error", "message": f"bad {key}"}))),
            True,
        ),
        "responses-failed-event": (
            "openai-responses",
            lambda: _sse(
                (
                    "response.failed",
                    json.dumps(
                        {
                            "type": "response.failed",
                            "response": {"status": "failed", "error": {"message": echo}},
                        }
                    ),
                )
            ),
            True,
        ),
        "responses-malformed-event": (
            "openai-responses",
            lambda: _sse(("response.created", '{"response": ' + echo)),
            True,
        ),
        "responses-failed-in-200": (
            "openai-responses",
            lambda: Reply(
                200,
                json.dumps({"output": [], "status": "failed", "error": {"message": echo}}).encode(),
            ),
            False,
        ),
        "responses-401": (
            "openai-responses",
            lambda: Reply(401, json.dumps({"error": {"message": f"key {key}"}}).encode()),
            False,
        ),
    }


CASES = [(key, name) for key in (KEY, BARE_KEY) for name in failures(key)]


def model_for(provider: str, server: ReplayServer, key: str) -> Any:
    if provider == "openai-responses":
        return OpenAIResponsesModel("gpt-5", api_key=key, base_url=server.url + "/v1")
    if provider == "openai":
        return OpenAIChatModel("gpt-4o", api_key=key, base_url=server.url + "/v1")
    return AnthropicChatModel("claude-sonnet-4-5", api_key=key, base_url=server.url)


def call(model: Any, streamed: bool) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        if streamed:
            list(model.stream([HumanMessage("hi")]))
        else:
            model.invoke([HumanMessage("hi")])
    return caught.value


def everything_said(error: BaseException) -> str:
    """The error as a user, a log or a trace would see it, its whole chain included."""
    return "\n".join(
        [str(error), repr(error), *traceback.format_exception(error), repr(error.args)]
    )


@pytest.mark.parametrize(("key", "name"), CASES)
def test_provider_errors_never_carry_the_key(
    key: str, name: str, server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    provider, reply, streamed = failures(key)[name]
    model = model_for(provider, server, key)
    assert server.requests == []
    with caplog.at_level(logging.DEBUG):
        server.reply(reply())
        error = call(model, streamed)
    assert server.last.headers.get("authorization", server.last.headers.get("x-api-key", ""))
    assert key in json.dumps(server.last.headers)  # the key did go out, to the server
    said = everything_said(error)
    assert key not in said
    assert "[REDACTED]" in said
    assert error.__context__ is None and error.__cause__ is None
    logged = "\n".join(r.getMessage() + str(r.exc_text or "") for r in caplog.records)
    assert key not in logged


def _vertex_with_a_token(server: ReplayServer) -> Any:
    # an OAuth token, as Vertex AI takes one (no api_key)
    return GoogleChatModel(
        "gemini-2.5-flash",
        vertex=True,
        project="p",
        base_url=server.url,
        headers={"Authorization": f"Bearer {BARE_KEY}"},
    )


def _azure_header(server: ReplayServer) -> Any:
    # Azure OpenAI's own header, beside a key the gateway ignores
    return OpenAIChatModel(
        "gpt-4.1",
        api_key="unused-key-0000",
        base_url=server.url + "/v1",
        headers={"api-key": BARE_KEY},
    )


@pytest.mark.parametrize("make", [_vertex_with_a_token, _azure_header])
def test_a_credential_given_in_headers_is_redacted_like_the_key(
    make: Callable[[ReplayServer], Any], server: ReplayServer
) -> None:
    """A model reached with a credential in ``headers`` instead of ``api_key``: a server
    echoing it put it in the error's text."""
    model = make(server)
    body = {"error": {"code": 401, "message": f"bad token {BARE_KEY}", "status": "X"}}
    server.reply(Reply(401, json.dumps(body).encode()))
    error = call(model, False)
    assert BARE_KEY in json.dumps(server.last.headers)  # it went out, to the server
    said = everything_said(error)
    assert BARE_KEY not in said
    assert "bad token [REDACTED]" in str(error)


def test_a_password_in_base_url_is_redacted_like_the_key(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A gateway reached as ``https://user:pass@host/v1`` (httpx sends basic auth): the
    password was in the text of a connection error (which names the URL), of an error a
    server echoing it sent, and in the debug log of every request's URL."""
    password = "gw-PASSWORD-0123456789"
    address = server.url.removeprefix("http://")
    model = OpenAIChatModel("gpt-4o", api_key="", base_url=f"http://gw:{password}@{address}/v1")
    body = {"error": {"message": f"bad password {password}", "type": "invalid_request_error"}}
    with caplog.at_level(logging.DEBUG, logger="plait.models"):
        server.reply(Reply(401, json.dumps(body).encode()))
        echoed = call(model, False)
    assert server.last.headers["authorization"].startswith("Basic ")  # it went out
    assert password not in everything_said(echoed)
    assert "bad password [REDACTED]" in str(echoed)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "POST" in logged and password not in logged
    # Nothing listening: the error names the address, without the password.
    closed = OpenAIChatModel("gpt-4o", api_key="", base_url=f"http://gw:{password}@127.0.0.1:9/v1")
    refused = call(closed, False)
    assert refused.error_type == "connection_error"
    assert password not in everything_said(refused)
    assert "could not connect to http://gw:[REDACTED]@127.0.0.1:9/v1" in str(refused)


@pytest.mark.parametrize("name", list(failures(BARE_KEY)))
def test_a_tool_error_in_a_sqlite_checkpoint_does_not_carry_the_key(
    name: str, server: ReplayServer, tmp_path: Path
) -> None:
    provider, reply, streamed = failures(BARE_KEY)[name]
    expert = model_for(provider, server, BARE_KEY)

    @plait.tool
    def ask_expert(question: str) -> str:
        """Ask another model.

        Args:
            question: what to ask.
        """
        server.reply(reply())
        call_model = (
            (lambda: list(expert.stream([HumanMessage(question)])))
            if streamed
            else (lambda: expert.invoke([HumanMessage(question)]))
        )
        return str(call_model())

    db = tmp_path / "threads.db"
    agent = plait.create_agent(
        model=ScriptedChatModel(
            [AIMessage("", tool_calls=[ToolCall("ask_expert", {"question": "q"})]), "done"]
        ),
        tools=[ask_expert],
        checkpointer=f"sqlite:///{db}",
    )
    result = agent.invoke({"messages": [HumanMessage("go")]}, thread_id="t")
    tool_message = result.messages[2]
    assert tool_message.status == "error" and "REDACTED" in tool_message.text
    agent.close()
    for path in tmp_path.iterdir():
        assert BARE_KEY.encode() not in path.read_bytes(), path.name
    with sqlite3.connect(db) as connection:
        dump = "\n".join(connection.iterdump())
    assert "REDACTED" in dump and BARE_KEY not in dump


@pytest.mark.parametrize(
    "name",
    ["openai-stream-error", "anthropic-error-event", "openai-401", "responses-error-event"],
)
def test_plait_run_output_does_not_carry_the_key(
    name: str, server: ReplayServer, tmp_path: Path
) -> None:
    provider, reply, _ = failures(BARE_KEY)[name]
    for _ in range(12):  # the CLI may retry
        server.reply(reply())
    model = {
        "openai": "openai:gpt-4o",
        "openai-responses": "openai-responses:gpt-5",
        "anthropic": "anthropic:claude-sonnet-4-5",
    }[provider]
    agent = tmp_path / "agent.toml"
    agent.write_text(f'[agent]\nmodel = "{model}"\n', encoding="utf-8")
    env = outside_env()
    env.update(
        OPENAI_API_KEY=BARE_KEY,
        OPENAI_BASE_URL=server.url + "/v1",
        ANTHROPIC_API_KEY=BARE_KEY,
        ANTHROPIC_BASE_URL=server.url,
        PYTHONIOENCODING="utf-8",
        PLAIT_TRACE="1",
    )
    done = subprocess.run(
        [sys.executable, "-m", "plait.cli", "run", str(agent), "hello"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    assert server.requests, "the CLI never reached the server"
    assert BARE_KEY not in done.stdout + done.stderr
    assert "REDACTED" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"api_key": KEY.encode()}, "openai: api_key: expected a string or None, got a bytes"),
        ({"api_key": [KEY]}, "openai: api_key: expected a string or None, got a list"),
        ({"base_url": 5}, "openai: base_url: expected a URL or None, got 5"),
        (
            {"headers": {"Authorization": f"Bearer {KEY}".encode()}},
            "openai: headers: expected a mapping of header names to strings, got a dict "
            "with ['Authorization']",
        ),
        (
            {"headers": [("api-key", KEY)]},
            "openai: headers: expected a mapping of header names to strings, got a list",
        ),
    ],
)
def test_a_credential_of_the_wrong_type_is_refused_without_being_shown(
    given: dict[str, Any], words: str
) -> None:
    with pytest.raises(plait.ConfigError) as refused:
        OpenAIChatModel("gpt-4o", **{"api_key": "sk-test", **given})
    assert str(refused.value) == words
    assert KEY not in str(refused.value)
