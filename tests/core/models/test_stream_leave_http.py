"""Leaving a stream while the model is streaming its answer cancels that call: the
provider's HTTP response is closed (the server sees the client go long before it would
have sent its last token), the reader's ``break``/``close()`` does not wait for the
remaining tokens, and the thread holds what a cancelled step leaves - its input, no
partial answer - with the run continued by ``invoke(None, thread_id=...)``.

The server is a real loopback HTTP server speaking the Chat Completions streaming wire
format. After its first token it holds, as a model thinking would, until the test lets it
go (which the test never does before it has checked everything): only a stop that ends
the read in flight lets the client leave before then."""

from __future__ import annotations

import asyncio
import json
import select
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import plait
from plait.models.openai import OpenAIChatModel
from plait.testing import transcript

HOLD = 120.0
"""How long the server holds after its first token at most: what a client that does not
stop the read in flight would wait, beyond the tests' bound on a close (``_close_within``)."""


class SlowServer:
    """Streams ``first`` then, after a hold, ``rest`` token by token; records each token
    sent, the client's disconnect (seen as EOF on the socket, or a failed write) and a
    stream sent to its end. Replies after the first answer at once."""

    def __init__(
        self, first: str, rest: list[str], later: str, *, slow_headers: bool = False
    ) -> None:
        self.sent: list[str] = []
        self.slow_headers = slow_headers
        """Hold the first request's headers instead (a provider that has not started to
        answer), streamed or not."""
        self.sent_headers = False
        self.requests = 0
        self.arrived = threading.Event()
        self.disconnected = threading.Event()
        self.finished = threading.Event()
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests += 1
                server.arrived.set()
                if server.slow_headers and server.requests == 1:
                    if self.client_left(HOLD, server.release):
                        return
                    server.sent_headers = True
                if not body.get("stream"):  # invoke: the whole answer as JSON
                    self.answer(later)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                if server.requests > 1:
                    self.event(later, finish=True)
                    self.done()
                    return
                try:
                    self.event(first)
                    server.sent.append(first)
                    if self.client_left(HOLD, server.release):
                        return
                    for token in rest:
                        self.event(token)
                        server.sent.append(token)
                        if self.client_left(0.01):
                            return
                    self.event("", finish=True)
                    self.done()
                    server.finished.set()
                except OSError:  # a write to a client that left
                    server.disconnected.set()

            def answer(self, text: str) -> None:
                message = {"role": "assistant", "content": text}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                data = json.dumps({"id": "c2", "object": "chat.completion", "choices": [choice]})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

            def event(self, text: str, *, finish: bool = False) -> None:
                choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
                if finish:
                    choice["finish_reason"] = "stop"
                chunk = {"id": "c1", "object": "chat.completion.chunk", "choices": [choice]}
                self.chunk(f"data: {json.dumps(chunk)}\n\n".encode())

            def done(self) -> None:
                self.chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def client_left(self, seconds: float, release: threading.Event | None = None) -> bool:
                """Wait up to ``seconds`` (or until ``release``), watching the socket:
                readable with nothing to read is the client's FIN."""
                waited = 0.0
                while waited < seconds and not (release is not None and release.is_set()):
                    readable, _, _ = select.select([self.connection], [], [], 0.01)
                    if readable and not self.connection.recv(1, 0):
                        server.disconnected.set()
                        return True
                    waited += 0.01
                return False

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def slow() -> Iterator[SlowServer]:
    server = SlowServer("Once ", [f"w{i} " for i in range(100)], "Resumed answer.")
    yield server
    server.close()


@pytest.fixture
def unanswered() -> Iterator[SlowServer]:
    """A provider that has not started to answer: it holds the first request's headers."""
    server = SlowServer("Once ", ["upon a time."], "Resumed answer.", slow_headers=True)
    yield server
    server.close()


class Announce(plait.Middleware):
    """Writes a custom event as the model call starts, before the provider answers (a
    status line a UI shows): a reader can leave while the call waits for the provider."""

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        request.runtime.stream_writer("calling the model")
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        request.runtime.stream_writer("calling the model")
        return await handler(request)


