"""Nothing is served without its guards: bearer keys (on loopback too once configured),
threads owned by the key that made them, CORS closed unless origins are listed, bounded
bodies, JSON errors that carry no stack trace or provider key, and ``plait serve``
refusing to listen off loopback without keys."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import SUPPORT, Served, approve, parse_sse, post_sse, run_input

import plait
import plait_serve
from plait.errors import ConfigError, ProviderError

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef"


def error_of(response: httpx.Response) -> dict[str, str]:
    """The one JSON error a 4xx carries (and nothing a client should not see)."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    message = body["error"]["message"]
    assert message and "\n" not in message and "Traceback" not in message
    return dict(body["error"])


def test_with_keys_every_request_needs_one_on_loopback_too(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[ALICE])
    with served.client() as anonymous, served.client("wrong-key-0123456789abc") as wrong:
        for client in (anonymous, wrong):
            response = client.post("/ag-ui", json=run_input("t", "r", "hi"))
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert error_of(response)["code"] == "unauthorized"
        assert anonymous.get("/healthz").json() == {"ok": True, "agent": support.name}
    with served.client(ALICE) as alice:
        events = post_sse(alice, "/ag-ui", run_input("t", "r", "Where is order 2077?"))
    assert events[-1][1]["type"] == "RUN_FINISHED"