class RetryOnError(plait.Middleware):
    """Calls the model again when its call raises an error, as a retry middleware does: a
    cancelled call is not an error, so it is not retried."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(request)
        except Exception as exc:
            self.errors.append(exc)
            return handler(request)


def _agent(server: SlowServer, *middleware: plait.Middleware) -> plait.Agent:
    model = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test", base_url=server.url + "/v1")
    return plait.create_agent(model, checkpointer="memory", middleware=list(middleware))


def _close_within(close: Any, seconds: float = 30) -> None:
    """Run ``close`` in a thread and wait at most ``seconds`` (only against a hang)."""
    closer = threading.Thread(target=close)
    closer.start()
    closer.join(seconds)
    assert not closer.is_alive(), "close() did not return"


def test_break_on_the_first_token_closes_the_http_stream_and_saves_no_partial_answer(
    slow: SlowServer,
) -> None:
    retry = RetryOnError()
    agent = _agent(slow, retry)
    stream = agent.stream("tell me a story", thread_id="t", stream_mode="messages")
    for token, meta in stream:
        assert (token.content, meta["langgraph_node"]) == ("Once ", "model")
        break
    _close_within(stream.close)
    # close() returned while the server was still holding the rest of the answer: it did
    # not wait for the remaining tokens, and the server saw the client go
    assert slow.disconnected.wait(10)
    assert not slow.release.is_set() and not slow.finished.is_set()
    assert slow.sent == ["Once "]
    assert stream.result is None
    assert (retry.errors, slow.requests) == ([], 1)  # cancelled, not failed: no retry
    # the cancelled call's partial answer is not saved: the thread holds the input, and
    # continuing the run calls the model again
    assert transcript(agent.get_state("t")["messages"]) == [("human", "tell me a story")]
    assert agent.invoke(None, thread_id="t").text == "Resumed answer."
    assert transcript(agent.get_state("t")["messages"]) == [
        ("human", "tell me a story"),
        ("ai", "Resumed answer."),
    ]
    assert slow.requests == 2


def test_a_stream_dropped_after_break_stops_the_call_and_frees_the_thread(
    slow: SlowServer,
) -> None:
    """The plain ``for ...: break`` form: the stream is dropped there, in the reader's
    thread, and the drop waits for the cancelled call to end - not for its tokens."""
    agent = _agent(slow)
    left = threading.Event()

    def read() -> None:
        for token, _ in agent.stream("tell me a story", thread_id="t", stream_mode="messages"):
            assert token.content == "Once "
            break
        left.set()

    _close_within(read)
    # the server sees the client go when its next write fails: in its own thread, a moment later
    assert left.is_set() and slow.disconnected.wait(10)
    assert not slow.finished.is_set()
    # the thread takes new input at once
    assert agent.invoke("again", thread_id="t").text == "Resumed answer."
    assert transcript(agent.get_state("t")["messages"]) == [
        ("human", "tell me a story"),
        ("human", "again"),
        ("ai", "Resumed answer."),
    ]


def test_astream_aclose_on_the_first_token_closes_the_http_stream(slow: SlowServer) -> None:
    agent = _agent(slow)

    async def scenario() -> None:
        stream = agent.astream("tell me a story", thread_id="t", stream_mode="messages")
        async for token, _ in stream:
            assert token.content == "Once "
            break
        await asyncio.wait_for(stream.aclose(), 30)
        assert slow.disconnected.wait(10)
        assert not slow.release.is_set() and not slow.finished.is_set()
        assert transcript(agent.get_state("t")["messages"]) == [("human", "tell me a story")]
        assert (await agent.ainvoke(None, thread_id="t")).text == "Resumed answer."

    asyncio.run(scenario())


def test_astream_dropped_on_the_first_token_stops_the_call_as_the_sync_stream_does(
    slow: SlowServer,
) -> None:
    agent = _agent(slow)

    async def scenario() -> None:
        async for token, _ in agent.astream(
            "tell me a story", thread_id="t", stream_mode="messages"
        ):
            assert token.content == "Once "
            break
        # dropped without aclose(): the run's task stops the call and ends on its own
        assert await asyncio.to_thread(slow.disconnected.wait, 10)
        assert not slow.release.is_set() and not slow.finished.is_set()
        for _ in range(1000):
            try:
                result = await agent.ainvoke(None, thread_id="t")
                break
            except plait.errors.ThreadBusyError:
                await asyncio.sleep(0.01)
        assert result.text == "Resumed answer."
        assert transcript(agent.get_state("t")["messages"]) == [
            ("human", "tell me a story"),
            ("ai", "Resumed answer."),
        ]

    asyncio.run(scenario())


# -- a provider that has not started to answer ----------------------------------------------


@pytest.mark.parametrize(
    ("modes", "streamed"),
    [(["messages", "custom"], True), (["updates", "custom"], False)],
    ids=["streamed-call", "unstreamed-call"],
)
def test_leaving_before_the_provider_answers_stops_the_call_and_saves_nothing(
    unanswered: SlowServer, modes: list[str], streamed: bool
) -> None:
    """The provider holds its response headers far beyond the close bound: the break
    shuts the connection at once, whether the call streams tokens (``messages`` mode) or
    asks for the whole answer (without ``messages`` mode the model is not streamed), and
    the call ends as cancelled, as when its tokens were streaming."""
    retry = RetryOnError()
    agent = _agent(unanswered, Announce(), retry)
    stream = agent.stream("tell me a story", thread_id="t", stream_mode=modes)
    for mode, data in stream:
        assert (mode, data) == ("custom", "calling the model")
        assert unanswered.arrived.wait(10)  # the request is at the provider, unanswered
        break
    _close_within(stream.close)
    assert unanswered.disconnected.wait(10)
    assert not unanswered.release.is_set() and not unanswered.sent_headers
    assert stream.result is None
    assert (retry.errors, unanswered.requests) == ([], 1)  # cancelled, not failed
    assert transcript(agent.get_state("t")["messages"]) == [("human", "tell me a story")]
    assert agent.invoke(None, thread_id="t").text == "Resumed answer."
    assert transcript(agent.get_state("t")["messages"]) == [
        ("human", "tell me a story"),
        ("ai", "Resumed answer."),
    ]
    assert unanswered.requests == 2


def test_close_from_another_thread_stops_a_call_the_provider_has_not_answered(
    unanswered: SlowServer,
) -> None:
    """A server whose client went away closes the stream its request handler is reading
    (blocked in ``next()``, waiting for the first token): the call stops at once and the
    reader's loop ends."""
    agent = _agent(unanswered)
    stream = agent.stream("tell me a story", thread_id="t", stream_mode="messages")
    got: list[Any] = []

    def read() -> None:
        try:
            got.extend(stream)
        except BaseException as exc:  # what the reader sees is checked below
            got.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert unanswered.arrived.wait(10)
    _close_within(stream.close)
    assert unanswered.disconnected.wait(10)
    reader.join(30)
    assert not reader.is_alive()
    assert got == []  # the reader's loop ended, with no token and no error
    assert not unanswered.sent_headers
    assert transcript(agent.get_state("t")["messages"]) == [("human", "tell me a story")]
    assert agent.invoke(None, thread_id="t").text == "Resumed answer."


@pytest.mark.parametrize("modes", [["messages", "custom"], ["updates", "custom"]])
def test_astream_dropped_before_the_provider_answers_stops_the_call(
    unanswered: SlowServer, modes: list[str]
) -> None:
    """The async form: the dropped stream cancels the call's task, which closes the
    connection the provider has not answered on."""
    agent = _agent(unanswered, Announce())

    async def scenario() -> None:
        async for mode, data in agent.astream("tell me a story", thread_id="t", stream_mode=modes):
            assert (mode, data) == ("custom", "calling the model")
            assert await asyncio.to_thread(unanswered.arrived.wait, 10)
            break
        assert await asyncio.to_thread(unanswered.disconnected.wait, 10)
        assert not unanswered.release.is_set() and not unanswered.sent_headers
        for _ in range(1000):
            try:
                result = await agent.ainvoke(None, thread_id="t")
                break
            except plait.errors.ThreadBusyError:
                await asyncio.sleep(0.01)
        assert result.text == "Resumed answer."
        assert transcript(agent.get_state("t")["messages"]) == [
            ("human", "tell me a story"),
            ("ai", "Resumed answer."),
        ]
        assert unanswered.requests == 2

    asyncio.run(scenario())