def test_a_key_cannot_see_resume_follow_or_cancel_another_keys_thread(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    served = serve(support, keys=[ALICE, BOB])
    stored = plait_serve.scoped_thread_id(ALICE, "alices")  # two keys: each has its own ids
    with served.client(ALICE) as alice, served.client(BOB) as bob:
        events = post_sse(alice, "/ag-ui", run_input("alices", "r1", "Refund order 1042."))
        interrupt = events[-1][1]["outcome"]["interrupts"][0]
        before = support.get_state(stored)
        # Alice's thread is not Bob's: he is answered as for an id nobody used.
        for thread in ("alices", "unused"):
            resume = bob.post(
                "/ag-ui", json=run_input(thread, "r2", resume=approve(interrupt["id"]))
            )
            assert resume.status_code == 409
            assert error_of(resume) == {
                "code": "resume_refused",
                "message": f"thread {thread!r} has no pending interrupt to resume",
            }
            for response in (
                bob.get(f"/ag-ui/threads/{thread}/stream?since=0"),
                bob.get(f"/plait/threads/{thread}/events"),
                bob.post(f"/plait/threads/{thread}/cancel"),
            ):
                assert response.status_code == 404
                assert error_of(response) == {
                    "code": "not_found",
                    "message": f"thread {thread!r} not found",
                }
        assert support.get_state(stored) == before
        # The owner still can.
        resumed = post_sse(
            alice, "/ag-ui", run_input("alices", "r2", resume=approve(interrupt["id"]))
        )
    assert support.get_state(stored) != before
    assert resumed[-1][1]["result"] == "Refunded 25.00 EUR for order 1042."
    assert support.list_threads() == [stored]


def test_a_thread_made_outside_the_server_is_not_served_to_a_key(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    support.invoke("Where is order 2077?", thread_id="local-only")
    with serve(support, keys=[ALICE]).client(ALICE) as alice:
        response = alice.post("/ag-ui", json=run_input("local-only", "r1", "And 1042?"))
    assert response.status_code == 404


def test_cors_is_closed_unless_origins_are_listed(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    preflight = {
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    with serve(support).client() as closed:
        response = closed.options("/ag-ui", headers=preflight)
        assert "access-control-allow-origin" not in response.headers
        error_of(response)
    listed = serve(plait_serve_agent(), cors_origins=["https://app.example.com"])
    with listed.client() as client:
        allowed = client.options("/ag-ui", headers=preflight)
        other = client.options("/ag-ui", headers={**preflight, "Origin": "https://evil.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "access-control-allow-origin" not in other.headers
    with pytest.raises(ConfigError, match="expected explicit origins"):
        plait_serve.app(plait_serve_agent(), cors_origins=["*"])


def test_a_refused_cors_preflight_is_a_json_error(serve: Callable[..., Served]) -> None:
    """Errors are JSON for every 4xx: a preflight from an origin not listed, or asking
    for a header not allowed, too."""
    listed = serve(plait_serve_agent(), cors_origins=["https://app.example.com"])
    preflight = {
        "Origin": "https://evil.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    with listed.client() as client:
        origin = client.options("/v1/chat/completions", headers=preflight)
        header = client.options(
            "/v1/chat/completions",
            headers={
                **preflight,
                "Origin": "https://app.example.com",
                "Access-Control-Request-Headers": "x-custom",
            },
        )
    assert origin.status_code == 400
    assert origin.json() == {
        "error": {
            "code": "cors_refused",
            "message": "CORS preflight refused: origin not allowed (the allowed origins "
            "are those given with --cors-origin)",
        }
    }
    assert "access-control-allow-origin" not in origin.headers
    assert header.status_code == 400
    assert header.json()["error"]["message"].startswith(
        "CORS preflight refused: headers not allowed"
    )
    assert header.headers["access-control-allow-origin"] == "https://app.example.com"


def plait_serve_agent() -> plait.Agent:
    from plait.agentfile import load_agent

    return load_agent(SUPPORT)


def test_keys_are_checked_when_the_app_is_built(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="expected API keys of at least 16 characters, got one of 5"
    ):
        plait_serve.app(plait_serve_agent(), keys=["short"])
    keys = tmp_path / "keys"
    keys.write_text(f"# the team's keys\n{ALICE}\n\n{BOB}  # bob\n")
    assert plait_serve.load_keys(keys_file=keys, environ={}) == (ALICE, BOB)
    assert plait_serve.load_keys(environ={"PLAIT_SERVE_KEYS": f"{ALICE}, {BOB}"}) == (ALICE, BOB)
    with pytest.raises(ConfigError, match=r"keys file .* cannot be read"):
        plait_serve.load_keys(keys_file=tmp_path / "missing", environ={})


def test_a_failed_run_reports_no_stack_trace_and_no_provider_key(
    serve: Callable[..., Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_LLM_API_KEY", "acme-secret-value-42")

    def echoed(messages: Any, tools: Any) -> Any:
        raise ProviderError("bad key acme-secret-value-42 for acme", status_code=401)

    def leaky(messages: Any, tools: Any) -> Any:
        raise ProviderError(
            "Incorrect API key provided: sk-proj-abcdef1234567890XYZ", status_code=401
        )

    def crash(messages: Any, tools: Any) -> Any:
        raise RuntimeError("internal detail /srv/app/secret.py line 3")

    for script, message, code in [
        (leaky, "Incorrect API key provided: [REDACTED]", "ProviderError"),
        (crash, "the run failed with an internal error (RuntimeError)", "internal_error"),
        (echoed, "bad key [REDACTED] for acme", "ProviderError"),
    ]:
        agent = plait.create_agent(plait.ScriptedChatModel([script]), checkpointer="memory")
        with serve(agent).client() as client:
            events = post_sse(client, "/ag-ui", run_input("e", "r1", "hi"))
        error = events[-1][1]
        assert error["type"] == "RUN_ERROR"
        assert error["message"] == message and error["code"] == code


# -- 200 malformed requests -----------------------------------------------------------------


def malformed(rng: random.Random, max_body: int) -> list[tuple[str, str, dict[str, Any]]]:
    """``(method, path, httpx request kwargs)`` for 200 requests a server must refuse."""
    alice = {"Authorization": f"Bearer {ALICE}"}
    bob = {"Authorization": f"Bearer {BOB}"}
    raw = {**alice, "Content-Type": "application/json"}
    bad_json = [b"{", b"nul", b"\xff\xfe{}", b'{"threadId": "x",}', b"[" * 100_000, b""]
    wrong_types: list[Any] = [
        [],
        "a string",
        42,
        None,
        {"threadId": 7, "runId": "r", "messages": []},
        {"threadId": "owned", "runId": "r", "messages": "hi"},
        {"threadId": "owned", "messages": []},
        {"threadId": "owned", "runId": "r", "messages": [{"role": "user"}]},
        {
            "threadId": "owned",
            "runId": "r",
            "messages": [{"id": "u", "role": "wizard", "content": "x"}],
        },
        {"threadId": "", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "x"}]},
        {"threadId": "x" * 300, "runId": "r", "messages": []},
        {"threadId": "owned", "runId": "r", "messages": [], "resume": "yes"},
        {"threadId": "owned", "runId": "r", "messages": []},  # nothing new to run
        {
            "threadId": "owned",
            "runId": "r",
            "messages": [],
            "resume": [{"interruptId": "nope", "status": "resolved"}],
        },
    ]
    requests: list[tuple[str, str, dict[str, Any]]] = []
    for index in range(200):
        kind = index % 10
        if kind == 0:
            requests.append(("POST", "/ag-ui", {"content": rng.choice(bad_json), "headers": raw}))
        elif kind in (1, 2):
            requests.append(("POST", "/ag-ui", {"json": rng.choice(wrong_types), "headers": alice}))
        elif kind == 3:
            thread = f"unknown-{rng.randrange(10**6)}"
            path = rng.choice(
                [f"/ag-ui/threads/{thread}/stream", f"/plait/threads/{thread}/events"]
            )
            requests.append(("GET", path, {"headers": alice}))
        elif kind == 4:
            requests.append(("POST", f"/plait/threads/unknown-{index}/cancel", {"headers": alice}))
        elif kind == 5:
            size = max_body + 1 + rng.randrange(1000)
            requests.append(
                ("POST", "/ag-ui", {"content": b"{" + b" " * size + b"}", "headers": raw})
            )
        elif kind == 6:
            key = rng.choice(["", "Bearer", f"Bearer {ALICE}x", f"Basic {ALICE}", "Bearer wrong"])
            headers = {"Authorization": key} if key else {}
            body = run_input("owned", "r", "Refund order 2077.")
            requests.append(("POST", "/ag-ui", {"json": body, "headers": headers}))
        elif kind == 7:
            body = run_input("owned", "r9", resume=approve("whatever"))
            requests.append(("POST", "/ag-ui", {"json": body, "headers": bob}))
        elif kind == 8:
            since = rng.choice(["-1", "abc", "1.5", "9" * 30])
            requests.append(
                (
                    "GET",
                    "/ag-ui/threads/owned/stream",
                    {"headers": {**alice, "Last-Event-ID": since}},
                )
            )
        else:
            requests.append(
                rng.choice(
                    [
                        ("GET", "/ag-ui", {"headers": alice}),
                        ("DELETE", "/ag-ui", {"headers": alice}),
                        ("GET", "/no/such/path", {"headers": alice}),
                        (
                            "POST",
                            "/ag-ui",
                            {
                                "json": run_input(
                                    "owned",
                                    "r",
                                    resume=approve("x", {"type": "approve", "approved": True}),
                                ),
                                "headers": alice,
                            },
                        ),
                    ]
                )
            )
    return requests


def snapshot(agent: plait.Agent) -> dict[str, Any]:
    log = agent.checkpointer
    assert log is not None
    return {
        thread: (agent.get_state(thread), log.last_event(thread))  # type: ignore[attr-defined]
        for thread in agent.list_threads()
    } | {"threads": agent.list_threads()}


def test_200_malformed_requests_get_one_clear_4xx_each_and_change_no_thread(
    serve: Callable[..., Served], support: plait.Agent
) -> None:
    max_body = 20_000
    served = serve(support, keys=[ALICE, BOB], max_body=max_body)
    with served.client(ALICE) as alice:
        post_sse(alice, "/ag-ui", run_input("owned", "r1", "Refund order 1042."))
    before = snapshot(support)
    requests = malformed(random.Random(31), max_body)
    statuses: dict[int, int] = {}
    with httpx.Client(base_url=served.url, timeout=20) as client:
        for method, path, kwargs in requests:
            response = client.request(method, path, **kwargs)
            error = error_of(response)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert error["code"] in {
                "invalid_json",
                "invalid_request",
                "not_found",
                "body_too_large",
                "unauthorized",
                "invalid_since",
                "method_not_allowed",
                "resume_refused",
            }, error
    assert len(requests) == 200
    assert set(statuses) >= {400, 401, 404, 405, 409, 413, 422}
    assert snapshot(support) == before


# -- plait serve ----------------------------------------------------------------------------


def plait_serve_process(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "plait", "serve", str(SUPPORT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def test_plait_serve_refuses_to_listen_off_loopback_without_keys() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_SERVE_KEYS"}
    done = subprocess.run(
        [sys.executable, "-m", "plait", "serve", str(SUPPORT), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "plait serve: error: refusing to serve on 0.0.0.0 without API keys: set "
        "PLAIT_SERVE_KEYS or pass --keys-file (each key owns the threads it makes)\n"
    )


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_plait_serve_serves_the_agent_file_with_keys_from_the_environment() -> None:
    port = free_port()
    process = plait_serve_process("--port", str(port), env={"PLAIT_SERVE_KEYS": ALICE})
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "plait serve did not start"
                time.sleep(0.1)
        with httpx.Client(base_url=url, timeout=20) as client:
            assert client.post("/ag-ui", json=run_input("t", "r", "hi")).status_code == 401
            client.headers["Authorization"] = f"Bearer {ALICE}"
            events = post_sse(client, "/ag-ui", run_input("t", "r", "Refund order 1042."))
        assert events[-1][1]["outcome"]["type"] == "interrupt"
        assert json.dumps(events).count("issue_refund") >= 1
    finally:
        process.terminate()
        _, err = process.communicate(timeout=20)
    assert "API keys required" in err and ALICE not in err


def test_runs_beyond_the_limit_are_refused_with_429(serve: Callable[..., Served]) -> None:
    import threading

    gate = threading.Event()

    def wait() -> str:
        """Wait for the gate."""
        gate.wait(20)
        return "open"

    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("wait", {})]), "done"] * 3
    )
    agent = plait.create_agent(model, tools=[wait], checkpointer="memory")
    served = serve(agent, max_runs=1)
    try:
        with served.client() as client:
            with client.stream("POST", "/ag-ui", json=run_input("one", "r1", "go")) as response:
                for text in response.iter_text():
                    if "TOOL_CALL_END" in text:
                        break
            refused = client.post("/ag-ui", json=run_input("two", "r1", "go"))
    finally:
        gate.set()
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert error_of(refused)["code"] == "too_many_runs"
    assert "two" not in agent.list_threads()
    with pytest.raises(ConfigError, match="max_runs: expected a positive int, got 0"):
        plait_serve.app(agent, max_runs=0)


def test_a_key_cannot_cancel_another_keys_run_with_multitask_interrupt(
    serve: Callable[..., Served],
) -> None:
    """``multitask_strategy="interrupt"`` cancels the run going on in a thread: only in
    the caller's own. With ``if_not_exists="create"`` Bob's run request on Alice's
    thread cancelled her run before it was refused; now Bob's ``alices`` is his own
    thread, where his run goes on beside hers."""
    import threading

    gate = threading.Event()

    def wait() -> str:
        """Wait for the gate."""
        gate.wait(20)
        return "open"

    def brain(messages: list[Any], tools: Any) -> plait.AIMessage:
        if messages[-1].text == "go":
            return plait.AIMessage("", tool_calls=[plait.ToolCall("wait", {})])
        return plait.AIMessage("done" if messages[-1].type == "tool" else "hello Bob")

    model = plait.ScriptedChatModel([brain] * 3)
    agent = plait.create_agent(model, tools=[wait], checkpointer="memory")
    served = serve(agent, keys=[ALICE, BOB])
    try:
        with served.client(ALICE) as alice, served.client(BOB) as bob:
            with alice.stream("POST", "/ag-ui", json=run_input("alices", "r1", "go")) as response:
                for text in response.iter_text():
                    if "TOOL_CALL_END" in text:
                        break
            attack = bob.post(
                "/threads/alices/runs",
                json={
                    "input": {"messages": [{"role": "user", "content": "hi"}]},
                    "multitask_strategy": "interrupt",
                    "if_not_exists": "create",
                },
            )
            assert attack.status_code == 200, attack.text
            assert attack.json()["thread_id"] == "alices"
            bobs = bob.get("/plait/threads/alices/events?follow=run")
            gate.set()
            log = alice.get("/plait/threads/alices/events?follow=run")
    finally:
        gate.set()
    ends = [event for _, event in parse_sse(log.text) if event["type"] == "run_finished"]
    # Alice's run went on to its answer: nothing of Bob's cancelled it.
    assert [event["status"] for event in ends] == ["success"], ends
    hers = agent.get_state(plait_serve.scoped_thread_id(ALICE, "alices"))["messages"]
    assert [m.text for m in hers] == ["go", "", "open", "done"]
    (his,) = [event for _, event in parse_sse(bobs.text) if event["type"] == "run_finished"]
    assert his["status"] == "success" and his["text"] == "hello Bob"


def test_a_web_page_of_another_site_cannot_drive_a_server(serve: Callable[..., Served]) -> None:
    """CORS only hides the answer from a page: a "simple" cross-site request (``fetch``
    with ``mode: "no-cors"``, a ``text/plain`` body) is sent all the same, and started a
    run of a keyless loopback server (``plait dev``), its tools included. A name that
    rebinds to 127.0.0.1 made the attacker's page same-origin and could read threads."""
    ran: list[str] = []

    def write_note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return "written"

    model = plait.ScriptedChatModel(
        [plait.AIMessage("", tool_calls=[plait.ToolCall("write_note", {"text": "pwned"})]), "ok"]
    )
    agent = plait.create_agent(model, tools=[write_note], checkpointer="memory")
    served = serve(agent, cors_origins=["https://app.example.com"])
    body = json.dumps(run_input("x", "r1", "write pwned"))
    simple = {"Content-Type": "text/plain;charset=UTF-8"}
    with served.client() as client:
        for origin in ("https://evil.example", "null", "http://127.0.0.1.evil.example"):
            refused = client.post("/ag-ui", content=body, headers={**simple, "Origin": origin})
            assert refused.status_code == 403
            assert error_of(refused)["code"] == "origin_refused"
        rebound = client.get("/threads/x/state", headers={"Host": "evil.example:8000"})
        assert rebound.status_code == 403
        assert error_of(rebound)["code"] == "host_refused"
        assert ran == [] and "x" not in agent.list_threads()
        # The server's own page (plait dev), a listed origin and a client that is no
        # browser (no Origin) are served.
        port = served.url.rpartition(":")[2]
        for headers in (
            {"Origin": served.url},
            {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
            {"Origin": "https://app.example.com"},
            {},
        ):
            answer = client.get("/healthz", headers=headers)
            assert answer.status_code == 200, (headers, answer.text)
        events = post_sse(client, "/ag-ui", run_input("x", "r1", "write pwned"))
    assert events[-1][1]["type"] == "RUN_FINISHED" and ran == ["pwned"]
    # With keys a page cannot present one: any host name is served to a key.
    keyed = serve(plait_serve_agent(), keys=[ALICE])
    with keyed.client(ALICE) as alice:
        assert alice.get("/healthz", headers={"Host": "agent.example.com"}).status_code == 200
        assert (
            alice.get("/threads/none/state", headers={"Host": "agent.example.com"}).status_code
            == 404
        )


def test_a_client_cannot_reset_its_threads_budget_through_the_state(
    serve: Callable[..., Served],
) -> None:
    """A limit's counts (``model_call_limit_thread``...), pii's table and a review's
    edits are the middleware's own: ``POST /threads/{id}/state`` wrote them, and a
    client got past its thread's model call limit by setting the count back to 0."""
    model = plait.ScriptedChatModel(["one", "two", "three"])
    agent = plait.create_agent(
        model,
        checkpointer="memory",
        middleware=[
            ("model_call_limit", {"thread_limit": 1}),
            ("usage_limit", {"thread_limit": {"total_tokens": 100_000}}),
            ("tool_call_limit", {"thread_limit": 5}),
            ("human_in_the_loop", {"interrupt_on": {}}),
            ("pii", {"pii_type": "email", "strategy": "pseudonymize"}),
        ],
    )
    served = serve(agent, keys=[ALICE])
    with served.client(ALICE) as alice:
        first = post_sse(alice, "/ag-ui", run_input("x", "r1", "hi"))
        assert first[-1][1]["result"] == "one"
        for values in (
            {"model_call_limit_thread": {"calls": 0}},
            {"usage_limit_thread": {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}},
            {"tool_call_limit_thread": {}},
            {"human_in_the_loop_edits": {"c1": {"name": "x", "args": {}}}},
            {"pii_pseudonyms": {"email": {"eve@example.com": 1}}},
            {"messages": [{"role": "user", "content": "ok"}], "model_call_limit_run": {}},
        ):
            refused = alice.post("/threads/x/state", json={"values": values})
            assert refused.status_code == 422, (values, refused.text)
            assert error_of(refused)["message"].endswith(
                "is kept by the agent's middleware (a limit's counts, pii's table, a "
                "review's edits): a client cannot write it"
            )
        assert agent.get_state("x")["model_call_limit_thread"] == {"calls": 1}
        again = post_sse(alice, "/ag-ui", run_input("x", "r2", "again"))
        assert again[-1][1]["result"].startswith("Model call limit reached: thread limit (1/1)")
        # messages (and keys no middleware keeps) are still a client's to write
        ok = alice.post("/threads/x/state", json={"values": {"messages": ["a note"]}})
        assert ok.status_code == 200, ok.text
    assert len(model.requests) == 1
